"""Errors on the wire: the JSON-RPC error object, the HTTP+JSON error body, and the catch-all.

Every binding answers an :class:`A2AError` in its own shape (:func:`encode_error`
for JSON-RPC, :func:`error_body` for REST and the agent cards, either one inside
an SSE ``event: error``).  Anything else that escapes a handler is a bug on our
side: :func:`protocol_error` is the one place that turns it into an
:class:`InternalError`, logging its traceback once, so that the client gets a
protocol error and a JSON body, never a traceback or a bare 500.

Each binding catches in one place and goes through :func:`protocol_error`: JSON-RPC in
:func:`~a2a_hub.server.jsonrpc.handle` (over HTTP and the WebSocket subprotocol
``a2a.jsonrpc.v1``); the HTTP+JSON endpoints (REST, cards, the chat page,
AG-UI until its stream starts) through :func:`protocol_endpoint`; an SSE stream once started
in :mod:`~a2a_hub.server.sse`; a WebSocket in
:meth:`~a2a_hub.server.ws.Connection.report`; an AG-UI stream in its event generator;
gRPC in the servicer's decorators (:mod:`a2a_hub.server.grpc.servicer`).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.datastructures import URL
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import Receive, Scope, Send

from a2a_hub import metrics
from a2a_hub.protocol.errors import (
    A2AError,
    InternalError,
    MethodNotAllowedError,
    RateLimitedError,
    ResourceNotFoundError,
)
from a2a_hub.server.scope import HUB_ROUTE

#: An agent's own URL (its JSON-RPC endpoint) as the app's outer middleware sees it.
_AGENT_URL = re.compile(r"/a2a/[^/]+/?")

__all__ = [
    "JSON",
    "WWW_AUTHENTICATE",
    "challenge",
    "details",
    "encode_error",
    "error_body",
    "error_info",
    "error_reply",
    "http_exception",
    "protocol_endpoint",
    "protocol_error",
    "refuse",
    "rest_error",
]

log = logging.getLogger("a2a_hub.server")

JSON = "application/json"

#: The ``WWW-Authenticate`` header of every 401: a bearer token, or the same key in X-API-Key.
WWW_AUTHENTICATE = 'Bearer realm="a2a-hub", ApiKey realm="a2a-hub" header="X-API-Key"'

_enc = msgspec.json.Encoder()


class _ErrorBody(msgspec.Struct, omit_defaults=True):
    code: int
    message: str
    data: Any = None


class _Err(msgspec.Struct):
    jsonrpc: str
    id: str | int | None
    error: _ErrorBody


def protocol_error(exc: Exception, where: str) -> A2AError:
    """The protocol error to answer for ``exc``, caught by a binding while serving ``where``.

    An :class:`A2AError` is the answer itself (logged at debug level); any other
    exception is unexpected: its traceback is logged once, at error level, and
    the client gets an :class:`InternalError`, which tells nothing of our insides.
    """
    if isinstance(exc, A2AError):
        log.debug("%s: %s %s", where, type(exc).__name__, exc.message)
        _drop_tracebacks(exc)
        return exc
    log.error("%s: internal error", where, exc_info=exc)
    _drop_tracebacks(exc)
    return InternalError()


def _drop_tracebacks(exc: BaseException) -> None:
    """Drop the tracebacks of an answered error and the errors it chains (``__cause__``,
    ``__context__``).  A traceback holds the frames it passed through, and those frames
    hold the request (its body, its params) and often the error itself (``err = exc``):
    a reference cycle that only a full collection frees, which a serving process makes
    rare (``tune_gc``).  Without this, every refused request kept its body alive for
    good: 500 JSON-RPC calls with large metadata held 499 MiB (issue 30 item 16)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = None
        current = current.__cause__ or current.__context__


Endpoint = Callable[[Request], Awaitable[Response]]


def protocol_endpoint(endpoint: Endpoint) -> Endpoint:
    """``endpoint``, answering the HTTP+JSON error of anything it raises (REST routes, cards):
    the catch-all of the HTTP+JSON endpoints."""

    @functools.wraps(endpoint)
    async def answering(request: Request) -> Response:
        try:
            return await endpoint(request)
        except Exception as exc:
            return rest_error(protocol_error(exc, f"{request.method} {request.url.path}"))

    return answering


def error_info(err: A2AError) -> dict[str, Any]:
    """The google.rpc ``ErrorInfo`` detail of an error (1.0 JSON-RPC data, REST details)."""
    return {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": err.reason,
        "domain": "a2a-protocol.org",
        "metadata": {k: str(v) for k, v in (err.data or {}).items()},
    }


def details(err: A2AError) -> list[dict[str, Any]]:
    """The google.rpc details of an error: its ``ErrorInfo``, and a rate limit's
    ``RetryInfo``."""
    found = [error_info(err)]
    if isinstance(err, RateLimitedError):
        found.append(err.retry_info())
    return found


def challenge(scope: Scope, err: A2AError) -> str:
    """The ``WWW-Authenticate`` of a 401: with the agent's RFC 9728 metadata URL
    (``resource_metadata``) when the agent takes OIDC tokens, ``error="invalid_token"``
    when a token was refused."""
    pointer = (err.data or {}).get("resourceMetadata")
    if not pointer:
        return WWW_AUTHENTICATE
    hub = scope["app"].state.hub
    root = hub.settings.server.public_url
    if not root:
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1") or "localhost"
        secure = scope.get("scheme") in ("https", "wss")
        root = f"{'https' if secure else 'http'}://{host}{scope.get('app_root_path', '')}"
    bearer = f'Bearer realm="a2a-hub", resource_metadata="{root.rstrip("/")}{pointer}"'
    if (err.data or {}).get("error") == "invalid_token":
        bearer += ', error="invalid_token"'
    return f'{bearer}, ApiKey realm="a2a-hub" header="X-API-Key"'


def encode_error(req_id: str | int | None, err: A2AError, family: str | None) -> bytes:
    """A JSON-RPC error response for ``err`` (1.x: ``data`` is a list holding its ErrorInfo,
    and a rate limit's RetryInfo; 0.x: the error's data, with the RetryInfo's fields)."""
    metrics.count_error("jsonrpc", err.code, err.reason)
    data: Any = None
    if family == "1.0" or family == "1.1":
        data = details(err)
    elif isinstance(err, RateLimitedError):
        data = {**(err.data or {}), **err.retry_info()}
    elif err.data:
        data = err.data
    return _enc.encode(_Err("2.0", req_id, _ErrorBody(err.code, err.message, data)))


def error_body(err: A2AError) -> bytes:
    """The HTTP+JSON error body of ``err``: ``{"error": {code, status, message, details}}``."""
    metrics.count_error("rest", err.code, err.reason)
    return _enc.encode(
        {
            "error": {
                "code": err.http_status,
                "status": err.grpc_status,
                "message": err.message,
                "details": details(err),
            }
        }
    )


def rest_error(err: A2AError) -> Response:
    """The HTTP+JSON error response of ``err``, with its HTTP status (a rate limit's with
    ``Retry-After``)."""
    response = Response(error_body(err), err.http_status, media_type=JSON)
    if isinstance(err, RateLimitedError):
        response.headers["Retry-After"] = err.retry_after_header
    return response


def _is_jsonrpc(scope: Scope) -> bool:
    """Whether ``scope`` is a ``POST`` to an agent's JSON-RPC endpoint (its own URL, as seen
    inside the agent's mount or from the app's outer middleware)."""
    rest = scope["path"][len(scope.get("root_path", "")) :]
    return (
        scope.get("method") == "POST"
        and not scope.get(HUB_ROUTE)
        and (rest in ("", "/") or _AGENT_URL.fullmatch(rest) is not None)
    )


def error_reply(scope: Scope, err: A2AError, request_id: Any = None) -> Response:
    """The response refusing a request to an agent before any handler ran (e.g. 401 / 403).

    The JSON-RPC endpoint gets a JSON-RPC error with the request's ``id`` (``request_id``,
    read by :func:`refuse`; null when the body named none or could not be read); every
    other route, the hub's own routes (:data:`~a2a_hub.server.scope.HUB_ROUTE`: the admin
    API) included, the HTTP+JSON body.  Both carry the error's HTTP status; a 401 also says
    how to authenticate (``WWW-Authenticate``).
    """
    if _is_jsonrpc(scope):
        body = encode_error(request_id, err, "1.0")
        response = Response(body, err.http_status, media_type=JSON)
    else:
        response = rest_error(err)
    if err.http_status == 401:
        response.headers["WWW-Authenticate"] = challenge(scope, err)
    return response


class _RequestId(msgspec.Struct):
    """The only field of a JSON-RPC request a refusal answers with."""

    id: str | int | None = None


#: The most of a refused JSON-RPC body read to find its ``id``.
_REFUSED_BODY_LIMIT = 1 << 20


async def _request_id(receive: Receive) -> Any:
    """The ``id`` of the JSON-RPC request being received (None: none, unreadable, too big)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _REFUSED_BODY_LIMIT:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    try:
        return msgspec.json.decode(b"".join(chunks), type=_RequestId).id
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


async def refuse(scope: Scope, receive: Receive, send: Send, err: A2AError) -> None:
    """Answer a request (or a WebSocket upgrade) with ``err`` before any handler ran.

    A JSON-RPC request's body is read for its ``id``, which the error answers with.  A
    WebSocket upgrade gets the HTTP answer (:func:`error_reply`) where the server offers
    the ASGI ``websocket.http.response`` extension, else a close with code 1008.
    """
    if scope["type"] == "websocket" and "websocket.http.response" not in scope.get(
        "extensions", {}
    ):
        await send({"type": "websocket.close", "code": 1008, "reason": err.message[:120]})
        return
    request_id = (
        await _request_id(receive) if scope["type"] == "http" and _is_jsonrpc(scope) else None
    )
    await error_reply(scope, err, request_id)(scope, receive, send)


def http_exception(request: Request, exc: Exception) -> Response:
    """The app's answer to Starlette's own refusals: an unknown path or an unserved method.

    A 404 or 405 gets the HTTP+JSON error body (never Starlette's plain text); a path
    that only misses or has one trailing slash too many is redirected (307) to the one
    that exists, with a JSON body saying where.  The routers' own slash redirects are
    off (they answer with an empty body), so this is the one place that does it.
    """
    assert isinstance(exc, HTTPException)
    method, path = request.method, request.url.path
    if exc.status_code == 404:
        target = _slash_twin(request)
        if target is not None:
            body = _enc.encode({"redirect": str(target)})
            return Response(body, 307, headers={"Location": str(target)}, media_type=JSON)
        return rest_error(ResourceNotFoundError(f"No route {method} {path} here"))
    if exc.status_code == 405:
        allow = (exc.headers or {}).get("Allow", "")
        response = rest_error(
            MethodNotAllowedError(f"{method} is not served at {path}; allowed: {allow}")
        )
        response.headers["Allow"] = allow
        return response
    body = _enc.encode(
        {"error": {"code": exc.status_code, "status": "UNKNOWN", "message": exc.detail}}
    )
    return Response(body, exc.status_code, headers=exc.headers, media_type=JSON)


def _slash_twin(request: Request) -> URL | None:
    """The request's URL with its trailing slash toggled, if the app routes that path."""
    scope = request.scope
    path = scope["path"]
    if scope["type"] != "http" or path in ("", "/"):
        return None
    twin = {
        **scope,
        "path": path.rstrip("/") if path.endswith("/") else path + "/",
        "root_path": scope.get("app_root_path", ""),  # the mounts traversed changed root_path
    }
    if not _routable(request.app.router.routes, twin):
        return None
    return URL(scope=twin)


def _routable(routes: list[BaseRoute], scope: Scope) -> bool:
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.NONE:
            continue
        if isinstance(route, Mount):
            if _routable(route.routes, {**scope, **child}):
                return True
            continue
        return True
    return False
