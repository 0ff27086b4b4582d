"""``GET /contexts/{contextId}/messages``: a conversation's messages, to its owner.

The conversations are recorded into the registry by
:class:`a2a_hub.registry.recorder.ConversationRecorder` (one per hosted agent, when the
hub has a registry); this endpoint reads one of them back, per context id, in order.
"""

from __future__ import annotations

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from a2a_hub.protocol.errors import (
    InvalidParamsError,
    ResourceNotFoundError,
    UnsupportedOperationError,
)
from a2a_hub.server.caller import caller_of
from a2a_hub.server.errors import JSON, protocol_endpoint
from a2a_hub.server.http import agent_of, hub_of

__all__ = ["context_messages"]

_enc = msgspec.json.Encoder()


@protocol_endpoint
async def context_messages(request: Request) -> Response:
    """``GET /contexts/{contextId}/messages?pageSize=&pageToken=``: the conversation's
    messages in order, to its owner (others: not found, as for an unknown context)."""
    hub = hub_of(request)
    agent = agent_of(request, hub)
    context_id = request.path_params["context_id"]
    size = _int(request, "pageSize", 50)
    after = _int(request, "pageToken", 0)
    if hub.registry is None:
        raise UnsupportedOperationError(
            "this hub keeps no conversations (it has no registry: configure auth)"
        )
    found = await hub.registry.conversation(
        agent.id, context_id, after=after, limit=max(1, min(size, 500))
    )
    if found is None or not caller_of(request).sees(found[0]):
        raise ResourceNotFoundError(f"No conversation {context_id!r}")
    _, page = found
    next_token = str(page[-1][0]) if len(page) == max(1, min(size, 500)) else ""
    body = {"messages": [m for _, m in page], "nextPageToken": next_token}
    return Response(_enc.encode(body), media_type=JSON)


def _int(request: Request, name: str, default: int) -> int:
    value = request.query_params.get(name)
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidParamsError(f"{name} must be a whole number, not {value!r}") from None
