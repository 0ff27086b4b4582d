"""Client-side tools in the llm agent's tool loop (scripted provider, offline).

The model calls a tool the client runs: the task asks the client (``input-required`` with a
``tool_call`` data part), the client's ``tool_response`` continues the task, and the loop
goes on where it stopped, in the engine, over JSON-RPC and over the WebSocket.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from a2a_hub import Hub
from a2a_hub.agents.llm import LOOP_KEY, LLMExecutor
from a2a_hub.engine import TaskEngine
from a2a_hub.engine.executor import text_of
from a2a_hub.protocol.types import Message, Part, Role, SendMessageRequest, Task, TaskState
from a2a_hub.stores.memory import MemoryStore
from tests.support.hub import LiveServer
from tests.support.ws import connect, recv, send, terminal, until, ws_url


def req(part: Part, *, task: Task | None = None) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=uuid.uuid4().hex,
            role=Role.USER,
            parts=[part],
            task_id=task.id if task else None,
            context_id=task.context_id if task else None,
        )
    )


def tool_call(task: Task) -> dict[str, Any]:
    assert task.status.message is not None
    [data] = [p.data for p in task.status.message.parts if isinstance(p.data, dict)]
    assert data["kind"] == "tool_call"
    return data


def answer(call: dict[str, Any], data: Any, status: str = "success") -> Part:
    result = {"status": status, "data": data} if status == "success" else {
        "status": status, "error_message": data}  # fmt: skip
    return Part(data={"kind": "tool_response", "tool_call_id": call["tool_call_id"],
                      "result": result})  # fmt: skip


async def test_the_loop_asks_the_client_and_goes_on_with_its_result() -> None:
    engine = TaskEngine(
        "llm", LLMExecutor(provider="scripted", client_tools="time_zone"), MemoryStore()
    )
    first = await engine.send(req(Part(text="which time_zone am I in?")))
    assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
    call = tool_call(first)
    assert call["tool_id"] == "time_zone" and isinstance(call["params"], dict)
    assert first.status.message is not None and first.status.message.metadata
    assert LOOP_KEY in first.status.message.metadata  # the loop's state travels with it

    done = await engine.send(req(answer(call, "Europe/Madrid"), task=first))
    assert isinstance(done, Task) and done.id == first.id
    assert done.status.state is TaskState.COMPLETED
    assert done.status.message is not None
    assert (
        text_of(done.status.message.parts) == "[scripted] Tool results: time_zone → Europe/Madrid"
    )
    # the result is a visible, stored event of the task like a server-side tool's
    shown = [
        p.data
        for m in done.history or []
        for p in m.parts
        if isinstance(p.data, dict) and p.data.get("kind") == "tool_response"
    ]
    assert shown and shown[-1]["result"] == {"status": "success", "data": "Europe/Madrid"}


async def test_remaining_calls_of_the_step_run_after_the_clients_answer() -> None:
    agent = LLMExecutor(provider="scripted", client_tools=["time_zone"], exit_tool=True)
    engine = TaskEngine("llm", agent, MemoryStore())
    first = await engine.send(req(Part(text="time_zone then exit")))
    assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
    done = await engine.send(req(answer(tool_call(first), "UTC"), task=first))
    assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
    # exit ran after the client's tool: the answer carries {"done": true}
    [artifact] = done.artifacts or []
    assert any(p.data == {"done": True} for p in artifact.parts)


CONFIRM = {
    "name": "confirm",
    "description": "Ask the user to confirm",
    "parameters": {
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
}


async def test_a_failed_client_tool_is_told_to_the_model() -> None:
    engine = TaskEngine(
        "llm", LLMExecutor(provider="scripted", client_tools=[CONFIRM]), MemoryStore()
    )
    first = await engine.send(req(Part(text="please confirm this")))
    assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
    call = tool_call(first)
    assert call["tool_id"] == "confirm" and isinstance(call["params"].get("question"), str)
    done = await engine.send(req(answer(call, "the user said no", "error"), task=first))
    assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
    assert done.status.message is not None
    assert "the user said no" in text_of(done.status.message.parts)


def test_bad_client_tool_options_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown key"):
        LLMExecutor(provider="scripted", client_tools=[{"name": "x", "bogus": 1}])
    with pytest.raises(ValueError, match="embedded"):
        LLMExecutor(provider="embedded", client_tools="time_zone")


@pytest.fixture
async def live(hub_factory: Callable[..., Hub]) -> AsyncIterator[LiveServer]:
    hub = hub_factory({"llm": "llm?provider=scripted&client_tools=time_zone"})
    async with LiveServer(hub) as server:
        yield server


async def test_round_trip_over_json_rpc(live: LiveServer) -> None:
    async def rpc(http: httpx.AsyncClient, message: dict[str, Any]) -> dict[str, Any]:
        r = await http.post(
            f"{live.url}/a2a/llm",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": message},
            },
            headers={"A2A-Version": "1.0"},
        )
        task: dict[str, Any] = r.json()["result"]["task"]
        return task

    async with httpx.AsyncClient(timeout=30) as http:
        first = await rpc(http, {"messageId": "m1", "role": "ROLE_USER",
                                 "parts": [{"text": "my time_zone?"}]})  # fmt: skip
        assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        [call] = [p["data"] for p in first["status"]["message"]["parts"] if "data" in p]
        reply = {"kind": "tool_response", "tool_call_id": call["tool_call_id"],
                 "result": {"status": "success", "data": "Asia/Tokyo"}}  # fmt: skip
        follow = {"messageId": "m2", "role": "ROLE_USER", "taskId": first["id"],
                  "contextId": first["contextId"], "parts": [{"data": reply}]}  # fmt: skip
        done = await rpc(http, follow)
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "time_zone → Asia/Tokyo" in done["status"]["message"]["parts"][0]["text"]


async def test_round_trip_over_the_websocket(live: LiveServer) -> None:
    async with connect(ws_url(live, "llm")) as ws:
        await send(ws, action="send_message", message_id="m", text="my time_zone please")
        events = await until(ws, terminal)
        assert events[-1]["status"] == "input-required"
        [call] = [e for e in events if e["event"] == "tool_call"]
        assert call["tool_id"] == "time_zone"
        await send(ws, action="tool_response", tool_call_id=call["tool_call_id"],
                   result={"status": "success", "data": "America/Lima"})  # fmt: skip
        events = await until(ws, terminal)
        assert events[-1]["status"] == "completed"
        done = next(e for e in events if e["event"] == "message_completed")
        assert done["response"]["content"].endswith("time_zone → America/Lima")
        await send(ws, action="ping")
        assert (await recv(ws))["event"] == "pong"
