"""The AG-UI endpoint: every event validated against the ag-ui-protocol package's models."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2a_hub import create_app
from tests.support.agents import CrashExecutor, ProgressAgent, SlowExecutor, ToolAgent
from tests.support.hub import make_hub

ag_ui = pytest.importorskip("ag_ui.core")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    hub = make_hub(
        {
            "echo": "echo",
            "echo-msg": "echo?reply=message",
            "pizza-ask": "echo?ask=input?",
            "tool": ToolAgent(),
            "progress": ProgressAgent(),
            "slow": SlowExecutor(),
        }
    )
    await hub.start()
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://hub.test") as c:
        yield c
    await hub.close()


_EVENTS = {
    "RUN_STARTED": "RunStartedEvent",
    "RUN_FINISHED": "RunFinishedEvent",
    "RUN_ERROR": "RunErrorEvent",
    "TEXT_MESSAGE_START": "TextMessageStartEvent",
    "TEXT_MESSAGE_CONTENT": "TextMessageContentEvent",
    "TEXT_MESSAGE_END": "TextMessageEndEvent",
    "TOOL_CALL_START": "ToolCallStartEvent",
    "TOOL_CALL_ARGS": "ToolCallArgsEvent",
    "TOOL_CALL_END": "ToolCallEndEvent",
    "TOOL_CALL_RESULT": "ToolCallResultEvent",
    "STATE_SNAPSHOT": "StateSnapshotEvent",
}


def run_input(thread: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body = {
        "threadId": thread,
        "runId": f"run-{len(messages)}",
        "messages": messages,
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
        **extra,
    }
    ag_ui.RunAgentInput.model_validate(body)  # what we send is a valid AG-UI input
    return body


async def run(client: httpx.AsyncClient, agent: str, body: dict[str, Any]) -> list[Any]:
    response = await client.post(f"/a2a/{agent}/ag-ui", json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = []
    for block in response.text.split("\n\n"):
        if not block.strip():
            continue
        assert block.startswith("data: ")
        raw = json.loads(block[len("data: ") :])
        model = getattr(ag_ui, _EVENTS[raw["type"]])
        events.append(model.model_validate(raw))
    return events


def types(events: list[Any]) -> list[str]:
    return [e.type.value for e in events]


async def test_text_reply(client: httpx.AsyncClient) -> None:
    events = await run(
        client, "echo", run_input("t1", [{"id": "u1", "role": "user", "content": "hi"}])
    )
    kinds = types(events)
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    assert events[0].thread_id == "t1"
    assert "TEXT_MESSAGE_START" in kinds and "TEXT_MESSAGE_END" in kinds
    text = "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "echo: hi"
    assert events[-1].outcome.type == "success"


async def test_immediate_message_reply(client: httpx.AsyncClient) -> None:
    events = await run(
        client, "echo-msg", run_input("t2", [{"id": "u1", "role": "user", "content": "yo"}])
    )
    text = "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "echo: yo" and types(events)[-1] == "RUN_FINISHED"


async def test_progress_and_server_tools(client: httpx.AsyncClient) -> None:
    events = await run(
        client, "progress", run_input("t3", [{"id": "u1", "role": "user", "content": "go"}])
    )
    kinds = types(events)
    snapshots = [e.snapshot for e in events if e.type.value == "STATE_SNAPSHOT"]
    assert any(
        s.get("progress") == 0.5 and s.get("message") == "reading documents" for s in snapshots
    )
    start = kinds.index("TOOL_CALL_START")
    assert kinds[start : start + 3] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert events[start].tool_call_name == "search"
    assert json.loads(events[start + 1].delta) == {"q": "x"}
    result = events[kinds.index("TOOL_CALL_RESULT")]
    assert result.tool_call_id == "c1" and json.loads(result.content)["data"] == {"hits": 1}


async def test_client_tool_interrupt_and_resume(client: httpx.AsyncClient) -> None:
    first = [{"id": "u1", "role": "user", "content": "zone?"}]
    events = await run(client, "tool", run_input("t4", first))
    finished = events[-1]
    assert finished.type.value == "RUN_FINISHED" and finished.outcome.type == "interrupt"
    interrupt = finished.outcome.interrupts[0]
    assert interrupt.reason == "tool_call" and interrupt.tool_call_id
    assert "TOOL_CALL_START" in types(events)
    # answer with a tool message, as AG-UI clients do
    answer = [
        *first,
        {"id": "a1", "role": "assistant", "content": "",
         "toolCalls": [{"id": interrupt.tool_call_id, "type": "function",
                        "function": {"name": "time_zone", "arguments": "{}"}}]},
        {"id": "m2", "role": "tool", "toolCallId": interrupt.tool_call_id,
         "content": json.dumps({"zone": "Asia/Tokyo"})},
    ]  # fmt: skip
    events = await run(client, "tool", run_input("t4", answer))
    text = "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "your zone is Asia/Tokyo" and events[-1].outcome.type == "success"


async def test_input_required_resumed_through_resume(client: httpx.AsyncClient) -> None:
    events = await run(
        client, "pizza-ask", run_input("t5", [{"id": "u1", "role": "user", "content": "input?"}])
    )
    interrupt = events[-1].outcome.interrupts[0]
    assert interrupt.reason == "input-required" and interrupt.message == "What should I echo?"
    body = run_input(
        "t5",
        [{"id": "u1", "role": "user", "content": "input?"}],
        resume=[{"interruptId": interrupt.id, "status": "resolved", "payload": "pepperoni"}],
    )
    events = await run(client, "pizza-ask", body)
    text = "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "echo: pepperoni"


async def test_failed_task_is_a_run_error(client: httpx.AsyncClient) -> None:
    body = run_input("t6", [{"id": "u1", "role": "user", "content": "x"}])
    response = await client.post("/a2a/nobody/ag-ui", json=body)
    assert response.status_code == 404
    bad = await client.post("/a2a/echo/ag-ui", content=b"{nope")
    assert bad.status_code == 400
    wrong = await client.post("/a2a/echo/ag-ui", json={"threadId": 5})
    assert wrong.status_code == 400
    answer = run_input("t6", [{"id": "m", "role": "tool", "toolCallId": "zzz", "content": "1"}])
    assert (await client.post("/a2a/echo/ag-ui", json=answer)).status_code == 400
    hub_fail = make_hub({"crash": CrashExecutor()})
    await hub_fail.start()
    try:
        transport = httpx.ASGITransport(app=create_app(hub_fail))
        async with httpx.AsyncClient(transport=transport, base_url="http://h") as c:
            events = await run(c, "crash", body)
    finally:
        await hub_fail.close()
    assert events[-1].type.value == "RUN_ERROR" and "exploded" in events[-1].message
