"""Cross-site and host safety: the ``Host`` headers served, and CORS for browser callers.

A hub answers with its own URL in cards and the index (cached publicly), and a local hub is
reachable by any web page the user opens.  :class:`HostCheck` (asked by the app's front) refuses
a request whose ``Host`` is not one of :func:`trusted_hosts` (400, a JSON error body, or a closed
WebSocket), which defeats DNS rebinding and keeps forged hosts out of cards and caches.
CORS (:func:`cors_middleware`) is off unless ``cors_origins`` lists origins; the JSON-RPC
binding's JSON-only ``Content-Type`` (``server/jsonrpc.py``) makes every cross-site call a
preflighted one.  Two things a page can do without any preflight remain: a bodiless
``POST`` (REST ``:cancel``) and a WebSocket upgrade (browsers apply no CORS to those); the
same check refuses both, and every other changing request, when its ``Origin`` is
another site's and not listed in ``cors_origins`` (:func:`same_origin`).  Without CORS a
browser on another origin cannot change anything on the hub.
"""

from __future__ import annotations

import logging
import socket
from urllib.parse import urlsplit

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

from a2a_hub.protocol.errors import A2AError, InvalidRequestError, PermissionDeniedError
from a2a_hub.settings import ServerSettings

__all__ = [
    "HostCheck",
    "cors_middleware",
    "host_allowed",
    "same_origin",
    "trusted_hosts",
]

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


_UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


def _origin_key(scheme: str, netloc: str) -> str:
    """``host[:port]`` in lower case, without the scheme's default port."""
    netloc = netloc.strip().lower()
    default = _DEFAULT_PORTS.get(scheme)
    if default and netloc.endswith(":" + default) and not netloc.endswith("]"):
        netloc = netloc[: -len(default) - 1]
    return netloc


def same_origin(origin: str, host: str, public_url: str | None = None) -> bool:
    """Whether a browser's ``Origin`` is this hub's own: the ``Host`` it called or
    ``public_url``'s origin.  ``null`` (a sandboxed frame, a file) is never."""
    parts = urlsplit(origin.strip())
    if not parts.scheme or not parts.netloc:
        return False
    key = _origin_key(parts.scheme, parts.netloc)
    if key == _origin_key(parts.scheme, host):
        return True
    if public_url:
        public = urlsplit(public_url)
        return parts.scheme == public.scheme and key == _origin_key(public.scheme, public.netloc)
    return False


class HostCheck:
    """Which requests the host and origin rules refuse: a ``Host`` that is not served (400
    JSON / WebSocket close 1008), and a browser's cross-site request that would change
    something (403).

    A request without a ``Host`` header (HTTP/1.0) names no host and is served.  A
    ``POST``/``PUT``/``PATCH``/``DELETE`` or a WebSocket upgrade whose ``Origin`` is another
    site's, not listed in ``cors_origins``, is refused with 403: a page may send a bodiless
    ``POST`` (a REST ``:cancel``) or open a WebSocket (browsers apply no CORS to those)
    without a preflight.  Requests without ``Origin`` (every non-browser client) pass.
    The app's front (:mod:`a2a_hub.server.front`) asks it for every HTTP request and
    WebSocket upgrade; the ``Host`` values already judged are remembered.
    """

    def __init__(
        self, hosts: list[str], origins: list[str] | None = None, public_url: str | None = None
    ) -> None:
        self.hosts = hosts
        self.any = "*" in hosts
        self.origins = {o.rstrip("/").lower() for o in origins or []}
        self.public_url = public_url
        self._judged: dict[bytes, bool] = {}

    def host_ok(self, host: bytes) -> bool:
        """Whether a ``Host`` header value is served."""
        if self.any:
            return True
        known = self._judged.get(host)
        if known is None:
            known = host_allowed(host.decode("latin-1"), self.hosts)
            if len(self._judged) >= 1024:  # forged hosts must not grow it without bound
                self._judged.clear()
            self._judged[host] = known
        return known

    def refusal(
        self, kind: str, method: str | None, host: bytes | None, origin: bytes | None
    ) -> A2AError | None:
        """The error refusing a request with these ``Host`` and ``Origin`` values, if any."""
        if host is not None and not self.host_ok(host):
            shown = host.decode("latin-1")[:100]
            log.debug("refused Host %r (trusted_hosts: %s)", shown, ", ".join(self.hosts))
            return InvalidRequestError(
                f"Host {shown!r} is not served here; add it to the trusted_hosts setting "
                "(A2A_HUB_TRUSTED_HOSTS) or reach the hub by a trusted name",
                data={"host": shown},
            )
        if origin is None or (kind == "http" and method not in _UNSAFE_METHODS):
            return None
        seen = origin.decode("latin-1")
        if self._origin_allowed(seen, None if host is None else host.decode("latin-1")):
            return None
        shown = seen[:100]
        log.debug("refused cross-site %s from Origin %r", kind, shown)
        return PermissionDeniedError(
            f"cross-site request from Origin {shown!r} refused; list it in the "
            "cors_origins setting (A2A_HUB_CORS_ORIGINS) to allow it",
            data={"origin": shown},
        )

    def _origin_allowed(self, origin: str, host: str | None) -> bool:
        if "*" in self.origins or origin.rstrip("/").lower() in self.origins:
            return True
        return host is not None and same_origin(origin, host, self.public_url)


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
