"""The ASGI application: routes for every agent and, for the default agent, at the root."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from a2a_hub.protocol.errors import A2AError, InternalError, PayloadTooLargeError
from a2a_hub.server import rest
from a2a_hub.server.cards import card_bytes, card_headers, legacy_card_bytes, not_modified
from a2a_hub.server.extensions import ExtensionsMiddleware
from a2a_hub.server.hub import HostedAgent, Hub
from a2a_hub.server.jsonrpc import encode_error, handle_rpc, refuse_content_type
from a2a_hub.server.sse import SseReply, sse_response

__all__ = ["SETTINGS_ENV", "app_from_environment", "create_app", "tune_gc"]

#: Environment variable carrying the settings (JSON) to ``--workers`` processes.
SETTINGS_ENV = "A2A_HUB_SETTINGS_JSON"


def tune_gc() -> None:
    """Garbage-collector settings for a long-running server process.

    The defaults collect the youngest generation every 700 allocations, and a busy
    server allocates that many in a handful of requests; each full collection then
    walks every live object, which showed up as p99 latency spikes of 100 ms and
    more.  Everything alive at start-up is frozen (never scanned again) and the
    thresholds are raised.  Called by ``a2a-hub serve``, not by :func:`create_app`,
    so that embedding applications keep their own policy.
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


def app_from_environment() -> Starlette:
    """The app of one ``--workers`` process, built from :data:`SETTINGS_ENV`."""
    import os

    from a2a_hub.settings import Settings

    settings = msgspec.json.decode(os.environ[SETTINGS_ENV], type=Settings)
    tune_gc()
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return create_app(Hub(settings))


log = logging.getLogger("a2a_hub.server")
_enc = msgspec.json.Encoder()

JSON = "application/json"
A2A_JSON = "application/a2a+json"


def _version(request: Request) -> str | None:
    return request.headers.get("a2a-version") or request.query_params.get("A2A-Version")


async def _read_body(request: Request, limit: int) -> bytes:
    length = request.headers.get("content-length")
    if length is not None and length.isdigit():
        if int(length) > limit:
            raise _too_large(int(length), limit)
        return await request.body()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(size, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(size: int, limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"Request body of {size} bytes is over the limit of {limit} bytes "
        "(setting max_body_bytes / A2A_HUB_MAX_BODY_BYTES)",
        data={"limit": limit},
    )


def create_app(hub: Hub) -> Starlette:
    """Build the Starlette app serving ``hub`` (opens and closes the store in its lifespan)."""
    limit = hub.settings.max_body_bytes
    heartbeat = hub.settings.sse_heartbeat

    def base_url(request: Request, agent: HostedAgent | None) -> str:
        root = hub.settings.public_url or str(request.base_url)
        root = root.rstrip("/")
        return root if agent is None else f"{root}/a2a/{agent.id}"

    def locate(request: Request) -> tuple[HostedAgent, str]:
        agent_id = request.path_params.get("agent_id")
        if agent_id is None:
            agent = hub.default_agent()
            return agent, base_url(request, None)
        agent = hub.agent(agent_id)
        return agent, base_url(request, agent)

    # --- JSON-RPC ---------------------------------------------------------------------

    async def rpc(request: Request) -> Response:
        try:
            agent, _ = locate(request)
            body = await _read_body(request, limit)
        except A2AError as err:
            return Response(encode_error(None, err, "1.0"), err.http_status, media_type=JSON)
        refusal = refuse_content_type(request.headers.get("content-type"), body)
        if refusal is not None:
            return Response(refusal, 415, media_type=JSON)
        answer = await handle_rpc(
            agent, body, _version(request), request.headers.get("last-event-id")
        )
        if isinstance(answer, SseReply):
            return sse_response(answer, heartbeat)
        return Response(answer, media_type=JSON)

    # --- cards ------------------------------------------------------------------------

    def card_endpoint(legacy: bool) -> Callable[[Request], Awaitable[Response]]:
        async def card(request: Request) -> Response:
            try:
                agent, url = locate(request)
            except A2AError as err:
                return Response(rest.error_body(err), err.http_status, media_type=JSON)
            body, etag = legacy_card_bytes(agent, url) if legacy else card_bytes(agent, url)
            headers = card_headers(agent, etag)
            if not_modified(request.headers, etag, agent.card_modified):
                return Response(status_code=304, headers=headers)
            return Response(body, media_type=JSON, headers=headers)

        return card

    # --- REST -------------------------------------------------------------------------

    RestFn = Callable[[HostedAgent, Request], Awaitable[Any]]

    def rest_endpoint(fn: RestFn, *, status: int = 200) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                agent, _ = locate(request)
                rest.check_version(_version(request))
                result = await fn(agent, request)
            except A2AError as err:
                log.debug("REST %s: %s", request.url.path, err.message)
                return Response(rest.error_body(err), err.http_status, media_type=JSON)
            except Exception:
                log.exception("REST %s: internal error", request.url.path)
                internal = InternalError()
                return Response(rest.error_body(internal), internal.http_status, media_type=JSON)
            if isinstance(result, SseReply):
                return sse_response(result, heartbeat)
            return Response(_enc.encode(result), status, media_type=A2A_JSON)

        return endpoint

    async def r_send(agent: HostedAgent, request: Request) -> Any:
        return await rest.send(agent, request, await _read_body(request, limit))

    async def r_stream(agent: HostedAgent, request: Request) -> Any:
        return await rest.stream(agent, request, await _read_body(request, limit))

    async def r_subscribe(agent: HostedAgent, request: Request) -> Any:
        return await rest.subscribe(agent, request, request.path_params["task_id"])

    async def r_get(agent: HostedAgent, request: Request) -> Any:
        return await rest.get_task(agent, request, request.path_params["task_id"])

    async def r_list(agent: HostedAgent, request: Request) -> Any:
        return await rest.list_tasks(agent, request)

    async def r_cancel(agent: HostedAgent, request: Request) -> Any:
        body = await _read_body(request, limit)
        return await rest.cancel(agent, request, request.path_params["task_id"], body)

    def r_fail(make: Callable[[HostedAgent], A2AError]) -> RestFn:
        async def fn(agent: HostedAgent, request: Request) -> Any:
            raise make(agent)

        return fn

    # --- misc -------------------------------------------------------------------------

    async def healthz(request: Request) -> Response:
        return Response(
            _enc.encode({"status": "ok", "agents": sorted(hub.agents)}), media_type=JSON
        )

    async def index(request: Request) -> Response:
        root = base_url(request, None)
        agents = [
            {
                "id": a.id,
                "url": f"{root}/a2a/{a.id}",
                "card": f"{root}/a2a/{a.id}/.well-known/agent-card.json",
            }
            for a in hub.agents.values()
        ]
        return Response(
            _enc.encode(
                {"name": "a2a-hub", "defaultAgent": hub.default_agent_id, "agents": agents}
            ),
            media_type=JSON,
        )

    def agent_routes(prefix: str) -> list[BaseRoute]:
        push = r_fail(HostedAgent.push_not_supported)
        return [
            Route(f"{prefix}/.well-known/agent-card.json", card_endpoint(False), methods=["GET"]),
            Route(f"{prefix}/.well-known/agent.json", card_endpoint(True), methods=["GET"]),
            Route(f"{prefix}/message:send", rest_endpoint(r_send), methods=["POST"]),
            Route(f"{prefix}/message:stream", rest_endpoint(r_stream), methods=["POST"]),
            Route(f"{prefix}/tasks", rest_endpoint(r_list), methods=["GET"]),
            Route(f"{prefix}/tasks/{{task_id}}:cancel", rest_endpoint(r_cancel), methods=["POST"]),
            Route(
                f"{prefix}/tasks/{{task_id}}:subscribe",
                rest_endpoint(r_subscribe),
                methods=["GET", "POST"],
            ),
            Route(
                f"{prefix}/tasks/{{task_id}}/pushNotificationConfigs",
                rest_endpoint(push),
                methods=["GET", "POST"],
            ),
            Route(
                f"{prefix}/tasks/{{task_id}}/pushNotificationConfigs/{{config_id}}",
                rest_endpoint(push),
                methods=["GET", "DELETE"],
            ),
            Route(f"{prefix}/tasks/{{task_id}}", rest_endpoint(r_get), methods=["GET"]),
            Route(
                f"{prefix}/extendedAgentCard",
                rest_endpoint(r_fail(HostedAgent.no_extended_card)),
                methods=["GET"],
            ),
            Route(prefix or "/", rpc, methods=["POST"]),
        ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await hub.start()
        try:
            yield
        finally:
            await hub.close()

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/", index, methods=["GET"]),
        *agent_routes("/a2a/{agent_id}"),
        *agent_routes(""),
    ]
    return Starlette(
        routes=routes, lifespan=lifespan, middleware=[Middleware(ExtensionsMiddleware)]
    )
