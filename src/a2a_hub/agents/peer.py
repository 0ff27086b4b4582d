"""Other agents an agent talks to: a hosted one (in process) or a remote one (over A2A).

A :class:`Peer` runs one *turn* — a message in, the events of the turn out — and can
cancel a task it started.  :class:`LocalPeer` goes straight to the engine of an agent
hosted by the same hub (no HTTP, no serialisation); :class:`RemotePeer` talks to any A2A
agent through :class:`~a2a_hub.client.A2AClient` (1.0 JSON-RPC or REST, 0.3, 0.1).  A
remote agent whose card allows streaming is streamed (events arrive as they happen);
one that does not is sent a new task's first message non-blocking and polled, so that
its task id is known at once and a cancel can reach it either way.

:func:`run_turn` drives a turn and folds its events into an :class:`Outcome`, handing
every event to a callback on the way (to pass chunks and progress through).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import msgspec

from a2a_hub.client.card import CardRefusedError, fetch_card
from a2a_hub.client.card_signature import CardCheck
from a2a_hub.engine.caller import ANONYMOUS, Caller
from a2a_hub.engine.executor import text_of
from a2a_hub.netpolicy import OutboundPolicy, guarded_http, host_of
from a2a_hub.protocol.errors import A2AError
from a2a_hub.protocol.types import (
    Artifact,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)

if TYPE_CHECKING:
    from a2a_hub.client import A2AClient
    from a2a_hub.engine.engine import TaskEngine

__all__ = [
    "LocalPeer",
    "Outcome",
    "Peer",
    "PeerError",
    "RemotePeer",
    "is_done",
    "run_turn",
]

log = logging.getLogger("a2a_hub.agents")


class PeerError(Exception):
    """A peer could not be reached or broke off; the message names it and says why."""


def is_done(parts: Sequence[Part]) -> bool:
    """True if a part is the data ``{"done": true}`` (the signal that ends a ``loop``)."""
    return any(isinstance(p.data, dict) and p.data.get("done") is True for p in parts)


@dataclass
class Outcome:
    """What one turn of a peer came to (built by :meth:`observe` from its events)."""

    task_id: str | None = None
    context_id: str | None = None
    state: TaskState | None = None
    #: The final status message of the turn, or the peer's direct reply.
    message: Message | None = None
    artifacts: dict[str, Artifact] = field(default_factory=dict)

    def observe(self, event: StreamResponse, *, settled: bool = False) -> None:
        """Fold one event; ``settled`` marks a whole task (a reply or a poll), whose
        artifacts then count (a stream's snapshot may hold earlier turns' artifacts)."""
        if event.task is not None:
            task = event.task
            self.task_id, self.context_id = task.id, task.context_id or self.context_id
            self.state = task.status.state
            if settled:
                self.message = task.status.message
                self.artifacts = {a.artifact_id: a for a in task.artifacts or []}
        elif event.message is not None:
            if event.message.role is Role.AGENT:
                self.message = event.message
                self.context_id = event.message.context_id or self.context_id
        elif event.status_update is not None:
            status = event.status_update
            self.task_id, self.context_id = status.task_id, status.context_id
            self.state = status.status.state
            if self.state.terminal or self.state.interrupted:
                self.message = status.status.message
        elif event.artifact_update is not None:
            chunk = event.artifact_update
            self.task_id, self.context_id = chunk.task_id, chunk.context_id
            new = chunk.artifact
            old = self.artifacts.get(new.artifact_id)
            if chunk.append and old is not None:
                new = msgspec.structs.replace(old, parts=[*old.parts, *new.parts])
            self.artifacts[new.artifact_id] = new

    @property
    def direct(self) -> bool:
        """True when the peer answered with a message and made no task."""
        return self.task_id is None and self.message is not None

    @property
    def parts(self) -> list[Part]:
        """The output: the artifacts' parts, else the final message's parts."""
        if self.artifacts:
            return [p for a in self.artifacts.values() for p in a.parts]
        return list(self.message.parts) if self.message is not None else []

    @property
    def text(self) -> str:
        """The output's text."""
        return text_of(self.parts)

    @property
    def reason(self) -> str:
        """The final message's text (why it failed, what it asks)."""
        return text_of(self.message.parts) if self.message is not None else ""

    @property
    def done(self) -> bool:
        """True if the output or the final message carries ``{"done": true}``."""
        return is_done(self.parts) or (self.message is not None and is_done(self.message.parts))


class Peer(ABC):
    """An agent this agent talks to (see the module docstring)."""

    #: How the peer is named in progress messages and artifacts.
    name: str

    @abstractmethod
    def turn(self, message: Message) -> AsyncIterator[tuple[StreamResponse, bool]]:
        """The events of the turn ``message`` starts, each with its ``settled`` flag."""

    @abstractmethod
    async def cancel(self, task_id: str) -> None:
        """Cancel a task of this peer (errors are logged, not raised)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


class LocalPeer(Peer):
    """An agent hosted by the same hub, reached through its engine in process."""

    def __init__(self, name: str, engine: TaskEngine, caller: Caller = ANONYMOUS) -> None:
        self.name = name
        self.engine = engine
        self.caller = caller

    async def turn(self, message: Message) -> AsyncIterator[tuple[StreamResponse, bool]]:
        stream = await self.engine.send_stream(
            SendMessageRequest(message=message), caller=self.caller
        )
        shown = ended = False
        try:
            async for record in stream:
                event = record.event
                if event.message is not None and event.message.role is Role.USER:
                    continue  # the message we sent, logged into the history
                shown = True
                yield event, False
            ended = True
        finally:
            stream.close()
            run = None if shown or ended else self.engine.live(stream.task_id)
            if run is not None:
                # abandoned (canceled, timed out) before the task was shown, which happens
                # only once it is written: the caller cannot name it to cancel it, so do it
                with contextlib.suppress(Exception):
                    await asyncio.shield(run.cancel())

    async def cancel(self, task_id: str) -> None:
        try:
            await self.engine.cancel_task(task_id, caller=self.caller)
        except A2AError as exc:
            log.info("cancel of task %s of agent %s: %s", task_id, self.name, exc)


class RemotePeer(Peer):
    """Any A2A agent at ``url``, through our client (any protocol version).

    ``headers``, ``api_key`` and ``bearer`` authenticate; ``transport`` forces one
    interface (``jsonrpc-1.0``, ``rest-1.0``, ``jsonrpc-0.3``, ``jsonrpc-0.1``);
    ``connect_timeout`` bounds connecting (and each plain request), ``streaming=False``
    forces the non-streaming mode (non-blocking send, then polling).

    ``policy`` (the hub's :class:`~a2a_hub.netpolicy.OutboundPolicy`) checks every
    request's host, card redirects included; ``trusted``: ``url``'s own host was named by
    the operator's configuration and passes unchecked.  ``card_check`` verifies the
    card's signature each time the card is fetched (on connecting, and when
    ``card_refresh`` seconds have passed since: the next turn fetches it again).
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        headers: dict[str, str] | None = None,
        api_key: str | None = None,
        bearer: str | None = None,
        transport: str | None = None,
        connect_timeout: float = 10.0,
        streaming: bool = True,
        poll_interval: float = 0.1,
        policy: OutboundPolicy | None = None,
        trusted: bool = False,
        card_check: CardCheck | None = None,
        card_refresh: float = 300.0,
        auth: httpx.Auth | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"a remote agent's url must be http(s)://…, not {url!r}")
        self.url = url.rstrip("/")
        self.name = name or self.url.rsplit("/", 1)[-1] or self.url
        self.headers = dict(headers or {})
        self.api_key = api_key
        self.bearer = bearer
        self.transport = transport
        self.connect_timeout = float(connect_timeout)
        self.want_streaming = streaming
        self.poll_interval = poll_interval
        self.policy = policy
        self.trusted = [host_of(self.url)] if trusted else []
        self.card_check = card_check
        self.card_refresh = card_refresh
        self._fetched = 0.0
        #: Per-request authentication (e.g. client-credentials tokens), or None.
        self.auth = auth
        self._client: A2AClient | None = None
        self._http: httpx.AsyncClient | None = None
        self._lock = asyncio.Lock()

    async def client(self) -> A2AClient:
        """The client, connected on first use (fetching the agent card)."""
        async with self._lock:
            check = self.card_check
            if (
                self._client is not None
                and self._http is not None
                and check is not None
                and check.active
                and time.monotonic() - self._fetched > self.card_refresh
            ):
                # refresh: fetch the card again and check it; turns running go on, new
                # ones are refused while it fails
                headers = self._auth()
                try:
                    await fetch_card(self._http, self.url, headers, check)
                except CardRefusedError as exc:
                    raise PeerError(f"refused the agent at {self.url}: {exc}") from exc
                except (A2AError, httpx.HTTPError) as exc:
                    log.info("refreshing the card of %s: %s", self.url, _reason(exc))
                else:
                    self._fetched = time.monotonic()
            if self._client is None:
                from a2a_hub.client import A2AClient

                timeout = self.connect_timeout
                http = guarded_http(
                    self.policy,
                    trusted=self.trusted,
                    what="remote agent URL",
                    timeout=httpx.Timeout(timeout, connect=timeout, read=None),
                    auth=self.auth,
                )
                try:
                    self._client = await A2AClient.connect(
                        self.url,
                        transport=self.transport,
                        http=http,
                        headers=self.headers,
                        api_key=self.api_key,
                        bearer=self.bearer,
                        card_check=self.card_check,
                    )
                except BaseException as exc:
                    await http.aclose()
                    if isinstance(exc, CardRefusedError):
                        raise PeerError(f"refused the agent at {self.url}: {exc}") from exc
                    if isinstance(exc, Exception):
                        raise PeerError(
                            f"cannot reach the agent at {self.url}: {_reason(exc)}"
                        ) from exc
                    raise
                self._http = http
                self._fetched = time.monotonic()
            return self._client

    def _auth(self) -> dict[str, str]:
        from a2a_hub.client import A2AClient

        return A2AClient.auth_headers(self.headers, api_key=self.api_key, bearer=self.bearer)

    async def turn(self, message: Message) -> AsyncIterator[tuple[StreamResponse, bool]]:
        client = await self.client()
        try:
            if self.want_streaming and client.streaming:
                async for item in client.stream(message):
                    yield item.response, False
                return
            # A new task is sent non-blocking, to learn its id at once (for cancel); a
            # continued one blocks: its id is known, and a non-blocking answer would show
            # the state it had before this message.
            config = SendMessageConfiguration(return_immediately=message.task_id is None)
            reply = await client.send(message, configuration=config)
            if isinstance(reply, Message):
                yield StreamResponse(message=reply), True
                return
            yield StreamResponse(task=reply), True
            wait = self.poll_interval
            while not (reply.status.state.terminal or reply.status.state.interrupted):
                await asyncio.sleep(wait)
                wait = min(wait * 2, 1.0)
                reply = await client.get_task(reply.id)
                yield StreamResponse(task=reply), True
        except (A2AError, httpx.HTTPError) as exc:
            raise PeerError(f"the agent at {self.url} failed: {_reason(exc)}") from exc

    async def cancel(self, task_id: str) -> None:
        try:
            client = await self.client()
            await client.cancel_task(task_id)
        except (A2AError, PeerError, httpx.HTTPError) as exc:
            log.info("cancel of task %s at %s: %s", task_id, self.url, _reason(exc))

    async def close(self) -> None:
        async with self._lock:
            await self._drop()

    async def _drop(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._http is not None:
            await self._http.aclose()
            self._http = None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def run_turn(
    peer: Peer,
    message: Message,
    *,
    on_event: Callable[[StreamResponse, Outcome], Awaitable[None]] | None = None,
) -> Outcome:
    """Drive one turn of ``peer``: fold its events, hand each to ``on_event`` as it comes.

    ``on_event`` sees the outcome so far (its ``task_id`` is known from the first event);
    a polled task is handed on only when its status changed.  Raises :class:`PeerError`
    when the peer cannot be reached or breaks off.
    """
    outcome = Outcome()
    last_status: Any = None
    async for event, settled in peer.turn(message):
        outcome.observe(event, settled=settled)
        if on_event is None:
            continue
        if settled and event.task is not None:
            status = event.task.status
            stamp = (status.state, status.timestamp)
            if stamp == last_status:
                continue
            last_status = stamp
        await on_event(event, outcome)
    if outcome.state is None and outcome.message is None:
        raise PeerError(f"agent {peer.name} ended the turn without answering")
    return outcome
