"""OpenTelemetry tracing: a span per request and per task run, traceparent passed on."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from a2a_hub import tracing
from a2a_hub.settings import SettingsError
from tests.support.hub import LiveServer, make_hub

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider (set once) with an in-memory exporter, tracing on
    in ``api`` mode for the test and off again after it."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    try:
        yield _EXPORTER
    finally:
        tracing.configure("off")
        _EXPORTER.clear()


def send_body(text: str) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}},
    }


def by_name(found: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in found if span.name == name]


async def test_request_and_task_run_spans_continue_the_callers_trace(
    spans: InMemorySpanExporter,
) -> None:
    hub = make_hub(tracing="api")
    async with LiveServer(hub) as server, httpx.AsyncClient() as http:
        response = await http.post(
            f"{server.url}/a2a/echo",
            json=send_body("hello"),
            headers={"traceparent": TRACEPARENT, "A2A-Version": "1.0"},
        )
    assert response.status_code == 200, response.text
    task_id = response.json()["result"]["task"]["id"]
    found = spans.get_finished_spans()
    (request,) = by_name(found, "POST /a2a/{agent_id}")
    (run,) = by_name(found, "a2a.task.run")
    assert request.kind is SpanKind.SERVER
    assert format(request.context.trace_id, "032x") == TRACE_ID
    assert request.attributes is not None
    assert request.attributes["a2a.agent_id"] == "echo"
    assert request.attributes["http.response.status_code"] == 200
    assert request.attributes["a2a.version"] == "1.0"
    assert run.parent is not None and run.parent.span_id == request.context.span_id
    assert run.attributes is not None
    assert run.attributes["a2a.task_id"] == task_id
    assert run.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"


async def test_a_remote_agent_passes_the_trace_on(spans: InMemorySpanExporter) -> None:
    far = make_hub(tracing="api")
    async with LiveServer(far) as remote:
        near = make_hub({"front": f"remote?url={remote.url}/a2a/echo"}, tracing="api")
        async with LiveServer(near) as server, httpx.AsyncClient() as http:
            response = await http.post(
                f"{server.url}/a2a/front",
                json=send_body("over there"),
                headers={"traceparent": TRACEPARENT, "A2A-Version": "1.0"},
            )
    assert response.status_code == 200, response.text
    runs = by_name(spans.get_finished_spans(), "a2a.task.run")
    agents = {run.attributes["a2a.agent_id"]: run for run in runs if run.attributes}
    assert set(agents) == {"front", "echo"}
    # the far hub's run belongs to the caller's trace: traceparent went over the wire
    assert format(agents["echo"].context.trace_id, "032x") == TRACE_ID


async def test_tracing_off_records_nothing(spans: InMemorySpanExporter) -> None:
    hub = make_hub()
    async with LiveServer(hub) as server, httpx.AsyncClient() as http:
        response = await http.post(
            f"{server.url}/a2a/echo",
            json=send_body("quiet"),
            headers={"traceparent": TRACEPARENT, "A2A-Version": "1.0"},
        )
    assert response.status_code == 200
    assert spans.get_finished_spans() == ()


def test_a_missing_exporter_is_a_setting_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(SettingsError, match=r"a2a-hub\[otel\]"):
        tracing.configure("otlp")
    assert not tracing.active
