"""Optional OpenTelemetry tracing: a span per request and per task run, ``traceparent`` passed on.

Off by default.  ``tracing = "otlp"`` (``--tracing otlp``, ``A2A_HUB_TRACING``) exports spans
over OTLP/HTTP to the collector named by the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` variable
(default ``http://localhost:4318``); ``"console"`` prints them.  Both need the ``otel`` extra:
``pip install 'a2a-hub[otel]'``.  An application that sets up its own ``TracerProvider``
before it builds the app can pass ``"api"``: the hub then only uses the OpenTelemetry API.

What is traced:

* every HTTP request (:class:`a2a_hub.server.tracing.TracingMiddleware`), continuing the
  caller's trace from its ``traceparent`` header;
* every task run (:func:`run_span`, around the executor), a child of the request that
  started it;
* every outgoing HTTP call of the hub (remote agents and composites' remote children, push
  deliveries, OpenAI-compatible LLM providers): :func:`inject_headers` adds ``traceparent``
  (and ``tracestate``) of the current span.

While tracing is off every helper here returns at its first line, so the hot path pays one
module attribute read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, MutableMapping
from typing import Any, Literal, TypeVar

__all__ = [
    "TracingMode",
    "active",
    "client_span",
    "configure",
    "extract_context",
    "inject_headers",
    "run_span",
    "tracer",
]

TracingMode = Literal["off", "otlp", "console", "api"]
H = TypeVar("H", bound=MutableMapping[str, str])

#: True once :func:`configure` turned tracing on (read on every request and run).
active = False
_tracer: Any = None
_mode: TracingMode = "off"

_NEEDS_EXTRA = "pip install 'a2a-hub[otel]'"


def configure(mode: TracingMode, service_name: str = "a2a-hub") -> None:
    """Turn tracing on (``otlp``, ``console``, ``api``) or off.

    Raises :class:`~a2a_hub.settings.SettingsError` with the install hint when the
    OpenTelemetry packages the mode needs are missing.  Configuring the mode already in
    force does nothing (the global tracer provider is set once per process).
    """
    global active, _tracer, _mode
    from a2a_hub.settings import SettingsError

    if mode == _mode:
        return
    if mode == "off":
        active, _tracer, _mode = False, None, mode
        return
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise SettingsError(f"tracing = {mode!r} needs OpenTelemetry: {_NEEDS_EXTRA}") from exc
    if mode != "api":
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
        except ImportError as exc:
            raise SettingsError(
                f"tracing = {mode!r} needs the OpenTelemetry SDK: {_NEEDS_EXTRA}"
            ) from exc
        exporter: SpanExporter
        if mode == "otlp":
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )
            except ImportError as exc:
                raise SettingsError(
                    f"tracing = 'otlp' needs the OTLP exporter: {_NEEDS_EXTRA}"
                ) from exc
            exporter = OTLPSpanExporter()
        else:
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            exporter = ConsoleSpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
    _tracer = trace.get_tracer("a2a_hub")
    active, _mode = True, mode


def tracer() -> Any:
    """The hub's tracer (``None`` while tracing is off)."""
    return _tracer


def extract_context(headers: list[tuple[bytes, bytes]]) -> Any:
    """The trace context an incoming request carries (its ``traceparent``), or ``None``."""
    if not active:
        return None
    from opentelemetry.propagate import extract

    carrier = {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in headers
        if name in (b"traceparent", b"tracestate")
    }
    return extract(carrier) if carrier else None


def inject_headers(headers: H) -> H:
    """Add ``traceparent`` (and ``tracestate``) of the current span to outgoing ``headers``
    (changed in place and returned)."""
    if not active:
        return headers
    from opentelemetry.propagate import inject

    inject(headers)
    return headers


@contextlib.contextmanager
def client_span(name: str, attributes: dict[str, str]) -> Iterator[None]:
    """A client span around one outgoing call made outside any request (push deliveries)."""
    if not active:
        yield
        return
    from opentelemetry.trace import SpanKind

    with _tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes):
        yield


@contextlib.contextmanager
def run_span(agent_id: str, task_id: str, context_id: str) -> Iterator[Any]:
    """A span around one task run (the executor's work), child of the current span.

    Yields the span (``None`` while tracing is off) so the run can record how it ended.
    """
    if not active:
        yield None
        return
    with _tracer.start_as_current_span(
        "a2a.task.run",
        attributes={
            "a2a.agent_id": agent_id,
            "a2a.task_id": task_id,
            "a2a.context_id": context_id,
        },
    ) as span:
        yield span
