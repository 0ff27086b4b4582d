"""Cross-site and host safety: the ``Host`` headers served, and CORS for browser callers.

A hub answers with its own URL in cards and the index (cached publicly), and a local hub is
reachable by any web page the user opens.  :class:`TrustedHostMiddleware` refuses a request
whose ``Host`` is not one of :func:`trusted_hosts` (400, a JSON error body, or a closed
WebSocket), which defeats DNS rebinding and keeps forged hosts out of cards and caches.
CORS (:func:`cors_middleware`) is off unless ``cors_origins`` lists origins; the JSON-RPC
binding's JSON-only ``Content-Type`` (``server/jsonrpc.py``) makes every cross-site call a
preflighted one, so without CORS a browser on another origin cannot call the hub at all.
"""

from __future__ import annotations

import logging
import socket
from urllib.parse import urlsplit

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from a2a_hub.protocol.errors import InvalidRequestError
from a2a_hub.server.errors import error_reply
from a2a_hub.settings import ServerSettings

__all__ = ["TrustedHostMiddleware", "cors_middleware", "host_allowed", "trusted_hosts"]

log = logging.getLogger("a2a_hub.server")

_LOCAL = ("localhost", "127.0.0.1", "::1", "*.localhost")
_WILDCARD_BINDS = ("0.0.0.0", "::", "")


def trusted_hosts(server: ServerSettings) -> list[str]:
    """The host names served: ``trusted_hosts`` if set, else the bind address, the localhost
    names and ``public_url``'s host (a wildcard bind adds this machine's host names)."""
    if server.trusted_hosts:
        return [h.lower() for h in server.trusted_hosts]
    hosts = [*_LOCAL]
    if server.host in _WILDCARD_BINDS:
        name = socket.gethostname()
        hosts += [name, socket.getfqdn(name)]
    else:
        hosts.append(server.host)
    if server.public_url:
        public = urlsplit(server.public_url).hostname
        if public:
            hosts.append(public)
    return sorted({h.lower() for h in hosts if h})


def _hostname(host: str) -> str:
    """``example.com:8000`` → ``example.com``; ``[::1]:8000`` → ``::1``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


def host_allowed(host: str, patterns: list[str]) -> bool:
    """Whether a ``Host`` header value matches one of ``patterns`` (``*``, ``*.suffix``)."""
    name = _hostname(host)
    for pattern in patterns:
        if pattern == "*" or pattern == name:
            return True
        if pattern.startswith("*.") and name.endswith(pattern[1:]):
            return True
    return False


class TrustedHostMiddleware:
    """Refuse (400 JSON / WebSocket close 1008) a request whose ``Host`` is not served.

    A request without a ``Host`` header (HTTP/1.0) names no host and is served.
    """

    def __init__(self, app: ASGIApp, hosts: list[str]) -> None:
        self.app = app
        self.hosts = hosts
        self.any = "*" in hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.any or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = next((v for k, v in scope["headers"] if k == b"host"), None)
        if host is None or host_allowed(host.decode("latin-1"), self.hosts):
            await self.app(scope, receive, send)
            return
        shown = host.decode("latin-1")[:100]
        log.debug("refused Host %r (trusted_hosts: %s)", shown, ", ".join(self.hosts))
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "untrusted Host"})
            return
        err = InvalidRequestError(
            f"Host {shown!r} is not served here; add it to the trusted_hosts setting "
            "(A2A_HUB_TRUSTED_HOSTS) or reach the hub by a trusted name",
            data={"host": shown},
        )
        await error_reply(scope, err)(scope, receive, send)


def cors_middleware(server: ServerSettings) -> Middleware | None:
    """CORS for the ``cors_origins`` setting (None when it is empty: no CORS at all).

    Preflights are answered for the methods and headers the bindings use; the response
    headers a client reads (``A2A-Extensions``, ``A2A-Version``) are exposed.  Credentials
    (cookies) are not: a browser sends its API key in a header.
    """
    if not server.cors_origins:
        return None
    return Middleware(
        CORSMiddleware,
        allow_origins=list(server.cors_origins),
        allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
        allow_headers=[
            "Content-Type",
            "Authorization",
            "X-API-Key",
            "A2A-Version",
            "A2A-Extensions",
            "Last-Event-ID",
            "traceparent",
        ],
        expose_headers=["A2A-Extensions", "A2A-Version"],
        max_age=600,
    )
