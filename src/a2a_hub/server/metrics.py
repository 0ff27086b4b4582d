"""What the server records: the request middleware, the task watcher and ``GET /metrics``.

:class:`MetricsMiddleware` (pure ASGI, the outermost layer) times every HTTP
request by route template, binding, A2A version, method and status, and writes
the access log (``--access-log off|plain|json``).  Streams are timed by
:mod:`a2a_hub.server.sse` with their own metrics, not here.

:class:`TaskWatcher` follows the agent-wide feed of every hosted engine and
turns task events into the task metrics (tasks by final state, their duration,
tasks active).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from a2a_hub import metrics
from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.pubsub import EventsLostError, Feed
from a2a_hub.server.hub import Hub

__all__ = ["VERSION_KEY", "MetricsMiddleware", "TaskWatcher", "metrics_endpoint"]

#: Scope key where a binding records the A2A version it served the request in.
VERSION_KEY = "a2a_hub.version"
#: Scope key set by a streaming response: the request histogram skips it.
STREAM_KEY = "a2a_hub.stream"

access_log = logging.getLogger("a2a_hub.access")


def _templates() -> dict[Any, tuple[str, str]]:
    """Endpoint -> (route template relative to the agent, binding)."""
    from a2a_hub.server import rest
    from a2a_hub.server.app import AGENT_ROUTES
    from a2a_hub.server.jsonrpc import rpc

    found: dict[Any, tuple[str, str]] = {}
    for route in AGENT_ROUTES:
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


class MetricsMiddleware:
    """Times each HTTP request into the request histogram and writes the access log."""

    def __init__(self, app: ASGIApp, *, record: bool = True, log_format: str = "off") -> None:
        self.app = app
        self.record = record
        self.log_format = log_format
        self._templates: dict[Any, tuple[str, str]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not (self.record or self.log_format != "off"):
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            self._done(scope, status, time.perf_counter() - start)

    def _done(self, scope: Scope, status: int, seconds: float) -> None:
        templates = self._templates
        if templates is None:
            templates = self._templates = _templates()
        endpoint = scope.get("endpoint")
        params = scope.get("path_params") or {}
        known = templates.get(endpoint)
        if known is not None:
            path, binding = known
            if "config_id" in params:
                path = "/tasks/{task_id}/pushNotificationConfigs/{config_id}"
            route = ("/a2a/{agent_id}" + path.rstrip("/")) if "agent_id" in params else path
            route = route or "/"
        else:
            route = _plain_route(scope)
            binding = "other"
        version = scope.get(VERSION_KEY) or ("1.0" if binding == "rest" else "")
        if self.record and not scope.get(STREAM_KEY):
            metrics.observe_request(route, binding, version, scope["method"], status, seconds)
        if self.log_format != "off":
            self._log(scope, route, params, status, seconds)

    def _log(
        self, scope: Scope, route: str, params: dict[str, Any], status: int, seconds: float
    ) -> None:
        state = scope.get("state") or {}
        caller = state.get("caller")
        entry = {
            "method": scope["method"],
            "path": scope["path"],
            "route": route,
            "agent": params.get("agent_id"),
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


class TaskWatcher:
    """Follows every hosted engine's feed and records the task metrics.

    Engines added to the hub later are picked up within ``rescan`` seconds.
    """

    def __init__(self, hub: Hub, *, rescan: float = 1.0) -> None:
        self.hub = hub
        self.rescan = rescan
        self._watching: dict[TaskEngine, asyncio.Task[None]] = {}
        self._main: asyncio.Task[None] | None = None
        self._clock: Callable[[], float] = time.monotonic

    def start(self) -> None:
        """Start watching: the engines hosted now at once, later ones within ``rescan``."""
        self._adopt()
        self._main = asyncio.ensure_future(self._scan())

    def _adopt(self) -> None:
        for agent in list(self.hub.agents.values()):
            engine = agent.engine
            if engine not in self._watching:
                self._watching[engine] = asyncio.ensure_future(self._watch(engine, engine.feed()))
        for engine, task in list(self._watching.items()):
            if task.done():
                del self._watching[engine]

    async def close(self) -> None:
        """Stop watching."""
        tasks = [t for t in (self._main, *self._watching.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._watching.clear()

    async def _scan(self) -> None:
        while True:
            await asyncio.sleep(self.rescan)
            self._adopt()

    async def _watch(self, engine: TaskEngine, feed: Feed) -> None:
        agent = engine.agent_id
        started: dict[str, float] = {}
        active = metrics.TASKS_ACTIVE.labels(agent)
        duration = metrics.TASK_SECONDS.labels(agent)
        try:
            while True:
                try:
                    item = await feed.next()
                except EventsLostError:
                    continue
                except StopAsyncIteration:
                    return
                if item is None:
                    continue
                payload = item.event.event
                if payload.status_update is not None:
                    state = payload.status_update.status.state
                elif payload.task is not None:
                    state = payload.task.status.state
                else:
                    continue
                task_id = item.task_id
                if state.terminal or state.interrupted:
                    metrics.TASKS.labels(agent, state.label).inc()
                    began = started.pop(task_id, None)
                    if began is not None:
                        active.dec()
                        duration.observe(self._clock() - began)
                elif task_id not in started:
                    started[task_id] = self._clock()
                    active.inc()
        finally:
            feed.close()
            active.dec(len(started))
