"""The hub: the store and every hosted agent with its engine, built from :class:`Settings`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from a2a_hub.agents.loader import build_executor
from a2a_hub.engine.cluster import Cluster
from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.executor import AgentExecutor
from a2a_hub.protocol.errors import (
    A2AError,
    AgentNotFoundError,
    ExtendedAgentCardNotConfiguredError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
)
from a2a_hub.protocol.types import AgentExtension
from a2a_hub.server.extensions import declared_extensions
from a2a_hub.settings import AgentSpec, Settings
from a2a_hub.stores import open_store
from a2a_hub.stores.base import Store

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

    def push_not_supported(self) -> A2AError:
        """The error of every push-config method (no push notifications here yet)."""
        return PushNotificationNotSupportedError(
            f"agent {self.id!r} does not send push notifications "
            "(its card says capabilities.pushNotifications is false)"
        )

    def no_extended_card(self) -> A2AError:
        """The error of the extended-card methods."""
        return ExtendedAgentCardNotConfiguredError(
            f"agent {self.id!r} has no extended agent card configured; its public card is at "
            ".well-known/agent-card.json"
        )


class Hub:
    """All agents of one process over one store."""

    def __init__(
        self,
        settings: Settings,
        *,
        store: Store | None = None,
        executors: dict[str, AgentExecutor] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store if store is not None else open_store(settings.store)
        self.cluster = Cluster(self.store, orphan_timeout=settings.orphan_timeout)
        self.agents: dict[str, HostedAgent] = {}
        for spec in settings.agents:
            executor = (executors or {}).get(spec.id) or build_executor(spec)
            engine = TaskEngine(spec.id, executor, self.store, cluster=self.cluster)
            self.agents[spec.id] = HostedAgent(
                spec, executor, engine, card_v03_fields=settings.card_v03_fields
            )
        self.default_agent_id = settings.default_agent or (
            settings.agents[0].id if len(settings.agents) == 1 else None
        )
        #: The gRPC binding, while it runs (``settings.grpc_port``).
        self.grpc: GrpcServer | None = None

    def agent(self, agent_id: str) -> HostedAgent:
        """The agent with that id, or :class:`AgentNotFoundError` naming the ones there are."""
        agent = self.agents.get(agent_id)
        if agent is None:
            known = ", ".join(sorted(self.agents)) or "none"
            raise AgentNotFoundError(
                f"No agent {agent_id!r} is hosted here; agents: {known}",
                data={"agentId": agent_id},
            )
        return agent

    def default_agent(self) -> HostedAgent:
        """The agent answering at the root URL."""
        if self.default_agent_id is None:
            raise AgentNotFoundError(
                "No default agent: this hub hosts several agents; use /a2a/{agent_id} "
                f"(agents: {', '.join(sorted(self.agents)) or 'none'}) or start it with "
                "--default-agent"
            )
        return self.agents[self.default_agent_id]

    async def start(self) -> None:
        """Open the store, join the cluster of instances sharing it, start the gRPC binding."""
        await self.store.open()
        await self.cluster.start()
        if self.settings.grpc_port is not None:
            from a2a_hub.server.grpc import GrpcServer

            try:
                self.grpc = await GrpcServer(self).start(
                    self.settings.host, self.settings.grpc_port
                )
            except BaseException:
                await self.cluster.close()
                await self.store.close()
                raise

    async def close(self) -> None:
        """Stop the gRPC binding and running tasks, leave the cluster, close the store."""
        if self.grpc is not None:
            await self.grpc.stop()
            self.grpc = None
        for agent in self.agents.values():
            await agent.engine.close()
        await self.cluster.close()
        await self.store.close()
