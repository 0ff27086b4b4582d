"""The hub: the table of hosted agents over one store, and the services beside it.

The table is live: :meth:`Hub.add` and :meth:`Hub.remove` change the hosted
agents while the hub serves, and routes follow at once (each request looks its
agent up).  Removing an agent lets its running tasks finish on its engine, which
closes when the last one ends, unless ``cancel_running`` cancels them; either way
new requests to it get ``AgentNotFound`` from that moment.

What runs beside the agents (the store, the cluster, the signing keys, push delivery,
the conversation recorders, the gRPC binding, the registry follower) is a list of
services, each owning its start and stop (:meth:`Hub.services`, see
:mod:`a2a_hub.server.lifecycle`); the app's lifespan runs them, or :meth:`Hub.start`
and :meth:`Hub.close` without an app.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from a2a_hub.agents.hops import cycle_through
from a2a_hub.agents.links import HubLinks
from a2a_hub.agents.loader import admit, build_executor, callees
from a2a_hub.engine.cluster import Cluster
from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.executor import AgentExecutor
from a2a_hub.llm import set_default_settings
from a2a_hub.llm.served import ServedModels, set_local_root
from a2a_hub.netpolicy import OutboundPolicy
from a2a_hub.protocol.errors import AgentNotFoundError
from a2a_hub.protocol.types import Message, Task
from a2a_hub.push.dispatcher import Dispatcher, push_backoff
from a2a_hub.push.sender import WebhookSender
from a2a_hub.push.signing import SigningKeys
from a2a_hub.push.urls import WebhookPolicy
from a2a_hub.registry import Registry, registry_url
from a2a_hub.registry.follower import RegistryFollower
from a2a_hub.registry.recorder import ConversationRecorders
from a2a_hub.server.auth import Authenticator, KeyPolicy
from a2a_hub.server.hosted import HostedAgent
from a2a_hub.server.lifecycle import Service, closing, opened, run_services, started
from a2a_hub.server.limits import Limits
from a2a_hub.server.oidc import OidcVerifier
from a2a_hub.server.retiring import Retiring
from a2a_hub.settings import AgentSpec, Settings, SettingsError
from a2a_hub.stores import open_store
from a2a_hub.stores.base import Store
from a2a_hub.tools.mcp import close_mcp_sessions
from a2a_hub.workers import parse_executor

if TYPE_CHECKING:  # the gRPC binding is an optional extra (grpcio), imported when started
    from a2a_hub.server.grpc import GrpcServer
    from a2a_hub.workers.client import TemporalTurns  # the temporal extra (temporalio)

log = logging.getLogger("a2a_hub.server")

__all__ = ["HostedAgent", "Hub"]

#: Called with every engine the hub hosts (see :meth:`Hub.watch`).
EngineHook = Callable[[TaskEngine], None]


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
        worker: bool = False,
    ) -> None:
        executors = executors or {}
        unknown = sorted(set(executors) - {spec.id for spec in settings.agents})
        if unknown:
            raise ValueError(
                f"executors given for {', '.join(map(repr, unknown))}, which settings.agents "
                f"does not declare (agents: {', '.join(s.id for s in settings.agents) or 'none'})"
            )
        self.settings = settings
        # the llm agents built below, and any provider asked for later, use the hub's section
        set_default_settings(settings.llm)
        #: The models of the hub's LLM endpoint (``/llm/v1``, server/llm_api.py); the agents
        #: built below find it at :func:`~a2a_hub.llm.served.llm_base_url`.
        self.llm_models = ServedModels(settings.llm)
        host = settings.server.host
        host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        set_local_root(f"http://{f'[{host}]' if ':' in host else host}:{settings.server.port}")
        self.store = store if store is not None else open_store(settings.store.url)
        self.cluster = Cluster(self.store, orphan_timeout=settings.store.orphan_timeout)
        allow = (settings.server.outbound_allow_hosts, settings.push.allow_hosts)
        #: The outbound address policy of every call the hub makes (``outbound_allow_hosts``,
        #: joined with its older name ``push_allow_hosts``): see :mod:`a2a_hub.netpolicy`.
        self.outbound = OutboundPolicy.from_setting(*allow)
        #: The same policy for webhooks, which must also be https (unless allow-listed).
        self.webhooks = WebhookPolicy.from_setting(*allow)
        #: An API node's worker tier (``executor = temporal://…``): the engines queue their
        #: turns there instead of running them.  ``worker``: this hub is ``a2a-hub worker``'s,
        #: which runs them (its engines run what they are given).
        self.turns: TemporalTurns | None = None
        target = parse_executor(settings.server.executor)
        if target is not None and not worker:
            from a2a_hub.workers.client import TemporalTurns  # the temporal extra

            self.turns = TemporalTurns(target, lambda: [a.spec for a in self.agents.values()])
        #: The notification signing keys (JWKS at /.well-known/jwks.json).
        self.signing_keys = SigningKeys(self.store)
        #: Sends push notifications while the hub runs (see :meth:`services`).
        self.push: Dispatcher | None = None
        #: The gRPC binding, while it runs (``settings.server.grpc_port``).
        self.grpc: GrpcServer | None = None
        self.agents: dict[str, HostedAgent] = {}
        #: The registry (API keys, agents, conversations), when authentication is
        #: configured: an agent with ``auth = "api-key"``, ``auth.require_keys`` or an
        #: ``auth.registry`` URL; then the hub follows its agents (:attr:`follower`).
        self.registry: Registry | None = None
        self.authenticator: Authenticator | None = None
        self.follower: RegistryFollower | None = None
        auth = settings.auth
        if (
            auth.registry
            or auth.require_keys
            or any(s.auth is not None and "api-key" in s.auth for s in settings.agents)
        ):
            url = registry_url(auth.registry, settings.store.url)
            self.registry = Registry(url, secret=auth.secret, store=self.store)
            self.authenticator = Authenticator(self.registry, cache_seconds=auth.cache_seconds)
            self.follower = RegistryFollower(
                self, self.registry, conversation_retention=auth.conversation_retention
            )
        #: Bearer tokens of the OpenID Connect issuer (``auth.oidc_issuer``), if any.
        self.oidc = OidcVerifier(auth) if auth.oidc_issuer else None
        #: Which agents need a credential, and who a key or token is (:mod:`.auth`).
        self.auth = KeyPolicy(auth, self.agents, self.authenticator, self.oidc)
        #: The ``[[limits]]`` (:mod:`a2a_hub.server.limits`), each agent's engine gated.
        self.limits = Limits(settings.limits, settings.store.url) if settings.limits else None
        #: What remote/composite/llm agents may reach: the other agents, the MCP servers.
        #: The agents are looked up when used, so agents added later are reached too.
        self.links = HubLinks(
            agents=self._engine_of,
            mcp_servers={server.name: server for server in settings.mcp_servers},
            agent_ids=lambda: sorted(self.agents),
            conversations=self._conversation,
            store_url=settings.store.url,
            outbound=self.outbound,
        )
        #: The links of the agents of the operator's own configuration (their URLs trusted).
        self.configured_links = dataclasses.replace(self.links, configured=True)
        #: Engines of replaced or removed agents whose running tasks have not ended yet.
        self._retiring = Retiring(self.cluster)
        self._hooks: list[EngineHook] = []
        self._stack: contextlib.AsyncExitStack | None = None
        for spec in settings.agents:
            self.add(spec, executors.get(spec.id), configured=True)

    # --- the table --------------------------------------------------------------------

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

    def _known(self) -> str:
        return ", ".join(sorted(self.agents)) or "none"

    def _engine_of(self, agent_id: str) -> TaskEngine | None:
        agent = self.agents.get(agent_id)
        return agent.engine if agent is not None else None

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

    def local_agent_of(self, url: str) -> str | None:
        """The id of the agent of this hub that ``url`` names (``…/a2a/{id}`` at this hub's
        public URL, or at its port on a local address), else ``None``."""
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return None
        host = (parts.hostname or "").lower()
        server = self.settings.server
        ours = host in {server.host.lower(), "localhost", "127.0.0.1", "::1", "0.0.0.0"} and (
            port == server.port
        )
        if server.public_url:
            public = urlsplit(server.public_url)
            ours = ours or (
                host == (public.hostname or "").lower()
                and port == (public.port or (443 if public.scheme == "https" else 80))
            )
        if not ours:
            return None
        path = parts.path.strip("/").split("/")
        if len(path) >= 2 and path[0] == "a2a":
            return path[1]
        return self.default_agent_id if path == [""] else None

    def check_cycle(self, agent_id: str, executor: AgentExecutor) -> None:
        """Refuse (:class:`SettingsError`) an agent whose calls lead back to itself through
        the hub's agents (see :mod:`a2a_hub.agents.hops`)."""

        def calls(node: str) -> list[str]:
            hosted = self.agents.get(node)
            found = executor if node == agent_id else hosted.executor if hosted else None
            return callees(found, self.local_agent_of) if found is not None else []

        cycle = cycle_through(agent_id, calls)
        if cycle is not None:
            raise SettingsError(
                f"agent {agent_id!r} would call itself: {' -> '.join(cycle)} "
                "(agents that call each other in a cycle are refused)"
            )

    async def admit_configured(self) -> None:
        """The registration checks of the configured agents (:func:`admit`: a remote card's
        signature), which ``a2a-hub serve`` runs before serving; :class:`SettingsError`
        names the first agent refused and why."""
        for agent in list(self.agents.values()):
            await admit(agent.spec, agent.executor)

    def add(
        self,
        spec: AgentSpec,
        executor: AgentExecutor | None = None,
        *,
        configured: bool = False,
    ) -> HostedAgent:
        """Host an agent (its executor built from ``spec`` unless given), serving at once.

        An agent with the same id is replaced: requests from now on reach the new
        one, while the tasks running on the old one finish there (as with
        :meth:`remove`).  Works before and after :meth:`start`; the engine joins
        the cluster of instances sharing the store, the running services take it
        (:meth:`watch`: push delivery, the conversation recorder), and a running gRPC
        binding serves the agent too (its card lists it).  ``settings`` is not changed.
        ``configured``: the agent comes from the operator's own configuration (the URLs
        of its options pass the outbound policy).  An agent that would call itself through
        the hub's agents is refused (:meth:`check_cycle`).
        """
        if not spec.id or "/" in spec.id:
            raise ValueError(f"agent id {spec.id!r} must be non-empty and contain no '/'")
        if executor is None:
            links = self.configured_links if configured else self.links
            executor = build_executor(spec, links=links)
        self.check_cycle(spec.id, executor)
        old = self.agents.get(spec.id)
        if old is not None:
            self._retiring.retire(old.engine)
        engine = TaskEngine(spec.id, executor, self.store, cluster=self.cluster)
        engine.dispatch = self.turns
        agent = self.agents[spec.id] = HostedAgent(
            spec,
            executor,
            engine,
            card_v03_fields=self.settings.server.card_v03_fields,
            grpc_port=self.grpc.port if self.grpc is not None else None,
        )
        engine.push.check_url = self.webhooks.check_url
        if self.limits is not None:
            engine.gate = self.limits.for_agent(spec.id)
        for hook in self._hooks:
            hook(engine)
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
        if cancel_running:
            await self._retiring.cancel(agent.engine)
        else:
            self._retiring.retire(agent.engine)
        return agent

    def watch(self, hook: EngineHook) -> Callable[[], None]:
        """Call ``hook`` with the engine of every hosted agent, now and whenever one is
        added (a replaced agent gets a new engine); returns the function that stops it."""
        self._hooks.append(hook)
        for agent in list(self.agents.values()):
            hook(agent.engine)
        return lambda: self._hooks.remove(hook)

    async def _close_engines(self) -> None:
        """Stop the running tasks (removed agents' too): each ends failed, saying that the
        server shut down; the executors close."""
        await self._retiring.close()
        for agent in self.agents.values():
            await agent.engine.close()
            await agent.engine.executor.close()

    # --- the services -----------------------------------------------------------------

    def services(self) -> list[Service]:
        """The services that run beside the agents, in the order they start; they stop in
        the reverse order.  So the registry follower stops first (no agent comes or goes
        any more), then the gRPC binding, the agents' engines (what still runs fails), the
        MCP sessions, the conversation recorders (after the engines: what those published
        last is recorded), push delivery, the cluster, the registry and the store (the
        registry may use the store's engine)."""
        registry = self.registry
        found: list[Service] = [opened(self.store)]
        if registry is not None:  # after the store: it may share the store's engine
            found.append(opened(registry))
        found += [started(self.cluster), self.signing_keys, self._pushing()]
        if self.turns is not None:
            found.append(self.turns)
        if registry is not None:
            found.append(ConversationRecorders(registry, self.watch))
        if self.limits is not None:
            found.append(self.limits.serving())
        found += [closing(self.llm_models.aclose), closing(close_mcp_sessions)]
        found.append(closing(self._close_engines))
        if self.settings.server.grpc_port is not None:
            found.append(self._serving_grpc(self.settings.server.grpc_port))
        if self.follower is not None:
            found.append(self.follower)
        return found

    @contextlib.asynccontextmanager
    async def _pushing(self) -> AsyncIterator[None]:
        """Push delivery: a :class:`Dispatcher` every engine wakes when it queues some."""
        settings = self.settings.push
        dispatcher = Dispatcher(
            self.store,
            WebhookSender(self.webhooks),
            self.signing_keys,
            self.card_url,
            push_backoff(settings.retry_steps, settings.retry_horizon),
            snapshot=self._snapshot,
            lease=settings.claim_lease,
            concurrency=settings.concurrency,
            busy_concurrency=settings.busy_concurrency,
        )
        async with dispatcher:
            self.push = dispatcher
            queued = dispatcher.queued
            unwatch = self.watch(lambda engine: setattr(engine.push, "on_queued", queued))
            try:
                yield
            finally:
                unwatch()
                self.push = None

    @contextlib.asynccontextmanager
    async def _serving_grpc(self, port: int) -> AsyncIterator[None]:
        """The gRPC binding on ``port`` (its cards list it while it serves)."""
        from a2a_hub.server.grpc import GrpcServer  # the optional extra, only when asked for

        self.grpc = await GrpcServer(self).start(self.settings.server.host, port)
        try:
            yield
        finally:
            grpc, self.grpc = self.grpc, None
            await grpc.stop()

    async def start(self) -> None:
        """Start the hub's services (:meth:`services`) without an app: open the store, join
        the cluster of instances sharing it, start push delivery and the gRPC binding; with
        a registry, record conversations, register the configured agents, host the
        registered ones and follow its changes.  A service that fails to start stops the
        ones started before it."""
        async with contextlib.AsyncExitStack() as stack:
            await run_services(stack, self.services())
            self._stack = stack.pop_all()

    async def close(self) -> None:
        """Stop what :meth:`start` started, in the reverse order (see :meth:`services`)."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def __aenter__(self) -> Hub:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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
