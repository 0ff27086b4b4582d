"""One hosted agent: its spec, executor and engine, and what its card and bindings need.

A :class:`HostedAgent` is an entry of the hub's table (:class:`~a2a_hub.server.hub.Hub`),
served at ``/a2a/{id}``; every binding (JSON-RPC, REST, WebSocket, AG-UI, gRPC) looks it
up per request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property

import msgspec

from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.executor import AgentExecutor
from a2a_hub.protocol.errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    UnsupportedOperationError,
)
from a2a_hub.protocol.types import AgentExtension
from a2a_hub.settings import AgentSpec

__all__ = ["HostedAgent", "declared_extensions"]


def declared_extensions(spec: AgentSpec, executor: AgentExecutor) -> list[AgentExtension]:
    """The agent's extensions: its configuration's, then its executor class's other ones."""
    found: dict[str, AgentExtension] = {}
    for ext in spec.extensions:
        found.setdefault(ext.uri, ext)
    for raw in executor.extensions or ():
        ext = raw if isinstance(raw, AgentExtension) else msgspec.convert(raw, AgentExtension)
        found.setdefault(ext.uri, ext)
    return list(found.values())


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
