"""The browser chat page: ``/a2a/{agent_id}/chat`` (and ``/chat`` for the default agent).

Three static files shipped in the package (``static/chat.html``, ``chat.css``,
``chat.js``): no build step, nothing fetched from elsewhere.  The page talks to
the agent's WebSocket channel (:mod:`a2a_hub.server.ws`) next to it.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

from a2a_hub.server.errors import protocol_endpoint
from a2a_hub.server.http import agent_of, hub_of

__all__ = ["chat_asset", "chat_page"]

_TYPES = {"chat.css": "text/css; charset=utf-8", "chat.js": "text/javascript; charset=utf-8"}
_HEADERS = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": "default-src 'self'; connect-src 'self' ws: wss:; "
    "style-src 'self'; script-src 'self'",
    "X-Content-Type-Options": "nosniff",
}
_cache: dict[str, bytes] = {}


def _read(name: str) -> bytes:
    data = _cache.get(name)
    if data is None:
        data = _cache[name] = (resources.files("a2a_hub.server") / "static" / name).read_bytes()
    return data


@protocol_endpoint
async def chat_page(request: Request) -> Response:
    """``GET …/chat``: the page (404 as a protocol error when the agent is not hosted)."""
    agent_of(request, hub_of(request))
    return Response(_read("chat.html"), media_type="text/html; charset=utf-8", headers=_HEADERS)


@protocol_endpoint
async def chat_asset(request: Request) -> Response:
    """``GET …/chat/chat.css`` and ``…/chat/chat.js``."""
    name = request.path_params["asset"]
    if name not in _TYPES:
        return Response(b"not found", 404, media_type="text/plain")
    return Response(_read(name), media_type=_TYPES[name], headers=_HEADERS)
