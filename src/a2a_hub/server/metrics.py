"""What the server records: the requests, the task watcher and ``GET /metrics``.

:class:`RequestMetrics` (called by the app's front, :mod:`a2a_hub.server.front`, the
outermost of the hub's own layers; only tracing, when on, wraps it) records every HTTP
request by route template, binding, A2A version, method and status, and writes
the access log (``--access-log off|plain|json``).  Streams are timed by
:mod:`a2a_hub.server.sse` with their own metrics, not here.

The task metrics are recorded by the engine itself (:func:`a2a_hub.metrics.run_began` and
``run_ended``, called by the engine's run table): following the agent-wide feed cost
about 10 % per send.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from a2a_hub import metrics
from a2a_hub.server.scope import STREAM_KEY, VERSION_KEY

__all__ = ["RequestMetrics", "RouteLabels", "metrics_endpoint"]

#: Endpoint of an agent route -> (its template relative to the agent, its binding).
RouteLabels = Mapping[Any, tuple[str, str]]

access_log = logging.getLogger("a2a_hub.access")


class RequestMetrics:
    """Records each HTTP request into the request histogram and writes the access log;
    the app's front (:mod:`a2a_hub.server.front`) times the requests and calls :meth:`done`.

    ``agent_routes`` labels the requests reaching an agent's endpoints (given by the app,
    which knows its routes); any other request is labelled by its own route, binding
    ``other``.
    """

    def __init__(
        self,
        *,
        agent_routes: RouteLabels,
        record: bool = True,
        log_format: str = "off",
    ) -> None:
        self.record = record
        self.log_format = log_format
        self._templates = agent_routes
        self._routes: dict[tuple[Any, bool, bool], tuple[str, str]] = {}
        #: Whether requests are timed at all (recorded or logged).
        self.active = record or log_format != "off"
        #: Whether the access log is written (a request then keeps notes for it).
        self.logs = log_format != "off"

    def done(
        self, scope: Scope, status: int, seconds: float, notes: dict[str, Any] | None = None
    ) -> None:
        """One HTTP request answered with ``status`` after ``seconds``."""
        params = scope.get("path_params") or {}
        endpoint = scope.get("endpoint")
        key = (endpoint, "agent_id" in params, "config_id" in params)
        found = self._routes.get(key)
        if found is None:
            found = self._routes[key] = self._route_of(scope, *key)
        route, binding = found
        if self.record and STREAM_KEY not in scope:
            version = scope.get(VERSION_KEY) or ("1.0" if binding == "rest" else "")
            metrics.observe_request(route, binding, version, scope["method"], status, seconds)
        if self.log_format != "off":
            self._log(scope, route, {**(notes or {}), **params}, status, seconds)

    def _route_of(
        self, scope: Scope, endpoint: Any, under_agent: bool, config: bool
    ) -> tuple[str, str]:
        """The route template and binding of requests reaching ``endpoint``."""
        known = self._templates.get(endpoint)
        if known is None:
            return _plain_route(scope), "other"
        path, binding = known
        if config:
            path = "/tasks/{task_id}/pushNotificationConfigs/{config_id}"
        route = ("/a2a/{agent_id}" + path.rstrip("/")) if under_agent else path
        return route or "/", binding

    def _log(
        self, scope: Scope, route: str, params: dict[str, Any], status: int, seconds: float
    ) -> None:
        state = scope.get("state") or {}
        caller = state.get("caller")
        entry = {
            "method": scope["method"],
            "path": scope["path"],
            "route": route,
            "agent": params.get("agent_id") or params.get("agent"),
            "status": status,
            "duration_ms": round(seconds * 1000, 3),
            "task_id": params.get("task_id"),
            "caller": getattr(caller, "principal", None),
            "client": (scope.get("client") or ("",))[0],
        }
        if self.log_format == "json":
            access_log.info(json.dumps(entry, separators=(",", ":")))
        else:
            access_log.info(
                '%s "%s %s" %d %.1fms agent=%s task=%s caller=%s',
                entry["client"],
                entry["method"],
                entry["path"],
                status,
                seconds * 1000,
                entry["agent"] or "-",
                entry["task_id"] or "-",
                entry["caller"] or "-",
            )


def _plain_route(scope: Scope) -> str:
    """The template of a non-agent route (a fixed path), or ``unmatched``."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    endpoint = scope.get("endpoint")
    name = getattr(endpoint, "__name__", None)
    return {
        "healthz": "/healthz",
        "readyz": "/readyz",
        "version": "/version",
        "metrics_endpoint": "/metrics",
        "index": "/",
    }.get(name or "", "unmatched")


async def metrics_endpoint(request: Request) -> Response:
    """``GET /metrics``: the Prometheus text exposition (every worker's with several)."""
    body, content_type = metrics.exposition()
    return Response(body, media_type=content_type)
