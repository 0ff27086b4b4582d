"""The ``remote`` kind: a local agent that forwards every turn to another A2A agent.

``--agent 'weather=remote?url=https://host/a2a/weather'``, or in hub.toml::

    [[agents]]
    id = "weather"
    kind = "remote"
    options = { url = "https://host/a2a/weather", api_key = "…", headers = { x-team = "a" } }

It speaks to the remote through :class:`~a2a_hub.client.A2AClient`, so any A2A version
works (``transport`` forces one).  Per local conversation it keeps one remote
``contextId``; it sends the remote ``taskId`` only while the remote task waits for input
(``input-required``/``auth-required``) and forgets it once that task has ended, so the next
message starts a new remote task in the same remote context.  Both ids travel in the
metadata of the local agent's messages (``a2a-hub/remote``), so they survive restarts.

A remote question becomes the local task's own ``input-required`` (or ``auth-required``)
with the remote's message; the client's answer goes back to the same remote task.  When
the remote card allows streaming, the remote's events are followed as they happen and
its artifact chunks and progress messages pass through at once; otherwise the message is
sent non-blocking and the task polled.  Cancelling the local task cancels the remote one,
while a turn runs (``cancel``) and while both wait for input (``cancel_waiting``).
OAuth 2: with ``client_id``, ``client_secret`` and ``token_url`` (optional ``scope``,
``audience``) every request to the remote carries a client-credentials bearer token,
kept until shortly before it expires (:class:`~a2a_hub.client.oauth.ClientCredentials`).
``connect_timeout`` bounds connecting (seconds, default 10), ``timeout`` a whole turn
(default 300); a remote failure, or a timeout, fails the local task with the reason.

Trust: ``card_signature = "off" | "verify-if-present" | "require"`` checks the remote
card's signature against ``card_keys`` (a JWKS URL or file) whenever the card is fetched:
when the agent is registered (:meth:`RemoteExecutor.admit`: the admin API and
``a2a-hub serve`` refuse it in one line), on connecting, and every ``card_refresh``
seconds (default 300) after.  Every request goes through the hub's outbound address
policy (:mod:`a2a_hub.netpolicy`); the URL's own host passes when the operator wrote it
in the hub's configuration, not when it came through the admin API or the registry.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from a2a_hub.agents._memo import recall, stamp
from a2a_hub.agents._options import unknown_options
from a2a_hub.agents.hops import CallDepthError, with_hop
from a2a_hub.agents.links import HubLinks
from a2a_hub.agents.peer import Outcome, PeerError, RemotePeer, run_turn
from a2a_hub.client import A2AClient, fetch_card, user_message
from a2a_hub.client.card import CardRefusedError
from a2a_hub.client.card_signature import CardCheck
from a2a_hub.client.oauth import ClientCredentials
from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_hub.netpolicy import guarded_http
from a2a_hub.protocol.errors import A2AError
from a2a_hub.protocol.types import Part, StreamResponse, Task, TaskState

__all__ = ["MEMO", "RemoteExecutor", "flag"]

log = logging.getLogger("a2a_hub.agents")

#: Metadata key of the remote ids on the local agent's messages.
MEMO = "a2a-hub/remote"


def flag(value: Any, default: bool = True) -> bool:
    """A boolean option given as a bool or as text (``true``/``false``/``auto``)."""
    if value is None or value == "" or value == "auto":
        return default
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


_ended = {
    TaskState.FAILED: "failed",
    TaskState.REJECTED: "rejected the task",
    TaskState.CANCELED: "canceled the task",
}


class RemoteExecutor(AgentExecutor):
    """Forwards to the A2A agent at ``url`` (see the module docstring)."""

    name = "Remote agent"
    description = "Forwards every message to another A2A agent and relays its answers."

    def __init__(
        self,
        url: str = "",
        headers: dict[str, str] | None = None,
        api_key: str | None = None,
        bearer: str | None = None,
        transport: str | None = None,
        connect_timeout: float | str = 10.0,
        timeout: float | str = 300.0,
        streaming: bool | str = "auto",
        card_signature: str = "off",
        card_keys: str | None = None,
        card_refresh: float | str = 300.0,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_url: str | None = None,
        scope: str | None = None,
        audience: str | None = None,
        links: HubLinks | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise unknown_options(type(self), RemoteExecutor, unknown)
        if not url:
            raise ValueError("kind 'remote' needs url = 'https://host/a2a/agent'")
        self.timeout = float(timeout)
        if self.timeout <= 0 or float(connect_timeout) <= 0:
            raise ValueError("timeout and connect_timeout must be positive numbers of seconds")
        links = links or HubLinks()
        self.links = links
        self.card_check = CardCheck(card_signature, card_keys)
        auth = None
        if client_id or client_secret or token_url:
            if not (client_id and client_secret and token_url):
                raise ValueError(
                    "kind 'remote': client credentials need client_id, client_secret and "
                    "token_url together"
                )
            auth = ClientCredentials(
                token_url, client_id, client_secret, scope=scope, audience=audience
            )
        self.peer = RemotePeer(
            url,
            headers=headers,
            api_key=api_key,
            bearer=bearer,
            transport=transport or None,
            connect_timeout=float(connect_timeout),
            streaming=flag(streaming),
            policy=links.outbound,
            trusted=links.configured,
            card_check=self.card_check,
            card_refresh=float(card_refresh),
            auth=auth,
        )
        self.description = f"Forwards every message to the A2A agent at {self.peer.url}."
        #: local task id → remote task id, while a turn runs (for cancel)
        self._running: dict[str, str | None] = {}
        #: local tasks being canceled (their turn ends canceled, whatever the remote says)
        self._canceling: set[str] = set()

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        url = self.peer.url
        memo = recall(await ctx.context_history(), MEMO) or {}
        if memo.get("url") != url:
            memo = {}
        remote_task: str | None = None
        if ctx.task is not None and ctx.task.status.message is not None:
            # continuing a local task that waits for input: the remote task waits too
            pending = recall([ctx.task.status.message], MEMO) or {}
            remote_task = pending.get("taskId") if pending.get("url") == url else None
        message = user_message(
            list(ctx.message.parts), context_id=memo.get("contextId"), task_id=remote_task
        )
        try:
            message = with_hop(message, ctx, f"the remote agent at {url}")
        except CallDepthError as exc:
            await updater.fail(str(exc))
            return
        await updater.start()
        self._running[ctx.task_id] = remote_task
        forwarded: set[str] = set()

        async def relay(event: StreamResponse, outcome: Outcome) -> None:
            self._running[ctx.task_id] = outcome.task_id
            if event.artifact_update is not None:
                chunk = event.artifact_update
                forwarded.add(chunk.artifact.artifact_id)
                art = chunk.artifact
                await updater.artifact(
                    art.parts,
                    name=art.name,
                    artifact_id=art.artifact_id,
                    append=chunk.append,
                    last_chunk=chunk.last_chunk,
                    description=art.description,
                    metadata=art.metadata,
                )
            elif event.status_update is not None:
                status = event.status_update.status
                if status.state is TaskState.WORKING and status.message is not None:
                    await updater.working(list(status.message.parts))

        try:
            async with asyncio.timeout(self.timeout):
                outcome = await run_turn(self.peer, message, on_event=relay)
        except TimeoutError:
            await self._cancel_remote(ctx.task_id)
            await updater.fail(
                f"the remote agent at {url} did not answer within {self.timeout:g} s"
            )
            return
        except PeerError as exc:
            await updater.fail(str(exc))
            return
        finally:
            self._running.pop(ctx.task_id, None)
            canceled = ctx.task_id in self._canceling
            self._canceling.discard(ctx.task_id)
        if canceled:
            return  # the engine ends the task canceled, whatever the remote said meanwhile
        await self._settle(outcome, updater, forwarded)

    async def _settle(self, outcome: Outcome, updater: TaskUpdater, forwarded: set[str]) -> None:
        url = self.peer.url
        state = outcome.state
        memo: dict[str, Any] = {"url": url, "contextId": outcome.context_id}
        for art in outcome.artifacts.values():
            if art.artifact_id in forwarded:
                continue  # a stream passed it on already
            await updater.artifact(
                art.parts,
                name=art.name,
                artifact_id=art.artifact_id,
                description=art.description,
                metadata=art.metadata,
            )
        parts = list(outcome.message.parts) if outcome.message is not None else []
        if state is not None and state.interrupted:
            memo["taskId"] = outcome.task_id
            question = updater.message(parts or [Part(text="The remote agent needs input.")])
            stamp(question, MEMO, memo)
            if state is TaskState.AUTH_REQUIRED:
                await updater.require_auth(question)
            else:
                await updater.require_input(question)
            return
        if state is not None and state.terminal and state is not TaskState.COMPLETED:
            said = outcome.reason or "no reason given"
            failure = updater.message(f"the remote agent at {url} {_ended[state]}: {said}")
            await updater.fail(stamp(failure, MEMO, memo))
            return
        answer = updater.message(parts or [Part(text=outcome.text or "(no answer)")])
        await updater.complete(stamp(answer, MEMO, memo))

    async def admit(self) -> None:
        """The checks of registration: the URL passes the outbound policy (unless the
        operator wrote it), and a card that can be fetched passes ``card_signature``.
        Raises ``ValueError`` saying why, in one line.  A remote that cannot be reached now
        is not refused: connecting checks it again."""
        peer = self.peer
        policy = self.links.outbound
        if policy is not None and not self.links.configured:
            await policy.check_url(peer.url, "remote agent URL")
        if not self.card_check.active:
            return
        async with guarded_http(
            policy, trusted=peer.trusted, what="remote agent URL", timeout=peer.connect_timeout
        ) as http:
            headers = A2AClient.auth_headers(peer.headers, api_key=peer.api_key, bearer=peer.bearer)
            try:
                await fetch_card(http, peer.url, headers, self.card_check)
            except CardRefusedError as exc:
                raise ValueError(f"refused the remote agent at {peer.url}: {exc}") from None
            except A2AError as exc:
                log.warning(
                    "the card of the remote agent at %s is checked later: %s", peer.url, exc
                )

    async def _cancel_remote(self, task_id: str) -> None:
        remote = self._running.get(task_id)
        if remote is not None:
            await self.peer.cancel(remote)

    async def close(self) -> None:
        """Close the connection to the remote agent."""
        await self.peer.close()

    async def cancel(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        """Cancel the remote task of the turn that is running."""
        self._canceling.add(ctx.task_id)
        await self._cancel_remote(ctx.task_id)

    async def cancel_waiting(self, task: Task) -> None:
        """A local task waiting for input was canceled: cancel the remote task waiting
        with it (its id is in the local question's metadata, so any instance can)."""
        pending = recall([task.status.message], MEMO) if task.status.message else None
        if pending and pending.get("url") == self.peer.url and pending.get("taskId"):
            await self.peer.cancel(str(pending["taskId"]))
