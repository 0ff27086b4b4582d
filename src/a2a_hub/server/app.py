"""The ASGI application: every agent under ``/a2a/{agent_id}``, the default agent at the root.

Layout of :func:`create_app`'s routes::

    GET  /healthz                       liveness and the hosted agent ids
    GET  /                              index of the hosted agents
    /a2a/{agent_id}  (AgentMount)       the agent's routes, behind the agent middleware
    ""               (AgentMount)       the same routes for the default agent (root alias)

Each agent mount runs the same middleware list (by default :class:`CallerMiddleware`
alone, which decides who calls), so authentication is one middleware away.  The
routes of an agent (:data:`AGENT_ROUTES`) are module-level endpoints that find the
hub in ``request.app.state.hub`` and the agent per request, so agents added to or
removed from the hub while it serves are found, or not, at once.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Sequence

import msgspec
from starlette._utils import get_route_path
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Mount, Route, WebSocketRoute, compile_path
from starlette.types import Scope

from a2a_hub.server import rest
from a2a_hub.server.agui import ag_ui_run
from a2a_hub.server.caller import CallerMiddleware
from a2a_hub.server.cards import agent_card, legacy_agent_card
from a2a_hub.server.chat import chat_asset, chat_page
from a2a_hub.server.errors import JSON
from a2a_hub.server.http import base_url, hub_of
from a2a_hub.server.hub import Hub
from a2a_hub.server.jsonrpc import rpc
from a2a_hub.server.ws import websocket_endpoint

__all__ = [
    "AGENT_ROUTES",
    "SETTINGS_ENV",
    "AgentMount",
    "app_from_environment",
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
    logging.basicConfig(
        level=settings.server.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return create_app(Hub(settings))


_enc = msgspec.json.Encoder()

#: The routes of one agent, relative to its URL (``/a2a/{agent_id}`` or the root).
#: JSON-RPC comes first: it is the busiest route.
AGENT_ROUTES: list[BaseRoute] = [
    Route("/", rpc, methods=["POST"]),
    Route("/.well-known/agent-card.json", agent_card, methods=["GET"]),
    Route("/.well-known/agent.json", legacy_agent_card, methods=["GET"]),
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
    WebSocketRoute("/ws", websocket_endpoint),
    Route("/chat", chat_page, methods=["GET"]),
    Route("/ag-ui", ag_ui_run, methods=["POST"]),
    Route("/chat/{asset}", chat_asset, methods=["GET"]),
]


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
        super().__init__(path, routes=routes, middleware=middleware)
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


async def healthz(request: Request) -> Response:
    """``GET /healthz``: ok, and the ids of the hosted agents."""
    agents = sorted(hub_of(request).agents)
    return Response(_enc.encode({"status": "ok", "agents": agents}), media_type=JSON)


async def index(request: Request) -> Response:
    """``GET /``: the hosted agents with their URLs and cards, and the default agent."""
    hub = hub_of(request)
    root = base_url(request, hub, None)
    agents = [
        {
            "id": a.id,
            "url": f"{root}/a2a/{a.id}",
            "card": f"{root}/a2a/{a.id}/.well-known/agent-card.json",
        }
        for a in hub.agents.values()
    ]
    return Response(
        _enc.encode({"name": "a2a-hub", "defaultAgent": hub.default_agent_id, "agents": agents}),
        media_type=JSON,
    )


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Start the app's hub (store, cluster) and close it at shutdown."""
    hub: Hub = app.state.hub
    await hub.start()
    try:
        yield
    finally:
        await hub.close()


def create_app(hub: Hub, *, agent_middleware: Sequence[Middleware] | None = None) -> Starlette:
    """Build the Starlette app serving ``hub`` (opens and closes the store in its lifespan).

    ``agent_middleware`` is the middleware list of every agent route (both mounts);
    by default ``[Middleware(CallerMiddleware)]``.  It must put the request's
    caller in ``scope["state"]["caller"]``: give a subclass of
    :class:`CallerMiddleware` (see :mod:`a2a_hub.server.caller`) to authenticate.
    """
    middleware = (
        list(agent_middleware) if agent_middleware is not None else [Middleware(CallerMiddleware)]
    )
    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/", index, methods=["GET"]),
        AgentMount("/a2a/{agent_id}", AGENT_ROUTES, middleware=middleware),
        AgentMount("", AGENT_ROUTES, middleware=middleware, claim_unknown=False),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.hub = hub
    return app
