"""Who is calling: a pure ASGI middleware builds the request's :class:`Caller` once.

Every agent route (``/a2a/{agent_id}/…`` and the root alias of the default agent) and
the admin API (``/admin/v1``) run behind the same agent middleware list, whose
:class:`CallerMiddleware` stores the caller in ``scope["state"]["caller"]``; the
bindings read it back with :func:`caller_of` and hand it to every engine method
(``caller=``), and the admin API checks its scopes.  Nothing else decides who calls.

The hook for authentication
---------------------------
:meth:`CallerMiddleware.identify` answers :data:`ANONYMOUS`.  The hub's default
middleware is :class:`a2a_hub.server.auth.ApiKeyMiddleware`, a subclass whose
``identify`` reads the request's API key and applies the hub's key policy
(``hub.auth``, see :mod:`a2a_hub.server.auth`).  To authenticate otherwise, subclass
:class:`CallerMiddleware` and give it to :func:`a2a_hub.server.create_app`
(``agent_middleware=[Middleware(MyMiddleware, ...)]``)::

    class HeaderMiddleware(CallerMiddleware):
        async def identify(self, scope: Scope) -> Caller:
            user = Headers(scope=scope).get("x-user")       # set by a trusted proxy
            if user is None:
                raise UnauthenticatedError("no user")       # an A2AError: 401
            return Caller(principal=user, scopes=frozenset({"invoke"}))

When ``identify`` raises an :class:`A2AError` the request is refused with the error's
HTTP status and a protocol error body (:func:`a2a_hub.server.errors.error_reply`); no
handler runs.  The agent id of the route is in ``scope["path_params"]`` (absent for
the root alias, which serves the hub's default agent, and for the hub's own routes,
which carry :data:`HUB_ROUTE` in their scope).  Only HTTP requests and WebSocket
upgrades get a caller; a refused WebSocket upgrade is refused before it is accepted:
with the error's own HTTP answer (401 / 403 and the error body) where the server
offers the ASGI ``websocket.http.response`` extension (uvicorn does), else closed with
code 1008 (the client sees HTTP 403).  A browser cannot set headers on a WebSocket:
it sends its key in the query string or as a subprotocol ``a2a-key.<key>`` beside
``a2a-hub`` (``scope["subprotocols"]``), which ``identify`` may read (see
:mod:`a2a_hub.server.ws`).
"""

from __future__ import annotations

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from a2a_hub.engine.caller import ANONYMOUS, Caller
from a2a_hub.protocol.errors import A2AError, UnauthenticatedError
from a2a_hub.server.errors import refuse
from a2a_hub.server.scope import HUB_ROUTE

__all__ = ["HUB_ROUTE", "KEY_IN_FIRST_FRAME", "CallerMiddleware", "caller_of", "put_caller"]

#: The ``scope["state"]`` flag of a WebSocket upgrade to an agent that requires keys,
#: made without one: the socket's first frame must carry it, and until then the
#: request has no caller (:func:`caller_of` refuses it).
KEY_IN_FIRST_FRAME = "key_in_first_frame"


def put_caller(scope: Scope, caller: Caller) -> None:
    """Record the request's caller where the handlers read it: ``scope["state"]["caller"]``."""
    state = scope.get("state")
    if state is None:
        scope["state"] = {"caller": caller}
    else:
        state["caller"] = caller


class CallerMiddleware:
    """Pure ASGI middleware: ``scope["state"]["caller"]`` = :meth:`identify` of the request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            try:
                caller = await self.identify(scope)
            except A2AError as err:
                await refuse(scope, receive, send, err)
                return
            put_caller(scope, caller)
        await self.app(scope, receive, send)

    async def identify(self, scope: Scope) -> Caller:
        """The caller behind this request, or an :class:`A2AError` (401, 403) to refuse it.

        Here: :data:`ANONYMOUS`, every request (subclasses authenticate).
        """
        return ANONYMOUS


def caller_of(request: HTTPConnection) -> Caller:
    """The caller :class:`CallerMiddleware` found for this request.

    A route outside the middleware has no caller: that is a wiring bug, and it
    fails (``KeyError``, answered as an internal error) rather than defaulting to
    :data:`ANONYMOUS`, which sees every task.
    """
    state = request.scope["state"]
    if state.get(KEY_IN_FIRST_FRAME):
        raise UnauthenticatedError("send the API key first")
    caller: Caller = state["caller"]
    return caller
