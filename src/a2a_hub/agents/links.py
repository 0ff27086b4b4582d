"""What an agent may reach besides itself: the hub's other agents, its MCP servers, and the
conversations it keeps.

The hub gives a :class:`HubLinks` to the kinds that need it (``remote``, the composites,
``llm`` with tools) when it builds them (:func:`~a2a_hub.agents.loader.build_executor`).
``agents`` looks a hosted agent's engine up by id *at call time*, so agents added to the
hub later are found too, and a composite may name agents declared after it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from a2a_hub.netpolicy import OutboundPolicy
from a2a_hub.settings import MCPServerSpec

if TYPE_CHECKING:
    from a2a_hub.engine.engine import TaskEngine
    from a2a_hub.protocol.types import Message

__all__ = ["ConversationSource", "HubLinks", "no_agents", "no_conversations"]

#: ``(agent_id, context_id, owner, limit)`` → the last ``limit`` messages of that
#: conversation as the hub keeps it (every message, immediate replies included), or
#: ``None`` when the hub keeps none or the conversation is not ``owner``'s.
ConversationSource = Callable[[str, str, "str | None", int], Awaitable["list[Message] | None"]]


def no_agents(agent_id: str) -> TaskEngine | None:
    """The lookup of an executor built outside a hub: no other agent is reachable."""
    return None


async def no_conversations(
    agent_id: str, context_id: str, owner: str | None, limit: int
) -> list[Message] | None:
    """The conversations of an executor built outside a hub: none kept."""
    return None


@dataclass(frozen=True)
class HubLinks:
    """The hub's agents (id → engine, ``None`` if unknown) and its MCP servers by name."""

    agents: Callable[[str], TaskEngine | None] = no_agents
    mcp_servers: Mapping[str, MCPServerSpec] = field(default_factory=dict)
    #: Ids of the hub's agents, for error messages (may be empty).
    agent_ids: Callable[[], list[str]] = list
    #: The conversation store (the registry's), for prompts built from a whole context.
    conversations: ConversationSource = no_conversations
    #: The hub's store URL (``settings.store.url``): where framework adapters keep their own
    #: durable state (ADK sessions, LangGraph checkpoints) beside the hub's tasks.
    store_url: str | None = None
    #: The hub's outbound address policy (``None``: outside a hub, nothing is checked).
    outbound: OutboundPolicy | None = None
    #: True for the agents of the operator's own configuration (hub.toml, ``--agent``):
    #: the hosts their options name are the operator's choice and pass the policy (what
    #: they redirect to does not); False for agents from the admin API or the registry.
    configured: bool = False
