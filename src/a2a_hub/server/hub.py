"""The hub: the store and every hosted agent with its engine, built from :class:`Settings`.

The registry is live: :meth:`Hub.add` and :meth:`Hub.remove` change the hosted
agents while the hub serves, and routes follow at once (each request looks its
agent up).  Removing an agent lets its running tasks finish on its engine, which
closes when the last one ends, unless ``cancel_running`` cancels them; either way
new requests to it get ``AgentNotFound`` from that moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from a2a_hub.agents.links import HubLinks
from a2a_hub.agents.loader import build_executor
from a2a_hub.engine.cluster import Cluster
from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.executor import AgentExecutor
from a2a_hub.engine.run import TaskRun
from a2a_hub.llm import set_default_settings
from a2a_hub.protocol.errors import (
    A2AError,
    AgentNotFoundError,
    ExtendedAgentCardNotConfiguredError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a_hub.protocol.types import AgentExtension, Message, Task
from a2a_hub.push.dispatcher import Dispatcher, push_backoff
from a2a_hub.push.keys import SigningKeys
from a2a_hub.push.sender import WebhookSender
from a2a_hub.push.urls import WebhookPolicy
from a2a_hub.registry import Registry, registry_url
from a2a_hub.server.auth import Authenticator
from a2a_hub.server.conversations import ConversationRecorder
from a2a_hub.server.extensions import declared_extensions
from a2a_hub.settings import AgentSpec, Settings, SettingsError
from a2a_hub.stores import open_store
from a2a_hub.stores.base import Store
from a2a_hub.tools.mcp import close_mcp_sessions

log = logging.getLogger("a2a_hub.server")

if TYPE_CHECKING:
    from a2a_hub.server.grpc import GrpcServer

__all__ = ["HostedAgent", "Hub"]


@dataclass
class HostedAgent:
    """One agent served at ``/a2a/{id}``."""

    spec: AgentSpec
    executor: AgentExecutor
    engine: TaskEngine
    cards: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    #: When the card last changed (epoch seconds): its ``Last-Modified``.
    card_modified: float = field(default_factory=time.time)
    #: Whether the card keeps the 0.3 top-level fields (setting ``card_v03_fields``).
    card_v03_fields: bool = True
    #: The port of the gRPC binding once it listens (the card then lists a GRPC interface).
    grpc_port: int | None = None

    @property
    def id(self) -> str:
        """The agent's id, its path segment."""
        return self.spec.id

    @cached_property
    def extensions(self) -> list[AgentExtension]:
        """The extensions the agent declares (configuration first, then its executor's)."""
        return declared_extensions(self.spec, self.executor)

    def card_changed(self) -> None:
        """Forget the encoded cards and move ``Last-Modified`` to now."""
        self.cards.clear()
        self.card_modified = time.time()

    @property
    def streaming(self) -> bool:
        """Whether the agent streams (the executor's ``streaming`` attribute, default True)."""
        return bool(self.executor.streaming)

    def require_streaming(self, what: str) -> None:
        """Refuse a streaming method (UnsupportedOperation) if the card says no streaming."""
        if not self.streaming:
            raise UnsupportedOperationError(
                f"{what} needs streaming, which agent {self.id!r} does not offer "
                "(its card says capabilities.streaming is false); use the non-streaming method"
            )

    def no_extended_card(self) -> A2AError:
        """The error of the extended-card methods."""
        return ExtendedAgentCardNotConfiguredError(
            f"agent {self.id!r} has no extended agent card configured; its public card is at "
            ".well-known/agent-card.json"
        )


class Hub:
    """All agents of one process over one store.

    ``executors`` gives ready executors to some of the agents in ``settings.agents``
    (by id); the others are built from their spec.  The default agent, served at
    the root URL, is ``settings.server.default_agent`` while it is hosted, or else the
    only agent when exactly one is hosted.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        store: Store | None = None,
        executors: dict[str, AgentExecutor] | None = None,
    ) -> None:
        executors = executors or {}
        unknown = sorted(set(executors) - {spec.id for spec in settings.agents})
        if unknown:
            raise ValueError(
                f"executors given for {', '.join(map(repr, unknown))}, which settings.agents "
                f"does not declare (agents: {', '.join(s.id for s in settings.agents) or 'none'})"
            )
        self.settings = settings
        set_default_settings(settings.llm)
        self.store = store if store is not None else open_store(settings.store.url)
        self.cluster = Cluster(self.store, orphan_timeout=settings.store.orphan_timeout)
        #: Which webhook URLs push notifications may go to (``push_allow_hosts``).
        self.webhooks = WebhookPolicy.from_setting(settings.push.allow_hosts)
        #: The notification signing keys (JWKS at /.well-known/jwks.json).
        self.signing_keys = SigningKeys(self.store)
        #: Sends push notifications while the hub runs (from :meth:`start`).
        self.push: Dispatcher | None = None
        self.agents: dict[str, HostedAgent] = {}
        #: What remote/composite/llm agents may reach: the other agents, the MCP servers.
        #: The agents are looked up when used, so agents added later are reached too.
        self.links = HubLinks(
            agents=self._engine_of,
            mcp_servers={server.name: server for server in settings.mcp_servers},
            agent_ids=lambda: sorted(self.agents),
            conversations=self._conversation,
        )
        #: Engines of removed agents whose running tasks have not ended yet.
        self._retiring: dict[asyncio.Task[None], TaskEngine] = {}
        #: The gRPC binding, while it runs (``settings.server.grpc_port``).
        self.grpc: GrpcServer | None = None
        #: The registry (API keys, agents), when authentication is configured: an agent
        #: with ``auth = "api-key"``, ``auth.require_keys`` or an ``auth.registry`` URL.
        self.registry: Registry | None = None
        self.authenticator: Authenticator | None = None
        auth = settings.auth
        if auth.registry or auth.require_keys or any(s.auth for s in settings.agents):
            url = registry_url(auth.registry, settings.store.url)
            self.registry = Registry(url, secret=auth.secret, store=self.store)
            self.authenticator = Authenticator(self.registry, cache_seconds=auth.cache_seconds)
        #: Per agent, the recorder of its conversations (with a registry, once started).
        self.recorders: dict[str, ConversationRecorder] = {}
        self._old_recorders: list[ConversationRecorder] = []
        self._started = False
        self._last_cleanup = 0.0
        self._agents_version = -1
        self._sync_task: asyncio.Task[None] | None = None
        #: How often (seconds) the registry's agent version is polled.
        self.sync_interval = 0.5
        for spec in settings.agents:
            self.add(spec, executors.get(spec.id))

    @property
    def default_agent_id(self) -> str | None:
        """The id of the agent answering at the root URL, if any (it follows add/remove)."""
        chosen = self.settings.server.default_agent
        if chosen is not None:
            return chosen if chosen in self.agents else None
        if len(self.agents) == 1:
            return next(iter(self.agents))
        return None

    def agent(self, agent_id: str) -> HostedAgent:
        """The agent with that id, or :class:`AgentNotFoundError` naming the ones there are."""
        agent = self.agents.get(agent_id)
        if agent is None:
            raise AgentNotFoundError(
                f"No agent {agent_id!r} is hosted here; agents: {self._known()}",
                data={"agentId": agent_id},
            )
        return agent

    def _engine_of(self, agent_id: str) -> TaskEngine | None:
        agent = self.agents.get(agent_id)
        return agent.engine if agent is not None else None

    def default_agent(self) -> HostedAgent:
        """The agent answering at the root URL."""
        agent_id = self.default_agent_id
        if agent_id is not None:
            return self.agents[agent_id]
        chosen = self.settings.server.default_agent
        if chosen is not None:
            raise AgentNotFoundError(
                f"The default agent {chosen!r} is not hosted any more; use /a2a/{{agent_id}} "
                f"(agents: {self._known()})",
                data={"agentId": chosen},
            )
        raise AgentNotFoundError(
            "No default agent: this hub hosts several agents; use /a2a/{agent_id} "
            f"(agents: {self._known()}) or start it with --default-agent"
        )

    def requires_key(self, agent_id: str | None) -> bool:
        """Whether requests to that agent need an API key."""
        if self.settings.auth.require_keys:
            return True
        agent = self.agents.get(agent_id) if agent_id is not None else None
        return agent is not None and agent.spec.auth == "api-key"

    @property
    def open(self) -> bool:
        """True when no agent requires an API key (anyone may call anything)."""
        return not self.settings.auth.require_keys and not any(
            a.spec.auth for a in self.agents.values()
        )

    def _known(self) -> str:
        return ", ".join(sorted(self.agents)) or "none"

    async def _conversation(
        self, agent_id: str, context_id: str, owner: str | None, limit: int
    ) -> list[Message] | None:
        """The last ``limit`` recorded messages of a conversation of ``owner`` (``None``:
        anonymous, who sees every conversation), for the agents' prompts."""
        if self.registry is None:
            return None
        found = await self.registry.conversation_tail(agent_id, context_id, limit)
        if found is None or (owner is not None and found[0] != owner):
            return None
        return found[1]

    # --- the live registry ------------------------------------------------------------

    def add(self, spec: AgentSpec, executor: AgentExecutor | None = None) -> HostedAgent:
        """Host an agent (its executor built from ``spec`` unless given), serving at once.

        An agent with the same id is replaced: requests from now on reach the new
        one, while the tasks running on the old one finish there (as with
        :meth:`remove`).  Works before and after :meth:`start`; the engine joins
        the cluster of instances sharing the store, and a running gRPC binding
        serves the agent too (its card lists it).  ``settings`` is not changed.
        """
        if not spec.id or "/" in spec.id:
            raise ValueError(f"agent id {spec.id!r} must be non-empty and contain no '/'")
        if executor is None:
            executor = build_executor(spec, links=self.links)
        old = self.agents.get(spec.id)
        if old is not None:
            self._retire(old.engine)
            self._retire_recorder(spec.id)
        engine = TaskEngine(spec.id, executor, self.store, cluster=self.cluster)
        agent = self.agents[spec.id] = HostedAgent(
            spec,
            executor,
            engine,
            card_v03_fields=self.settings.server.card_v03_fields,
            grpc_port=self.grpc.port if self.grpc is not None else None,
        )
        engine.push.check_url = self.webhooks.check_url
        if self.push is not None:
            engine.push.on_queued = self.push.wake
        if self._started and self.registry is not None:
            self.recorders[spec.id] = ConversationRecorder(self.registry, engine)
        return agent

    async def remove(self, agent_id: str, *, cancel_running: bool = False) -> HostedAgent:
        """Stop hosting an agent: from now on its requests get :class:`AgentNotFoundError`.

        Its running tasks finish on its engine, which closes when the last one
        ends (in the background: this returns at once).  With ``cancel_running``
        they are canceled instead (``TASK_STATE_CANCELED``, the executor's
        ``cancel`` is called) and this returns once they have ended and the
        engine is closed.  Returns the removed agent.
        """
        agent = self.agent(agent_id)
        del self.agents[agent_id]
        self._retire_recorder(agent_id)
        if cancel_running:
            await _cancel_runs(agent.engine)
            await self._close_engine(agent.engine)
        else:
            self._retire(agent.engine)
        return agent

    def _retire_recorder(self, agent_id: str) -> None:
        """The recorder of a replaced or removed agent stops when its engine closes."""
        recorder = self.recorders.pop(agent_id, None)
        if recorder is not None:
            self._old_recorders.append(recorder)

    def _retire(self, engine: TaskEngine) -> None:
        """Close ``engine`` once its running tasks have ended (it serves no new requests)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no event loop: nothing ever ran on this engine
            self._leave_cluster(engine)
            return
        drain = asyncio.ensure_future(self._drain(engine))
        self._retiring[drain] = engine
        drain.add_done_callback(self._retired)

    async def _drain(self, engine: TaskEngine) -> None:
        while runs := _running(engine):
            await asyncio.wait([run.finished for run in runs])
        await self._close_engine(engine)

    def _retired(self, drain: asyncio.Task[None]) -> None:
        self._retiring.pop(drain, None)
        if not drain.cancelled() and drain.exception() is not None:
            log.error("closing engine of a removed agent failed", exc_info=drain.exception())

    async def _close_engine(self, engine: TaskEngine) -> None:
        await engine.close()
        await engine.executor.close()
        self._leave_cluster(engine)

    def _leave_cluster(self, engine: TaskEngine) -> None:
        if self.cluster.engines.get(engine.agent_id) is engine:
            del self.cluster.engines[engine.agent_id]

    # --- life -------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the store, join the cluster of instances sharing it, start the gRPC binding;
        with a registry, register the configured agents, host the registered ones and follow
        its changes."""
        await self.store.open()
        await self.cluster.start()
        server = self.settings.server
        if server.grpc_port is not None:
            from a2a_hub.server.grpc import GrpcServer

            try:
                self.grpc = await GrpcServer(self).start(server.host, server.grpc_port)
            except BaseException:
                await self.cluster.close()
                await self.store.close()
                raise
        await self.signing_keys.refresh()
        self.push = Dispatcher(
            self.store,
            WebhookSender(self.webhooks),
            self.signing_keys,
            self.card_url,
            push_backoff(self.settings.push.retry_steps, self.settings.push.retry_horizon),
            snapshot=self._snapshot,
            lease=self.settings.push.claim_lease,
            concurrency=self.settings.push.concurrency,
            busy_concurrency=self.settings.push.busy_concurrency,
        )
        for agent in self.agents.values():
            agent.engine.push.on_queued = self.push.wake
        self.push.start()
        self._started = True
        if self.registry is not None:
            await self.registry.open()
            for agent in self.agents.values():
                self.recorders[agent.id] = ConversationRecorder(self.registry, agent.engine)
            for agent in list(self.agents.values()):
                await self.registry.put_agent(agent.spec)
            await self.sync_agents()
            self._sync_task = asyncio.ensure_future(self._follow_registry())

    async def sync_agents(self) -> bool:
        """Host the registry's agents as they are now (added, changed, removed); True if
        its agent version moved since the last call."""
        registry = self.registry
        if registry is None:
            return False
        version = await registry.agents_version()
        if version == self._agents_version:
            return False
        self._agents_version = version
        wanted = {spec.id: spec for spec in await registry.list_agents()}
        for agent_id, spec in wanted.items():
            hosted = self.agents.get(agent_id)
            if hosted is not None and hosted.spec == spec:
                continue
            try:
                self.add(spec)
            except (SettingsError, ValueError, ImportError) as exc:
                log.error("registry agent %r cannot be hosted here: %s", agent_id, exc)
        for agent_id in [a for a in self.agents if a not in wanted]:
            await self.remove(agent_id)
        return True

    async def _forget_old_conversations(self) -> None:
        days = self.settings.auth.conversation_retention
        loop = asyncio.get_running_loop()
        if self.registry is None or not days or loop.time() - self._last_cleanup < 60:
            return
        self._last_cleanup = loop.time()
        gone = await self.registry.forget_conversations(days * 86400)
        if gone:
            log.info("deleted %d conversations older than %g days", gone, days)

    async def _follow_registry(self) -> None:
        while True:
            await asyncio.sleep(self.sync_interval)
            try:
                await self.sync_agents()
                await self._forget_old_conversations()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("reading the registry's agents failed; retrying", exc_info=True)

    async def _snapshot(self, agent_id: str, task_id: str) -> Task | None:
        """A task's freshest stored snapshot: its live run's last write when it runs here
        (never events not written yet: durable before visible), else the store's."""
        agent = self.agents.get(agent_id)
        run = agent.engine.live(task_id) if agent is not None else None
        stored = run.stored() if run is not None else None
        if stored is not None:
            return stored
        return await self.store.get_task(agent_id, task_id)

    def card_url(self, agent_id: str) -> str:
        """The public URL of an agent's card (the ``iss`` of its notifications' JWTs)."""
        server = self.settings.server
        root = (server.public_url or f"http://{server.host}:{server.port}").rstrip("/")
        return f"{root}/a2a/{agent_id}/.well-known/agent-card.json"

    async def close(self) -> None:
        """Stop the gRPC binding and running tasks (removed agents' too), leave the cluster,
        close the store and the registry."""
        if self._sync_task is not None:
            self._sync_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sync_task
            self._sync_task = None
        if self.grpc is not None:
            await self.grpc.stop()
            self.grpc = None
        retiring = list(self._retiring.items())
        for drain, _ in retiring:
            drain.cancel()
        for drain, engine in retiring:
            with contextlib.suppress(asyncio.CancelledError):
                await drain
            await engine.close()
            await engine.executor.close()
        for agent in self.agents.values():
            await agent.engine.close()
            await agent.engine.executor.close()
        await close_mcp_sessions()
        for recorder in [*self.recorders.values(), *self._old_recorders]:
            await recorder.close()  # (what the engines published last is recorded first)
        self.recorders.clear()
        self._old_recorders.clear()
        if self.push is not None:
            await self.push.close()
            self.push = None
        await self.cluster.close()
        await self.store.close()
        if self.registry is not None:
            await self.registry.close()


def _running(engine: TaskEngine) -> list[TaskRun]:
    """The runs executing on ``engine`` in this process.

    Reads the engine's private run table: the engine has no public list of its
    runs yet (only ``live(task_id)``).
    """
    return list(engine.runs.values())


async def _cancel_runs(engine: TaskEngine) -> None:
    """Cancel every task running on ``engine`` and wait until all its runs have ended."""
    for run in _running(engine):
        with contextlib.suppress(TaskNotFoundError, TaskNotCancelableError):
            await engine.cancel_task(run.task_id)  # ends canceled (a run with no task yet: no-op)
    while runs := _running(engine):
        await asyncio.wait([run.finished for run in runs])
