"""The hub's Prometheus metrics, defined once; every layer records into them.

Metrics are on by default; :func:`disable` (``--metrics false``) turns every
recording helper here into a no-op.  With several worker processes the CLI sets
``PROMETHEUS_MULTIPROC_DIR`` before the workers start, and ``/metrics`` then
sums the files of every process (see :func:`exposition`).

Names follow the Prometheus conventions: counters end in ``_total``, durations
are ``_seconds`` histograms.  Recording helpers cache the labelled child of each
label combination, so a hot path pays one dict lookup and one ``observe``.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

__all__ = [
    "CONTENT_TYPE_LATEST",
    "ERRORS",
    "LLM_CALLS",
    "LLM_SECONDS",
    "LLM_TOKENS",
    "REGISTRY",
    "REQUEST_SECONDS",
    "STORE_FAILURES",
    "STORE_SECONDS",
    "STREAMS_OPEN",
    "STREAM_EVENTS",
    "STREAM_SECONDS",
    "TASKS",
    "TASKS_ACTIVE",
    "TASK_SECONDS",
    "TOOL_CALLS",
    "count_error",
    "disable",
    "enabled",
    "exposition",
    "observe_request",
    "store_failed",
    "store_op",
]

_MULTIPROC = "PROMETHEUS_MULTIPROC_DIR"

#: The registry of this process's metrics (not the library's global one).
REGISTRY = CollectorRegistry(auto_describe=True)

_FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_SLOW = (0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0)

REQUEST_SECONDS = Histogram(
    "a2a_http_request_duration_seconds",
    "HTTP requests (streams excluded: see a2a_sse_stream_duration_seconds) by route "
    "template, binding, A2A version, method and status.",
    ["route", "binding", "version", "method", "status"],
    buckets=_FAST,
    registry=REGISTRY,
)
ERRORS = Counter(
    "a2a_errors_total",
    "Protocol errors answered, by binding and error code (JSON-RPC code).",
    ["binding", "code", "reason"],
    registry=REGISTRY,
)
TASKS = Counter(
    "a2a_tasks_total",
    "Tasks that reached a final (or interrupted) state, by agent and state.",
    ["agent", "state"],
    registry=REGISTRY,
)
TASK_SECONDS = Histogram(
    "a2a_task_duration_seconds",
    "Time from a task's first event to its final (or interrupted) state, by agent.",
    ["agent"],
    buckets=_SLOW,
    registry=REGISTRY,
)
TASKS_ACTIVE = Gauge(
    "a2a_tasks_active",
    "Tasks started in this process and not yet final or interrupted, by agent.",
    ["agent"],
    multiprocess_mode="livesum",
    registry=REGISTRY,
)
STREAMS_OPEN = Gauge(
    "a2a_sse_streams_open",
    "Server-Sent Event streams open now.",
    multiprocess_mode="livesum",
    registry=REGISTRY,
)
STREAM_SECONDS = Histogram(
    "a2a_sse_stream_duration_seconds",
    "How long Server-Sent Event streams stayed open.",
    buckets=_SLOW,
    registry=REGISTRY,
)
STREAM_EVENTS = Counter(
    "a2a_sse_events_sent_total",
    "Events written to Server-Sent Event streams.",
    registry=REGISTRY,
)
STORE_SECONDS = Histogram(
    "a2a_store_operation_duration_seconds",
    "Task store operations by backend and operation.",
    ["backend", "operation"],
    buckets=_FAST,
    registry=REGISTRY,
)
STORE_FAILURES = Counter(
    "a2a_store_operation_failures_total",
    "Task store operations that raised, by backend, operation and kind "
    "(unavailable: the server could not be reached; error: anything else).",
    ["backend", "operation", "kind"],
    registry=REGISTRY,
)
LLM_CALLS = Counter(
    "a2a_llm_calls_total",
    "LLM calls by provider and outcome (ok, error).",
    ["provider", "outcome"],
    registry=REGISTRY,
)
LLM_SECONDS = Histogram(
    "a2a_llm_call_duration_seconds",
    "LLM call latency by provider.",
    ["provider"],
    buckets=_SLOW,
    registry=REGISTRY,
)
LLM_TOKENS = Counter(
    "a2a_llm_tokens_total",
    "LLM tokens by provider and kind (prompt, completion).",
    ["provider", "kind"],
    registry=REGISTRY,
)
TOOL_CALLS = Counter(
    "a2a_tool_calls_total",
    "Tool calls made by LLM agents, by agent and tool.",
    ["agent", "tool"],
    registry=REGISTRY,
)

_enabled = True
_request_children: dict[tuple[str, str, str, str, int], Any] = {}
_store_children: dict[tuple[str, str], Any] = {}


def enabled() -> bool:
    """Whether metrics are recorded in this process."""
    return _enabled


def disable() -> None:
    """Stop recording (``--metrics false``): every helper here becomes a no-op."""
    global _enabled
    _enabled = False


def observe_request(
    route: str, binding: str, version: str, method: str, status: int, seconds: float
) -> None:
    """Record one HTTP request in :data:`REQUEST_SECONDS`."""
    key = (route, binding, version, method, status)
    child = _request_children.get(key)
    if child is None:
        child = _request_children[key] = REQUEST_SECONDS.labels(
            route, binding, version, method, str(status)
        )
    child.observe(seconds)


def count_error(binding: str, code: int, reason: str) -> None:
    """Count one protocol error answered on ``binding``."""
    if _enabled:
        ERRORS.labels(binding, str(code), reason).inc()


def store_op(backend: str, operation: str, seconds: float) -> None:
    """Record one store operation that succeeded."""
    key = (backend, operation)
    child = _store_children.get(key)
    if child is None:
        child = _store_children[key] = STORE_SECONDS.labels(backend, operation)
    child.observe(seconds)


def store_failed(backend: str, operation: str, unavailable: bool) -> None:
    """Count one store operation that raised (``unavailable``: the server was unreachable)."""
    STORE_FAILURES.labels(backend, operation, "unavailable" if unavailable else "error").inc()


def exposition() -> tuple[bytes, str]:
    """The text of ``/metrics`` and its content type (every worker's, with several)."""
    if os.environ.get(_MULTIPROC):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
