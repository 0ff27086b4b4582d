"""What a binding leaves in the ASGI scope for the middleware around it, and the A2A versions
served.

The bottom of ``server/``: the bindings (JSON-RPC, SSE), the middleware (metrics, tracing, the
caller) and ``GET /version`` all read these, and this module imports nothing, so no middleware
needs to import a binding or the app.
"""

from __future__ import annotations

__all__ = ["A2A_VERSIONS", "HUB_ROUTE", "SERVED_VERSIONS", "STREAM_KEY", "VERSION_KEY"]

#: Scope key where a binding records the A2A version it served the request in.
VERSION_KEY = "a2a_hub.version"
#: Scope key set by a streaming response: the request histogram skips it.
STREAM_KEY = "a2a_hub.stream"
#: Scope key set (to True) by the mount of the hub's own routes rather than an agent's (the
#: admin API): their caller is identified without any agent's policy, and a refusal there is
#: an HTTP+JSON error, never a JSON-RPC one.
HUB_ROUTE = "a2a_hub.hub_route"

#: The A2A versions served (``GET /version``), newest first.
A2A_VERSIONS = ("1.0", "0.3", "0.2", "0.1")
#: The same, in words, for error messages.
SERVED_VERSIONS = "1.0 and 0.3 (also 0.2), plus the 0.1 legacy methods"
