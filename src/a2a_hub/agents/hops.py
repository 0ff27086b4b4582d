"""Agents that call agents: cycles refused when an agent is added, call depth bounded at run time.

At registration (:func:`cycle_through`) the hub follows who calls whom among its own
agents: a composite calls its hosted children, and a ``remote`` agent (or a composite's
remote child) whose URL is one of this hub's own agents calls that agent.  An agent whose
calls lead back to itself (``ping`` → ``pong`` → ``ping``) is refused, naming the cycle.

A cycle the hub cannot see (through another hub) is bounded at run time: every message an
agent sends to another carries the number of calls that led to it, in its metadata
(:data:`HOPS`, ``"a2a-hub/hops"``: message metadata travels over every binding and
protocol version, and through other a2a-hubs, which pass it on the same way).  An agent
asked to call further than :data:`MAX_HOPS` deep fails its task instead, saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from a2a_hub.agents.peer import PeerError
from a2a_hub.engine.executor import RequestContext
from a2a_hub.protocol.types import Message

__all__ = ["HOPS", "MAX_HOPS", "CallDepthError", "cycle_through", "hops_of", "with_hop"]

#: Metadata key of the call depth of a message.
HOPS = "a2a-hub/hops"
#: Calls deeper than this are refused.
MAX_HOPS = 8


class CallDepthError(PeerError):
    """A call would go deeper than :data:`MAX_HOPS` (an agent cycle through other hubs?)."""


def _count(metadata: Mapping[str, Any] | None) -> int:
    value = (metadata or {}).get(HOPS)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def hops_of(ctx: RequestContext) -> int:
    """The call depth of the request ``ctx`` serves (0: a client called directly)."""
    return max(_count(ctx.message.metadata), _count(ctx.metadata))


def with_hop(message: Message, ctx: RequestContext, callee: str) -> Message:
    """``message`` stamped with one call more than ``ctx``'s; :class:`CallDepthError` when
    that is deeper than :data:`MAX_HOPS`."""
    depth = hops_of(ctx) + 1
    if depth > MAX_HOPS:
        raise CallDepthError(
            f"refused to call {callee}: the call depth would exceed {MAX_HOPS} "
            f"(metadata {HOPS!r}; do agents call each other in a cycle?)"
        )
    return msgspec.structs.replace(message, metadata={**(message.metadata or {}), HOPS: depth})


def cycle_through(agent_id: str, calls: Callable[[str], Iterable[str]]) -> list[str] | None:
    """The cycle ``agent_id`` is on (``[a, b, a]``), given whom each agent calls, or ``None``."""
    path: list[str] = [agent_id]
    seen: set[str] = set()

    def visit(node: str) -> list[str] | None:
        for callee in calls(node):
            if callee == agent_id:
                return [*path, callee]
            if callee in seen:
                continue
            seen.add(callee)
            path.append(callee)
            found = visit(callee)
            if found is not None:
                return found
            path.pop()
        return None

    return visit(agent_id)
