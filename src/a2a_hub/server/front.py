"""The app's front: one pure-ASGI layer around every request, serving the busiest routes itself.

Every request reaches :class:`Front` first (only tracing, when on, wraps it).  It reads the
request's headers once and does, in one layer, what were three middlewares:

* it times the request into the request histogram and writes the access log
  (:class:`~a2a_hub.server.metrics.RequestMetrics`);
* it refuses an untrusted ``Host``, and a cross-site ``Origin`` on a request that changes
  something or a WebSocket upgrade (:class:`~a2a_hub.server.hosts.HostCheck`);
* it keeps the extensions the request asks for (``A2A-Extensions``) for the sends it serves
  and echoes the activated ones in the response (:mod:`a2a_hub.server.extensions`).

Then it serves the hot routes itself: ``POST`` on an agent's URL (JSON-RPC,
:func:`~a2a_hub.server.jsonrpc.answer`) and the REST ``message:send`` and ``message:stream``,
under ``/a2a/{agent_id}`` and at the root alias.  That skips Starlette's router, the agent
mount, the route, its request/response wrapper and exception layers, which cost more than
the JSON-RPC binding itself; the scope is left as the router and the mount would leave it
(``path_params``, ``root_path``, ``endpoint``; the bare agent URL served as the mount's
``/``), the caller is identified by the agent middleware's own ``identify``, and a failure
escaping it is answered as Starlette's ``ServerErrorMiddleware`` does (500, then raised).
A request takes this path only where the answer is the same: an HTTP ``POST`` to one of
those paths, an app not mounted under a prefix (no ``root_path``), no header name repeated,
no CORS configured (its middleware adds headers to every answer), and an agent middleware
list that is one plain :class:`~a2a_hub.server.caller.CallerMiddleware` (the default
``ApiKeyMiddleware``); every other request goes to Starlette's stack
(``ServerErrorMiddleware``, CORS when configured, ``ExceptionMiddleware``, the router) as
before.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from a2a_hub import metrics
from a2a_hub.protocol.errors import A2AError
from a2a_hub.server import rest
from a2a_hub.server.caller import CallerMiddleware, put_caller
from a2a_hub.server.errors import JSON, refuse
from a2a_hub.server.extensions import HEADER_KEYS, RequestExtensions, requested_by, served, serving
from a2a_hub.server.hosts import HostCheck
from a2a_hub.server.http import hub_of
from a2a_hub.server.jsonrpc import answer, rpc
from a2a_hub.server.metrics import RequestMetrics
from a2a_hub.server.sse import SseReply, sse_response

__all__ = ["Front", "plain_caller_middleware"]

#: The hot routes inside an agent's URL (``None``: the bare URL) -> their endpoint.
HOT_ROUTES: dict[str | None, Any] = {
    None: rpc,
    "/": rpc,
    "/message:send": rest.send_message,
    "/message:stream": rest.send_streaming_message,
}
_JSON = JSON.encode()


def plain_caller_middleware(middleware: Sequence[Middleware]) -> type[CallerMiddleware] | None:
    """The :class:`CallerMiddleware` class of an agent middleware list that is only that
    (no arguments, its ``__call__`` not overridden), whose ``identify`` the front may call
    itself; ``None`` for any other list."""
    if len(middleware) != 1:
        return None
    cls, args, kwargs = middleware[0]
    if (
        isinstance(cls, type)
        and issubclass(cls, CallerMiddleware)
        and cls.__call__ is CallerMiddleware.__call__
        and not args
        and not kwargs
    ):
        return cls
    return None


def _last_values(headers: Iterable[tuple[bytes, bytes]]) -> tuple[bytes | None, bytes | None]:
    """The ``Host`` and ``Origin`` of a header list, the last of each winning."""
    host = origin = None
    for name, value in headers:
        if name == b"host":
            host = value
        elif name == b"origin":
            origin = value
    return host, origin


class Front:
    """The hub's outer layer (see the module's docstring); ``app`` is Starlette's stack."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        router: Any,
        requests: RequestMetrics,
        hosts: HostCheck,
        cors: bool,
        caller: type[CallerMiddleware] | None,
    ) -> None:
        self.app = app
        self.router = router
        self.requests = requests
        self.hosts = hosts
        self.identify = caller(app).identify if caller is not None else None
        #: Whether the hot routes may be served here (else every request takes the stack).
        self.direct = caller is not None and not cors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http":
            if kind == "websocket":
                err = self.hosts.refusal(kind, None, *_last_values(scope["headers"]))
                if err is not None:
                    await refuse(scope, receive, send, err)
                    return
            await self.app(scope, receive, send)
            return
        raw = scope["headers"]
        if not isinstance(raw, list | tuple):  # ASGI allows any iterable: read it once
            raw = scope["headers"] = list(raw)
        headers = dict(raw)
        unique = len(headers) == len(raw)
        if unique:
            host, origin = headers.get(b"host"), headers.get(b"origin")
            asks = HEADER_KEYS[0] in headers or HEADER_KEYS[1] in headers
        else:
            host, origin = _last_values(raw)
            asks = True
        requests = self.requests
        timed = requests.active
        start = time.perf_counter() if timed else 0.0
        notes: dict[str, Any] | None = None
        if requests.logs:
            notes = {}
            noted = metrics.request_notes.set(notes)
        status = [500]  # the response's, once it starts
        try:
            err = self.hosts.refusal(kind, scope["method"], host, origin)
            if err is not None:
                status[0] = err.http_status
                await refuse(scope, receive, send, err)
                return
            current = requested_by(raw) if asks else None
            token = serving(current) if current is not None else None
            try:
                endpoint = None
                if (
                    self.direct
                    and unique
                    and scope["method"] == "POST"
                    and not scope.get("root_path")
                ):
                    endpoint = self._route(scope)
                if endpoint is None:
                    await self._stack(scope, receive, send, current, status)
                else:
                    await self._hot(scope, receive, send, endpoint, headers, current, status)
            finally:
                if token is not None:
                    served(token)
        finally:
            if requests.logs:
                metrics.request_notes.reset(noted)
            if timed:
                requests.done(scope, status[0], time.perf_counter() - start, notes)

    async def _stack(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        current: RequestExtensions | None,
        status: list[int],
    ) -> None:
        """Starlette's stack, the response's status noted in ``status``."""

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                echo = current.echo() if current is not None else None
                if echo is not None:
                    message = {**message, "headers": [*message.get("headers", ()), echo]}
            await send(message)

        await self.app(scope, receive, sent)

    def _route(self, scope: Scope) -> Any:
        """The endpoint of a hot route, the scope updated as the router and the agent mount
        would; ``None`` for any other path (the scope untouched)."""
        path: str = scope["path"]
        if path.startswith("/a2a/"):
            slash = path.find("/", 5)
            agent_id = path[5:] if slash < 0 else path[5:slash]
            if not agent_id:
                return None
            tail = None if slash < 0 else path[slash:]
        else:
            agent_id, tail = None, path
        endpoint = HOT_ROUTES.get(tail)
        if endpoint is None or (agent_id is None and tail is None):
            return None
        found = scope.get("path_params")
        params = dict(found) if found else {}
        scope.setdefault("router", self.router)
        scope["app_root_path"] = scope.get("app_root_path", "")
        if agent_id is not None:
            params["agent_id"] = agent_id
            if tail is None:  # the bare agent URL: served as the mount's "/"
                scope["root_path"] = path
                scope["path"] = path + "/"
            else:
                scope["root_path"] = path[: len(path) - len(tail)]
        else:
            scope["root_path"] = ""
        scope["path_params"] = params
        scope["endpoint"] = endpoint
        return endpoint

    async def _hot(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        endpoint: Any,
        headers: dict[bytes, bytes],
        current: RequestExtensions | None,
        status: list[int],
    ) -> None:
        """A hot route's answer, as the agent mount's stack would give it; the response's
        status noted in ``status``."""
        started = False
        try:
            assert self.identify is not None
            try:
                caller = await self.identify(scope)
            except A2AError as err:
                started = True
                status[0] = err.http_status
                await refuse(scope, receive, send, err)
                return
            put_caller(scope, caller)
            request = Request(scope, receive)
            response: Response
            if endpoint is rpc:
                answered = await answer(request, headers)
                reply = answered.reply
                if isinstance(reply, SseReply):
                    heartbeat = hub_of(request).settings.server.sse_heartbeat
                    response = sse_response(reply, heartbeat)
                else:
                    raw = [
                        (b"content-length", str(len(reply)).encode()),
                        (b"content-type", _JSON),
                        *answered.headers,
                    ]
                    echo = current.echo() if current is not None else None
                    if echo is not None:
                        raw.append(echo)
                    started = True
                    status[0] = answered.status
                    await send(
                        {"type": "http.response.start", "status": answered.status, "headers": raw}
                    )
                    await send({"type": "http.response.body", "body": reply})
                    return
            else:
                response = await endpoint(request)
            started = True
            status[0] = response.status_code
            await response(scope, receive, send if current is None else _echoing(send, current))
        except Exception:
            if not started:  # as Starlette's ServerErrorMiddleware
                await PlainTextResponse("Internal Server Error", 500)(scope, receive, send)
            raise


def _echoing(send: Send, current: RequestExtensions) -> Send:
    """``send`` adding the activated extensions to the response's headers."""

    async def sent(message: Message) -> None:
        if message["type"] == "http.response.start":
            echo = current.echo()
            if echo is not None:
                message = {**message, "headers": [*message.get("headers", ()), echo]}
        await send(message)

    return sent
