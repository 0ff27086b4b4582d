"""What an agent may reach besides itself: the hub's other agents, and its MCP servers.

The hub gives a :class:`HubLinks` to the kinds that need it (``remote``, the composites,
``llm`` with tools) when it builds them (:func:`~a2a_hub.agents.loader.build_executor`).
``agents`` looks a hosted agent's engine up by id *at call time*, so agents added to the
hub later are found too, and a composite may name agents declared after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from a2a_hub.settings import MCPServerSpec

if TYPE_CHECKING:
    from a2a_hub.engine.engine import TaskEngine

__all__ = ["HubLinks", "no_agents"]


def no_agents(agent_id: str) -> TaskEngine | None:
    """The lookup of an executor built outside a hub: no other agent is reachable."""
    return None


@dataclass(frozen=True)
class HubLinks:
    """The hub's agents (id → engine, ``None`` if unknown) and its MCP servers by name."""

    agents: Callable[[str], TaskEngine | None] = no_agents
    mcp_servers: Mapping[str, MCPServerSpec] = field(default_factory=dict)
    #: Ids of the hub's agents, for error messages (may be empty).
    agent_ids: Callable[[], list[str]] = list
