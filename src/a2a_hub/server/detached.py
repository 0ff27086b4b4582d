"""Long-lived answers (SSE streams, WebSockets) run outside the middleware stack.

A request's coroutine sits at the bottom of a stack of others: Starlette's error and
exception layers, the hub's middleware (metrics, trusted hosts, extensions, the caller),
the mounts, the route, ``request_response``.  Each is a suspended coroutine with its frame,
closures and cells, about 9 KiB per request in all.  Nobody minds for a request that lasts a
millisecond; for ten thousand idle SSE subscriptions or WebSockets it was a third of their
memory.

:class:`DetachedRunner` is the outermost middleware of the app.  A response that will last
(:class:`~a2a_hub.server.sse.SseResponse` once its headers are sent, the WebSocket endpoint
once the socket is accepted) hands the rest of its work to :func:`detach` and returns: every
layer in between returns as it would after a short request, and the runner, still in the
same asyncio task (same context variables, same ASGI ``receive``/``send``, which are plain
closures), awaits the rest.  Under ``a2a-hub serve`` the runner's work is done further
out: by each HTTP request's cycle (:class:`~a2a_hub.server.http_cycle.Cycle`, through
:func:`begin_detached` and :func:`take_detached`) and by a runner around uvicorn's app for
WebSockets (:mod:`a2a_hub.server.connections`); the outermost one runs the rest, and the
app's own stands aside.  Without a runner around it (an app built otherwise),
:func:`detach` says so and the response runs the rest inline, as before.

What the layers in between see: a request that ended after its response started.  The
metrics middleware skips streams anyway (``STREAM_KEY``); its access log and a tracing span
of a stream end when the stream starts, not when it ends.

A detached rest that reads nothing of the request's headers says so (``headers_done``): the
runner empties the scope's header list (in place: the copies of the scope the layers made
share it, and so does uvicorn's, which reads only the client, method and path of it from
then on) before it runs the rest, so that an idle stream or socket does not keep them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

__all__ = [
    "DETACH_KEY",
    "DetachedRunner",
    "begin_detached",
    "detach",
    "end_detached",
    "take_detached",
]

#: Key in ``scope["state"]``: ``None`` while a runner is around, then the detached work.
DETACH_KEY = "a2a_hub.detached"
#: Key in ``scope["state"]``: present when the detached work reads no request header.
_HEADERS_DONE_KEY = "a2a_hub.detached.headers_done"

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]


class DetachedRunner:
    """The outermost middleware: after the app returns, runs what it left to :func:`detach`."""

    __slots__ = ("app",)

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        state = scope.get("state")
        if state is None or scope["type"] == "lifespan" or DETACH_KEY in state:
            await self.app(scope, receive, send)  # none possible, or a runner outside this one
            return
        begin_detached(scope)
        try:
            await self.app(scope, receive, send)
        except BaseException:
            end_detached(scope)
            raise
        rest = take_detached(scope)
        if rest is not None:
            await rest()


def begin_detached(scope: Any) -> None:
    """A runner is around the app of ``scope`` from now on (what :class:`DetachedRunner`
    does before the app; uvicorn's request cycle of ``a2a-hub serve`` does it too)."""
    state = scope.get("state")
    if state is not None:
        state[DETACH_KEY] = None


def take_detached(scope: Any) -> Callable[[], Awaitable[None]] | None:
    """The app returned: the rest it detached (``None``: nothing), to run now; the
    request's headers emptied first when the rest said it reads none."""
    state = scope.get("state")
    if state is None:
        return None
    rest: Callable[[], Awaitable[None]] | None = state.pop(DETACH_KEY, None)
    if rest is not None and state.pop(_HEADERS_DONE_KEY, False):
        headers = scope.get("headers")
        if isinstance(headers, list):
            headers.clear()
    return rest


def end_detached(scope: Any) -> None:
    """The app failed: no runner any more (a rest detached is dropped)."""
    state = scope.get("state")
    if state is not None:
        state.pop(DETACH_KEY, None)
        state.pop(_HEADERS_DONE_KEY, None)


def detach(scope: Any, rest: Callable[[], Awaitable[None]], *, headers_done: bool = False) -> bool:
    """Leave ``rest`` to the :class:`DetachedRunner` around the app, to run once the stack
    has returned: ``True``, the caller returns at once; ``False`` (no runner, or something
    is detached already), the caller runs ``rest`` itself.  ``headers_done``: ``rest``
    reads no request header (the runner empties the scope's list before running it)."""
    state = scope.get("state")
    if state is None or DETACH_KEY not in state or state[DETACH_KEY] is not None:
        return False
    state[DETACH_KEY] = rest
    if headers_done:
        state[_HEADERS_DONE_KEY] = True
    return True
