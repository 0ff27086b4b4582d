"""What a binding leaves in the ASGI scope for the middleware around it, and the A2A versions
served.

The bottom of ``server/``: the bindings (JSON-RPC, SSE), the middleware (metrics, tracing, the
caller) and ``GET /version`` all read these, and this module imports nothing, so no middleware
needs to import a binding or the app.
"""

from __future__ import annotations

__all__ = [
    "A2A_VERSIONS",
    "HUB_ROUTE",
    "JOINED",
    "PREVIEW_1_1",
    "SERVED_VERSIONS",
    "STREAM_KEY",
    "VERSION_KEY",
    "preview",
]

#: Scope key where a binding records the A2A version it served the request in.
VERSION_KEY = "a2a_hub.version"
#: Scope key set by a streaming response: the request histogram skips it.
STREAM_KEY = "a2a_hub.stream"
#: :data:`STREAM_KEY`'s value when the stream's first body bytes follow its start at once:
#: the connection writes its headers with them (:mod:`a2a_hub.server.connections`).  A value,
#: not a key of its own: one key more took a stream's scope dict to its next size (about
#: 0.4 KiB per idle SSE stream, kept as long as the stream).
JOINED = "joined"
#: Scope key set (to True) by the mount of the hub's own routes rather than an agent's (the
#: admin API): their caller is identified without any agent's policy, and a refusal there is
#: an HTTP+JSON error, never a JSON-RPC one.
HUB_ROUTE = "a2a_hub.hub_route"

#: The A2A versions served (``GET /version``), newest first; 1.1 is a preview of the
#: ``dev-1.1`` branch of a2aproject/A2A (:data:`PREVIEW_1_1`).
A2A_VERSIONS = ("1.1", "1.0", "0.3", "0.2", "0.1")
#: The same, in words, for error messages.
SERVED_VERSIONS = "1.0 and 0.3 (also 0.2), the 1.1 preview, plus the 0.1 legacy methods"
#: The commit of a2aproject/A2A's ``dev-1.1`` branch whose 1.1 fields are served (PR #1810,
#: ``generation``) to requests with ``A2A-Version: 1.1``.
PREVIEW_1_1 = "28491879ff41a9c230fb51f3f7bd6096b80cc341"


def preview(version: str | None) -> bool:
    """True for ``A2A-Version: 1.1`` (the 1.1 preview: ``generation``, see
    :mod:`a2a_hub.engine.generation`)."""
    if not version:
        return False
    major, _, minor = version.strip().partition(".")
    return major == "1" and minor.partition(".")[0] == "1"
