"""The hub's Prometheus metrics, defined once; every layer records into them.

Metrics are on by default; :func:`disable` (``--metrics false``) turns every
recording helper here into a no-op.  With several worker processes the CLI sets
``PROMETHEUS_MULTIPROC_DIR`` before the workers start, and ``/metrics`` then
sums the files of every process (see :func:`exposition`).

Names follow the Prometheus conventions: counters end in ``_total``, durations
are ``_seconds`` histograms.

The metrics recorded on every request (request duration, task runs, store
operations) are :class:`FastHistogram`, :class:`FastCounter` and
:class:`FastGauge`: plain numbers updated on the event loop, without the lock
and the per-bucket objects of ``prometheus_client`` (which cost about 10 % of a
send), read by a collector at scrape time.  In multi-process mode they record
through ``prometheus_client`` instead, whose files the workers share.
"""

from __future__ import annotations

import os
import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

__all__ = [
    "CONTENT_TYPE_LATEST",
    "ERRORS",
    "LLM_CALLS",
    "LLM_SECONDS",
    "LLM_TOKENS",
    "PUSH_DELIVERIES",
    "PUSH_OUTBOX",
    "RATE_LIMITED",
    "REGISTRY",
    "REQUEST_SECONDS",
    "STORE_FAILURES",
    "STORE_SECONDS",
    "STREAMS_OPEN",
    "STREAM_CUT_LOOSE",
    "STREAM_EVENTS",
    "STREAM_REPLAYED",
    "STREAM_SECONDS",
    "TASKS",
    "TASKS_ACTIVE",
    "TASK_SECONDS",
    "TOOL_CALLS",
    "WEBSOCKETS_CUT_LOOSE",
    "WEBSOCKETS_OPEN",
    "WEBSOCKET_EVENTS",
    "FastCounter",
    "FastGauge",
    "FastHistogram",
    "RunMetrics",
    "count_error",
    "disable",
    "enabled",
    "exposition",
    "llm_call",
    "llm_tokens",
    "note_request",
    "observe_request",
    "rate_limited",
    "request_notes",
    "run_began",
    "run_ended",
    "store_failed",
    "store_op",
]

#: What the request being served learned for its access-log row (the agent a root alias
#: reached, the task a send created): a dict the server's access log puts here around each
#: request (:class:`a2a_hub.server.metrics.RequestMetrics`, called by the front), filled
#: by the layers below.
request_notes: ContextVar[dict[str, Any] | None] = ContextVar("a2a_hub_notes", default=None)


def note_request(**values: Any) -> None:
    """Add ``values`` to the current request's access-log notes (nothing outside one); the
    first value of a name stays (a composite's children run in its request's context)."""
    notes = request_notes.get()
    if notes is not None:
        for name, value in values.items():
            notes.setdefault(name, value)


_MULTIPROC = "PROMETHEUS_MULTIPROC_DIR"
_multiprocess = bool(os.environ.get(_MULTIPROC))

#: The registry of this process's metrics (not the library's global one).
REGISTRY = CollectorRegistry(auto_describe=True)

_FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_SLOW = (0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0)


class _Fast:
    """A metric kept as plain numbers per label tuple; subclasses export it in ``collect``."""

    def __init__(self, name: str, doc: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.doc = doc
        self.labelnames = list(labelnames)

    def describe(self) -> list[Metric]:
        """No description up front (the registry then calls :meth:`collect`)."""
        return []


class FastHistogram(_Fast):
    """A histogram updated without locks: ``observe(labels, seconds)``."""

    def __init__(
        self, name: str, doc: str, labelnames: Sequence[str], buckets: Sequence[float]
    ) -> None:
        super().__init__(name, doc, labelnames)
        self.bounds = tuple(buckets)
        #: label values -> per-bucket counts (the last one is +Inf) followed by the sum.
        self.values: dict[tuple[str, ...], list[float]] = {}
        self.shared = (
            Histogram(name, doc, labelnames, buckets=buckets, registry=None)
            if _multiprocess
            else None
        )
        if self.shared is None:
            REGISTRY.register(self)

    def child(self, labels: tuple[str, ...]) -> list[float]:
        """The numbers of one label tuple (created at zero)."""
        found = self.values.get(labels)
        if found is None:
            found = self.values[labels] = [0.0] * (len(self.bounds) + 2)
        return found

    def observe(self, labels: tuple[str, ...], amount: float) -> None:
        """Record one observation."""
        if self.shared is not None:
            self.shared.labels(*labels).observe(amount)
            return
        numbers = self.values.get(labels) or self.child(labels)
        numbers[bisect_left(self.bounds, amount)] += 1
        numbers[-1] += amount

    def collect(self) -> Iterator[Metric]:
        """The histogram family (cumulative buckets, count, sum)."""
        family = HistogramMetricFamily(self.name, self.doc, labels=self.labelnames)
        for labels, numbers in list(self.values.items()):
            running = 0.0
            buckets = []
            for bound, count in zip((*self.bounds, float("inf")), numbers, strict=False):
                running += count
                buckets.append((_le(bound), running))
            family.add_metric(list(labels), buckets, numbers[-1])
        yield family


class FastCounter(_Fast):
    """A counter updated without locks: ``inc(labels, amount=1)``."""

    def __init__(self, name: str, doc: str, labelnames: Sequence[str]) -> None:
        super().__init__(name, doc, labelnames)
        self.values: dict[tuple[str, ...], float] = {}
        base = name.removesuffix("_total")
        self.shared = Counter(base, doc, labelnames, registry=None) if _multiprocess else None
        if self.shared is None:
            REGISTRY.register(self)

    def inc(self, labels: tuple[str, ...], amount: float = 1.0) -> None:
        """Add ``amount``."""
        if self.shared is not None:
            self.shared.labels(*labels).inc(amount)
            return
        self.values[labels] = self.values.get(labels, 0.0) + amount

    def collect(self) -> Iterator[Metric]:
        """The counter family."""
        family = CounterMetricFamily(
            self.name.removesuffix("_total"), self.doc, labels=self.labelnames
        )
        for labels, value in list(self.values.items()):
            family.add_metric(list(labels), value)
        yield family


class FastGauge(_Fast):
    """A gauge updated without locks: ``add(labels, amount)``."""

    def __init__(self, name: str, doc: str, labelnames: Sequence[str]) -> None:
        super().__init__(name, doc, labelnames)
        self.values: dict[tuple[str, ...], float] = {}
        self.shared = (
            Gauge(name, doc, labelnames, multiprocess_mode="livesum", registry=None)
            if _multiprocess
            else None
        )
        if self.shared is None:
            REGISTRY.register(self)

    def add(self, labels: tuple[str, ...], amount: float) -> None:
        """Add ``amount`` (negative to lower it)."""
        if self.shared is not None:
            self.shared.labels(*labels).inc(amount)
            return
        self.values[labels] = self.values.get(labels, 0.0) + amount

    def collect(self) -> Iterator[Metric]:
        """The gauge family."""
        family = GaugeMetricFamily(self.name, self.doc, labels=self.labelnames)
        for labels, value in list(self.values.items()):
            family.add_metric(list(labels), value)
        yield family


def _le(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(float(bound))


REQUEST_SECONDS = FastHistogram(
    "a2a_http_request_duration_seconds",
    "HTTP requests (streams excluded: see a2a_sse_stream_duration_seconds) by route "
    "template, binding, A2A version, method and status.",
    ["route", "binding", "version", "method", "status"],
    _FAST,
)
TASKS = FastCounter(
    "a2a_tasks_total",
    "Task runs (turns) ended, by agent and the state they left the task in "
    "(message: a direct reply without a task).",
    ["agent", "state"],
)
TASK_SECONDS = FastHistogram(
    "a2a_task_duration_seconds", "How long task runs (turns) took, by agent.", ["agent"], _SLOW
)
TASKS_ACTIVE = FastGauge(
    "a2a_tasks_active", "Task runs executing in this process now, by agent.", ["agent"]
)
WORKER_TURNS_RUNNING = FastGauge(
    "a2a_worker_turns_running",
    "Turns running on this worker now (a2a-hub worker), by agent and worker.",
    ["agent", "worker"],
)
WORKER_SCHEDULE_TO_START = FastHistogram(
    "a2a_worker_schedule_to_start_seconds",
    "How long a turn waited in its task queue for a free worker slot, by agent.",
    ["agent"],
    _SLOW,
)
WORKER_TURNS_QUEUED = Gauge(
    "a2a_worker_turns_queued",
    "Turns waiting in a Temporal task queue for a worker (Temporal's approximate backlog, "
    "read every few seconds by the API node), by task queue and the agents routed to it.",
    ["queue", "agents"],
    multiprocess_mode="max",
    registry=REGISTRY,
)
STORE_SECONDS = FastHistogram(
    "a2a_store_operation_duration_seconds",
    "Task store operations by backend and operation.",
    ["backend", "operation"],
    _FAST,
)
WEBSOCKETS_OPEN = Gauge(
    "a2a_websockets_open",
    "WebSocket connections open now (seed 003 channel).",
    multiprocess_mode="livesum",
    registry=REGISTRY,
)
WEBSOCKET_EVENTS = FastCounter(
    "a2a_websocket_events_sent_total", "Events sent to WebSocket clients.", []
)
WEBSOCKETS_CUT_LOOSE = FastCounter(
    "a2a_websockets_cut_loose_total",
    "WebSocket clients too slow to read an event in time: closed, to resume with sync_state.",
    [],
)
PUSH_DELIVERIES = FastCounter(
    "a2a_push_deliveries_total",
    "Push notification attempts by result: delivered, retry (failed, tried again later), "
    "dead (gave up), gone (the webhook answered 410: config deleted), dropped (the config "
    "was deleted meanwhile).",
    ["result"],
)
PUSH_OUTBOX = Gauge(
    "a2a_push_outbox_deliveries",
    "Deliveries in the push outbox by state (pending, dead), as last counted by this "
    "instance's dispatcher (every few seconds).",
    ["state"],
    multiprocess_mode="max",
    registry=REGISTRY,
)
STREAM_REPLAYED = FastCounter(
    "a2a_stream_events_replayed_total",
    "Events a stream (SSE, gRPC, WebSocket sync) sent from the event log rather than live: "
    "resumes after Last-Event-ID, and catching up after falling behind.",
    [],
)
RATE_LIMITED = FastCounter(
    "a2a_rate_limited_total",
    "Requests refused by a [[limits]] rate or max_running cap, by agent and A2A method.",
    ["agent", "method"],
)
STREAM_CUT_LOOSE = FastCounter(
    "a2a_stream_subscribers_cut_loose_total",
    "Stream subscribers that fell too far behind the live events and were cut loose "
    "(their buffer dropped; they catch up from the event log).",
    [],
)
ERRORS = Counter(
    "a2a_errors_total",
    "Protocol errors answered, by binding and error code (JSON-RPC code).",
    ["binding", "code", "reason"],
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
    "Tool calls made by LLM agents, by tool and outcome (ok, error).",
    ["tool", "outcome"],
    registry=REGISTRY,
)

_enabled = True


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
    REQUEST_SECONDS.observe((route, binding, version, method, str(status)), seconds)


def worker_turn(agent: str, worker: str, change: int, waited: float | None = None) -> None:
    """A turn began (``change`` 1, having waited ``waited`` s in its queue) or ended (-1)
    on this worker."""
    if _enabled:
        WORKER_TURNS_RUNNING.add((agent, worker), change)
        if waited is not None:
            WORKER_SCHEDULE_TO_START.observe((agent,), max(waited, 0.0))


def turns_queued(queue: str, agents: str, count: int) -> None:
    """Temporal's backlog of a task queue (see :data:`WORKER_TURNS_QUEUED`)."""
    if _enabled:
        WORKER_TURNS_QUEUED.labels(queue, agents).set(count)


def run_began(agent: str) -> float:
    """Count a run (one turn of a task) of ``agent`` as active; returns its start time
    for :func:`run_ended`."""
    TASKS_ACTIVE.add((agent,), 1)
    return time.perf_counter()


_state_labels: dict[Any, str] = {}


class RunMetrics:
    """:func:`run_began` and :func:`run_ended` of one agent, its label tuples and numbers
    looked up once (the engine records every run through it)."""

    __slots__ = ("_agent", "_ended", "_key")

    def __init__(self, agent: str) -> None:
        self._agent = agent
        self._key = (agent,)
        #: The state a run left its task in (``None``: a direct reply) -> its counter labels.
        self._ended: dict[Any, tuple[str, str]] = {}

    def began(self) -> float | None:
        """Count a run as active; returns its start time for :meth:`ended` (``None``: metrics
        are off)."""
        if not _enabled:
            return None
        if TASKS_ACTIVE.shared is not None:
            return run_began(self._agent)
        active = TASKS_ACTIVE.values
        key = self._key
        active[key] = active.get(key, 0.0) + 1
        return time.perf_counter()

    def ended(self, began: float, task: Any) -> None:
        """A run begun at ``began`` ended, leaving ``task`` (``None``: a direct reply)."""
        if TASKS_ACTIVE.shared is not None:
            run_ended(self._agent, began, task)
            return
        key = self._key
        active = TASKS_ACTIVE.values
        active[key] = active.get(key, 0.0) - 1
        seconds = time.perf_counter() - began
        numbers = TASK_SECONDS.values.get(key) or TASK_SECONDS.child(key)
        numbers[bisect_left(TASK_SECONDS.bounds, seconds)] += 1
        numbers[-1] += seconds
        state = None if task is None else task.status.state
        labels = self._ended.get(state)
        if labels is None:
            label = "message" if state is None else state.label
            labels = self._ended[state] = (self._agent, label)
        counts = TASKS.values
        counts[labels] = counts.get(labels, 0.0) + 1


def run_ended(agent: str, began: float, task: Any) -> None:
    """A run begun at ``began`` ended, leaving ``task`` (``None``: a direct reply)."""
    key = (agent,)
    TASKS_ACTIVE.add(key, -1)
    TASK_SECONDS.observe(key, time.perf_counter() - began)
    if task is None:
        label = "message"
    else:
        state = task.status.state
        label = _state_labels.get(state) or _state_labels.setdefault(state, state.label)
    TASKS.inc((agent, label))


def push_delivery(result: str) -> None:
    """Count one push attempt's result (see :data:`PUSH_DELIVERIES`)."""
    if _enabled:
        PUSH_DELIVERIES.inc((result,))


def push_outbox(pending: int, dead: int) -> None:
    """Record the outbox's size as just counted (see :data:`PUSH_OUTBOX`)."""
    if _enabled:
        PUSH_OUTBOX.labels("pending").set(pending)
        PUSH_OUTBOX.labels("dead").set(dead)


def stream_replayed(events: int) -> None:
    """``events`` were read from the log for a stream (see :data:`STREAM_REPLAYED`)."""
    if _enabled and events:
        STREAM_REPLAYED.inc((), events)


def stream_cut_loose() -> None:
    """A subscriber was cut loose (see :data:`STREAM_CUT_LOOSE`)."""
    if _enabled:
        STREAM_CUT_LOOSE.inc(())


def rate_limited(agent: str, method: str) -> None:
    """One request refused by a limit (see :data:`RATE_LIMITED`)."""
    if _enabled:
        RATE_LIMITED.inc((agent, method))


def count_error(binding: str, code: int, reason: str) -> None:
    """Count one protocol error answered on ``binding``."""
    if _enabled:
        ERRORS.labels(binding, str(code), reason).inc()


def store_op(backend: str, operation: str, seconds: float) -> None:
    """Record one store operation that succeeded."""
    STORE_SECONDS.observe((backend, operation), seconds)


def store_failed(backend: str, operation: str, unavailable: bool) -> None:
    """Count one store operation that raised (``unavailable``: the server was unreachable)."""
    STORE_FAILURES.labels(backend, operation, "unavailable" if unavailable else "error").inc()


def llm_call(provider: str, outcome: str, seconds: float) -> None:
    """Count one LLM call (``ok`` or ``error``, after the provider's retries) and its latency."""
    if _enabled:
        LLM_CALLS.labels(provider, outcome).inc()
        LLM_SECONDS.labels(provider).observe(seconds)


def tool_called(tool: str, ok: bool) -> None:
    """Count one tool call of an LLM agent and how it ended."""
    if _enabled:
        TOOL_CALLS.labels(tool, "ok" if ok else "error").inc()


def llm_tokens(provider: str, prompt: object, completion: object) -> None:
    """Add the tokens a provider reported (ignored unless they are numbers)."""
    if not _enabled:
        return
    for kind, count in (("prompt", prompt), ("completion", completion)):
        if isinstance(count, int) and count >= 0:
            LLM_TOKENS.labels(provider, kind).inc(count)


def exposition() -> tuple[bytes, str]:
    """The text of ``/metrics`` and its content type (every worker's, with several)."""
    if os.environ.get(_MULTIPROC):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
