"""The ASGI application: every agent under ``/a2a/{agent_id}``, the default agent at the root.

Layout of :func:`create_app`'s routes::

    GET  /healthz                       liveness and the hosted agent ids
    GET  /readyz                        readiness: the store and coordinator answer (else 503)
    GET  /version                       versions of a2a-hub, A2A and Python
    GET  /metrics                       Prometheus metrics (unless settings.server.metrics off)
    GET  /ui, /ui/{file}, /ui/api/…     the web console (server/console/; unless --no-ui)
    GET  /                              index of the hosted agents
    /admin/v1        (HubMount)         the admin API (server/admin.py; an admin key),
                                        behind the agent middleware list
    /llm/v1          (HubMount)         the hub's LLM, OpenAI-compatible (server/llm_api.py),
                                        behind the same list (a key when auth is on)
    GET  /.well-known/jwks.json         keys that sign push notifications (also per agent)
    GET  /.well-known/ai-catalog.json   the agents the caller may reach, public MCP servers
    GET  /.well-known/oauth-protected-resource/a2a/{agent_id}
                                        RFC 9728 metadata of an agent taking OIDC tokens
    /a2a/{agent_id}  (AgentMount)       the agent's routes, behind the agent middleware
    ""               (AgentMount)       the same routes for the default agent (root alias)

Each agent mount runs the same middleware list (by default
:class:`~a2a_hub.server.auth.ApiKeyMiddleware` alone, a :class:`CallerMiddleware` that
decides who calls), so authentication is one middleware away.  The
admin API's mount runs the same list, so its caller is built the same way.  The
routes of an agent (:data:`AGENT_ROUTES`) are module-level endpoints that find the
hub in ``request.app.state.hub`` and the agent per request, so agents added to or
removed from the hub while it serves are found, or not, at once.  Around everything
(only tracing, when on, outside it), :class:`~a2a_hub.server.front.Front` times each
request, refuses untrusted ``Host`` headers (:mod:`a2a_hub.server.hosts`), reads the
``A2A-Extensions`` header and echoes the extensions a send activated, and serves the
busiest routes (JSON-RPC on an agent's URL, REST ``message:send`` and ``message:stream``)
itself, as the router, the mount and its middleware would; the rest goes through Starlette's
stack (CORS there when ``cors_origins`` is set).  The app's lifespan starts and stops the
services (:func:`app_services`: the hub's, the gRPC binding among them when ``grpc_port``
is set, then the drain and the retention job).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any
from urllib.parse import quote

import msgspec
from starlette._utils import get_route_path
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import (
    BaseRoute,
    Match,
    Mount,
    Route,
    Router,
    WebSocketRoute,
    compile_path,
)
from starlette.types import ASGIApp, Scope

from a2a_hub import metrics, tracing
from a2a_hub._logging import configure_logging
from a2a_hub.server import rest
from a2a_hub.server.admin import ADMIN_ROUTES
from a2a_hub.server.agui import ag_ui_run
from a2a_hub.server.auth import ApiKeyMiddleware
from a2a_hub.server.cards import agent_card, jwks, legacy_agent_card
from a2a_hub.server.chat import chat_asset, chat_page
from a2a_hub.server.console import UI_API_ROUTES, UI_PAGE_ROUTES
from a2a_hub.server.conversations import context_messages
from a2a_hub.server.detached import DetachedRunner
from a2a_hub.server.discovery import ai_catalog, protected_resource
from a2a_hub.server.errors import JSON, http_exception
from a2a_hub.server.front import Front, plain_caller_middleware
from a2a_hub.server.health import healthz, readyz, version
from a2a_hub.server.hosts import HostCheck, cors_middleware, trusted_hosts
from a2a_hub.server.http import base_url, hub_of
from a2a_hub.server.hub import Hub
from a2a_hub.server.jsonrpc import rpc
from a2a_hub.server.lifecycle import Service, run_services
from a2a_hub.server.llm_api import LLM_ROUTES, HubTokenMiddleware
from a2a_hub.server.metrics import RequestMetrics, RouteLabels, metrics_endpoint
from a2a_hub.server.retention import Retention
from a2a_hub.server.scope import HUB_ROUTE
from a2a_hub.server.shutdown import Drain
from a2a_hub.server.tracing import TracingMiddleware
from a2a_hub.server.watchdog import LoopWatchdog
from a2a_hub.server.ws import websocket_endpoint

__all__ = [
    "AGENT_ROUTES",
    "SETTINGS_ENV",
    "AgentMount",
    "HubApp",
    "HubMount",
    "app_from_environment",
    "app_services",
    "create_app",
    "tune_gc",
]

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
    configure_logging(
        settings.server.log_level, settings.server.log_format, settings.server.access_log
    )
    return create_app(Hub(settings), drain=Drain(settings.server.graceful_timeout))


_enc = msgspec.json.Encoder()

#: The routes of one agent, relative to its URL (``/a2a/{agent_id}`` or the root).
#: JSON-RPC comes first: it is the busiest route.
AGENT_ROUTES: list[BaseRoute] = [
    Route("/", rpc, methods=["POST"]),
    Route("/.well-known/agent-card.json", agent_card, methods=["GET"]),
    Route("/.well-known/agent.json", legacy_agent_card, methods=["GET"]),
    Route("/.well-known/jwks.json", jwks, methods=["GET"]),
    Route("/message:send", rest.send_message, methods=["POST"]),
    Route("/message:stream", rest.send_streaming_message, methods=["POST"]),
    Route("/tasks", rest.list_tasks, methods=["GET"]),
    Route("/tasks/{task_id}:cancel", rest.cancel_task, methods=["POST"]),
    Route("/tasks/{task_id}:subscribe", rest.subscribe, methods=["GET", "POST"]),
    Route("/tasks/{task_id}/pushNotificationConfigs", rest.push_config, methods=["GET", "POST"]),
    Route(
        "/tasks/{task_id}/pushNotificationConfigs/{config_id}",
        rest.push_config,
        methods=["GET", "DELETE"],
    ),
    Route("/tasks/{task_id}", rest.get_task, methods=["GET"]),
    Route("/extendedAgentCard", rest.extended_card, methods=["GET"]),
    Route("/contexts/{context_id}/messages", context_messages, methods=["GET"]),
    WebSocketRoute("/ws", websocket_endpoint),
    Route("/chat", chat_page, methods=["GET"]),
    Route("/ag-ui", ag_ui_run, methods=["POST"]),
    Route("/chat/{asset}", chat_asset, methods=["GET"]),
]


def _route_labels(routes: Sequence[BaseRoute]) -> RouteLabels:
    """The request metrics' labels of the agent routes: endpoint -> (template, binding)."""
    found: dict[Any, tuple[str, str]] = {}
    for route in routes:
        endpoint = getattr(route, "endpoint", None)
        path = getattr(route, "path", "")
        if endpoint is None or endpoint in found:
            continue
        if endpoint is rpc:
            binding = "jsonrpc"
        elif getattr(endpoint, "__module__", "") == rest.__name__:
            binding = "rest"
        else:
            binding = "card"
        found[endpoint] = (path, binding)
    return found


def _router(routes: Sequence[BaseRoute]) -> Router:
    """A mount's router: unknown paths are the app's 404 (JSON, slash redirects included)."""
    return Router(routes=list(routes), redirect_slashes=False)


class HubMount(Mount):
    """A :class:`Mount` of routes of the hub itself, not of an agent (the admin API).

    It runs the same middleware list as the agent mounts, with :data:`HUB_ROUTE` in the
    scope so that the caller is identified without any agent's policy.
    """

    def __init__(
        self,
        path: str,
        routes: Sequence[BaseRoute],
        *,
        middleware: Sequence[Middleware] | None = None,
    ) -> None:
        super().__init__(path, app=_router(routes), middleware=middleware)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """As a Mount, marking the child scope as the hub's own route."""
        match, child = super().matches(scope)
        if match is not Match.NONE:
            child[HUB_ROUTE] = True
        return match, child


class AgentMount(Mount):
    """A :class:`Mount` of the agent routes that also answers at its bare prefix.

    A plain Mount at ``/a2a/{agent_id}`` matches only ``/a2a/echo/…``, and the
    router would answer ``POST /a2a/echo`` (the agent's URL, as its card says)
    with a 307 redirect to ``/a2a/echo/``.  Here the bare prefix is the mount's
    own ``/`` route, so ``POST /a2a/echo`` and ``POST /a2a/echo/`` both reach
    JSON-RPC directly.

    With ``claim_unknown=False`` (the root alias, mounted at ``""``, which would
    otherwise swallow every path) the mount claims only the paths one of its
    routes matches, so that the app's other routes keep their own 404, 405 and
    trailing-slash redirects.
    """

    def __init__(
        self,
        path: str,
        routes: Sequence[BaseRoute],
        *,
        middleware: Sequence[Middleware] | None = None,
        claim_unknown: bool = True,
    ) -> None:
        super().__init__(path, app=_router(routes), middleware=middleware)
        prefix = compile_path(self.path)[0].pattern.removesuffix("$") if self.path else "^"
        self._regex = re.compile(prefix + "(?P<_rest>/.*)?$")
        self._claim_unknown = claim_unknown

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """Match ``prefix`` and ``prefix/…``; the child scope is the mount's, as for a Mount."""
        if scope["type"] not in ("http", "websocket"):
            return Match.NONE, {}
        route_path = get_route_path(scope)
        found = self._regex.match(route_path)
        if found is None:
            return Match.NONE, {}
        params = found.groupdict()
        rest_path = params.pop("_rest")
        path_params = dict(scope.get("path_params", ()))
        for name, value in params.items():
            path_params[name] = self.param_convertors[name].convert(value)
        root_path = scope.get("root_path", "")
        child: Scope = {
            "path_params": path_params,
            "app_root_path": scope.get("app_root_path", root_path),
            "endpoint": self.app,
        }
        if rest_path is None:  # the bare prefix: served as the mount's "/"
            child["root_path"] = root_path + route_path
            child["path"] = scope["path"] + "/"
        else:
            child["root_path"] = root_path + route_path[: len(route_path) - len(rest_path)]
        if self._claim_unknown:
            return Match.FULL, child
        return self._inner_match({**scope, **child}), child

    def _inner_match(self, scope: Scope) -> Match:
        best = Match.NONE
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return match
            if match is Match.PARTIAL:
                best = match
        return best


class HubApp(Starlette):
    """Starlette with the hub's :class:`~a2a_hub.server.front.Front` (and tracing, when on)
    outside its middleware stack: :attr:`front` wraps the stack Starlette builds
    (``ServerErrorMiddleware``, CORS when configured, ``ExceptionMiddleware``, the router)."""

    front: Callable[[ASGIApp], ASGIApp] | None = None

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        return stack if self.front is None else self.front(stack)


async def index(request: Request) -> Response:
    """``GET /``: the hosted agents with their URLs and cards, and the default agent."""
    hub = hub_of(request)
    root = base_url(request, hub, None)
    agents = [
        {
            "id": a.id,
            "url": f"{root}/a2a/{quote(a.id, safe='')}",
            "card": f"{root}/a2a/{quote(a.id, safe='')}/.well-known/agent-card.json",
        }
        for a in hub.agents.values()
    ]
    return Response(
        _enc.encode({"name": "a2a-hub", "defaultAgent": hub.default_agent_id, "agents": agents}),
        media_type=JSON,
    )


def app_services(hub: Hub, drain: Drain | None) -> list[Service]:
    """The services of an app serving ``hub``, in the order they start (they stop in the
    reverse order): the hub's own (:meth:`Hub.services`), then the drain (at shutdown it
    lets running tasks finish before the hub's services stop) and the retention job."""
    services = hub.services()
    if drain is not None:
        services.append(drain.serving(hub))
    services.append(Retention(hub, hub.settings.store.task_ttl))
    services.append(LoopWatchdog(hub))  # a blocking agent is named in the log
    return services


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Start the app's services (:func:`app_services`) and stop them at shutdown; a
    service that fails to start stops those started before it."""
    async with contextlib.AsyncExitStack() as stack:
        await run_services(stack, app_services(app.state.hub, app.state.drain))
        yield


def create_app(
    hub: Hub,
    *,
    agent_middleware: Sequence[Middleware] | None = None,
    drain: Drain | None = None,
) -> Starlette:
    """Build the Starlette app serving ``hub`` (opens and closes the store in its lifespan).

    ``agent_middleware`` is the middleware list of every agent route (both mounts);
    by default ``[Middleware(ApiKeyMiddleware)]`` (API keys, see :mod:`a2a_hub.server.auth`;
    every request is anonymous on an open hub).  It must put the request's caller in
    ``scope["state"]["caller"]``: give a subclass of :class:`CallerMiddleware` (see
    :mod:`a2a_hub.server.caller`) to authenticate otherwise.

    ``drain`` (given by ``a2a-hub serve``) makes SIGTERM/SIGINT a graceful shutdown
    (see :mod:`a2a_hub.server.shutdown`); without it the app leaves signals alone
    and its shutdown fails running tasks at once.
    """
    middleware = (
        list(agent_middleware) if agent_middleware is not None else [Middleware(ApiKeyMiddleware)]
    )
    server = hub.settings.server
    if not server.metrics:
        metrics.disable()
    # the agents' mount first: nearly every request is for an agent, and each route tried
    # before the one that matches costs a regular-expression match
    routes: list[BaseRoute] = [
        AgentMount("/a2a/{agent_id}", AGENT_ROUTES, middleware=middleware),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/version", version, methods=["GET"]),
        Route("/", index, methods=["GET"]),
        HubMount("/admin/v1", ADMIN_ROUTES, middleware=middleware),
        HubMount("/llm/v1", LLM_ROUTES, middleware=[Middleware(HubTokenMiddleware), *middleware]),
        Route("/.well-known/jwks.json", jwks, methods=["GET"]),
        Route("/.well-known/ai-catalog.json", ai_catalog, methods=["GET"]),
        Route(
            "/.well-known/oauth-protected-resource/a2a/{agent_id}",
            protected_resource,
            methods=["GET"],
        ),
    ]
    if server.metrics:
        routes.append(Route("/metrics", metrics_endpoint, methods=["GET"]))
    if server.ui:  # the web console (server/console/), off with --no-ui
        routes += [HubMount("/ui/api", UI_API_ROUTES, middleware=middleware), *UI_PAGE_ROUTES]
    routes.append(AgentMount("", AGENT_ROUTES, middleware=middleware, claim_unknown=False))
    cors = cors_middleware(server)
    requests = RequestMetrics(
        agent_routes=_route_labels(AGENT_ROUTES),
        record=server.metrics,
        log_format=server.access_log,
    )
    hosts = HostCheck(trusted_hosts(server), list(server.cors_origins), server.public_url)
    tracing.configure(server.tracing)
    traced = server.tracing != "off"
    app = HubApp(
        routes=routes,
        middleware=[cors] if cors is not None else [],
        lifespan=lifespan,
        exception_handlers={HTTPException: http_exception},
    )

    def front(stack: ASGIApp) -> ASGIApp:
        outer: ASGIApp = Front(
            stack,
            router=app.router,
            requests=requests,
            hosts=hosts,
            cors=cors is not None,
            caller=plain_caller_middleware(middleware),
        )
        # the detached runner outermost (server/detached.py): a stream's rest runs there
        return DetachedRunner(TracingMiddleware(outer) if traced else outer)

    app.front = front
    app.router.redirect_slashes = False  # errors.http_exception redirects, with a JSON body
    app.state.hub = hub
    app.state.drain = drain
    return app
