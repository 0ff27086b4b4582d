"""The request span of OpenTelemetry tracing (see :mod:`a2a_hub.tracing`), pure ASGI.

Installed by :func:`a2a_hub.server.app.create_app` only when tracing is on: a hub without
tracing has no such layer at all.  The span continues the caller's trace (``traceparent``),
is named after the HTTP method and the route template (``POST /a2a/{agent_id}``), and records
the agent, the A2A version the binding served and the response status; a 5xx marks it as an
error.  Streams (SSE) are spans too: they end when the stream does.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from a2a_hub import tracing
from a2a_hub.server.scope import VERSION_KEY

__all__ = ["TracingMiddleware"]


def _template(path: str, scope: Scope) -> str:
    """``path`` with the request's path parameters' values replaced by their names."""
    params: dict[str, Any] = scope.get("path_params") or {}
    for name, value in params.items():
        if isinstance(value, str) and value:
            path = path.replace(f"/{value}", f"/{{{name}}}", 1)
    return path


class TracingMiddleware:
    """One server span per HTTP request (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not tracing.active:
            await self.app(scope, receive, send)
            return
        from opentelemetry.trace import SpanKind, Status, StatusCode

        method, path = scope["method"], scope["path"]
        status = 500
        with tracing.tracer().start_as_current_span(
            f"{method} {path}",
            context=tracing.extract_context(scope.get("headers") or []),
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": path},
        ) as span:

            async def sent(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            try:
                await self.app(scope, receive, sent)
            finally:
                route = _template(path, scope)
                span.update_name(f"{method} {route}")
                span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                agent = (scope.get("path_params") or {}).get("agent_id")
                if agent:
                    span.set_attribute("a2a.agent_id", agent)
                version = scope.get(VERSION_KEY)
                if version:
                    span.set_attribute("a2a.version", version)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))
