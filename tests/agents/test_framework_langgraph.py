"""A LangGraph graph hosted unchanged (examples/langgraph_agent.py's graph, its chat model
scripted), driven over real HTTP by the official a2a-sdk client."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, SendMessageRequest, TaskState

from a2a_hub.agents.frameworks.langgraph import LangGraphExecutor
from a2a_hub.agents.links import HubLinks
from a2a_hub.agents.loader import build_executor
from a2a_hub.settings import AgentSpec, SettingsError
from tests.support.frameworks import (
    data_parts,
    kinds,
    replay,
    sdk_client,
    send,
    stream,
    user,
    wait_state,
)
from tests.support.hub import LiveServer, make_hub
from tests.support.processes import ROOT, child_env, hub_process

GRAPH = "tests.support.langgraph_agents:graph"
COMPLETED, INPUT_REQUIRED = TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_INPUT_REQUIRED


def hosted(agent_id: str, executor: str, store_url: str | None = None) -> Any:
    spec = AgentSpec(id=agent_id, kind="python", executor=executor)
    return build_executor(spec, links=HubLinks(store_url=store_url))


@pytest.fixture
async def live() -> AsyncIterator[LiveServer]:
    hub = make_hub({"calc": hosted("calc", GRAPH, "memory://")})
    async with LiveServer(hub) as server:
        yield server


@pytest.fixture
async def calc(live: LiveServer) -> AsyncIterator[tuple[Any, Any]]:
    async with httpx.AsyncClient(timeout=30) as http:
        url = f"{live.url}/a2a/calc"
        yield await sdk_client(http, url), await sdk_client(http, url, streaming=True)


async def test_blocking_send_with_a_tool_call_shown_as_tool_parts(calc: tuple[Any, Any]) -> None:
    client, _ = calc
    task = (await send(client, "add 2 and 3")).task
    assert task.status.state == COMPLETED
    assert get_message_text(task.status.message) == "The result is 5.0"
    assert [a.name for a in task.artifacts] == ["response"]
    assert get_artifact_text(task.artifacts[0]) == "The result is 5.0"
    call, result = data_parts(task)
    assert call == {"kind": "tool_call", "tool_call_id": "call-add", "tool_id": "add",
                    "params": {"a": 2, "b": 3}}  # fmt: skip
    assert result["kind"] == "tool_response" and result["tool_call_id"] == "call-add"
    assert result["result"] == {"status": "success", "data": "5.0"}


async def test_streamed_send_in_chunks_in_order_and_replayed(
    live: LiveServer, calc: tuple[Any, Any]
) -> None:
    _, streaming = calc
    events = await stream(streaming, "tell me a story")
    answer = "once upon a time there was a hub that kept every word"
    assert kinds(events)[:2] == ["task", "status_update"]
    chunks = [e.artifact_update for e in events if e.WhichOneof("payload") == "artifact_update"]
    assert len(chunks) == len(answer.split())
    assert "".join(get_artifact_text(c.artifact) for c in chunks) == answer
    assert [c.append for c in chunks] == [False] + [True] * (len(chunks) - 1)
    assert [c.last_chunk for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert events[-1].status_update.status.state == COMPLETED
    assert get_message_text(events[-1].status_update.status.message) == answer
    # read again after the third event with Last-Event-ID: the same chunks from there on
    again = await replay(live.url, "calc", events[0].task.id, after=3)
    assert [seq for seq, _ in again] == list(range(4, 4 + len(again)))
    texts = [d["artifactUpdate"]["artifact"]["parts"][0]["text"] for _, d in again
             if "artifactUpdate" in d]  # fmt: skip
    assert texts == [get_artifact_text(c.artifact) for c in chunks][1:]


async def test_context_kept_across_turns(calc: tuple[Any, Any]) -> None:
    client, _ = calc
    first = (await send(client, "my name is Ada")).task
    other = (await send(client, "my name is Bob")).task  # another conversation
    second = await send_in_context(client, "what is my name?", first.context_id)
    assert get_message_text(second.status.message) == "Your name is Ada"
    third = await send_in_context(client, "what is my name?", other.context_id)
    assert get_message_text(third.status.message) == "Your name is Bob"


async def send_in_context(client: Any, text: str, context_id: str) -> Any:
    """A new task in an existing conversation (contextId, no taskId)."""
    events = [
        e
        async for e in client.send_message(
            SendMessageRequest(message=user(text, context_id=context_id))
        )
    ]
    return events[0].task


async def test_interrupt_is_input_required_and_the_next_message_resumes(
    calc: tuple[Any, Any],
) -> None:
    client, streaming = calc
    asked = (await send(client, "ask me for a number")).task
    assert asked.status.state == INPUT_REQUIRED
    assert get_message_text(asked.status.message) == "Which number?"
    events = await stream(streaming, "7", asked)
    assert events[-1].status_update.status.state == COMPLETED
    assert get_message_text(events[-1].status_update.status.message) == "You said 7"
    done = await client.get_task(GetTaskRequest(id=asked.id))
    assert done.status.state == COMPLETED
    assert [p["tool_id"] for p in data_parts(done) if p["kind"] == "tool_call"] == ["ask_human"]


async def test_cancel_of_a_running_graph(calc: tuple[Any, Any]) -> None:
    client, _ = calc
    task = (await send(client, "think slowly", return_immediately=True)).task
    await wait_state(client, task.id, TaskState.TASK_STATE_WORKING)
    canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    # the conversation goes on after the canceled turn
    after = await send_in_context(client, "my name is Eve", task.context_id)
    assert after.status.state == COMPLETED


@pytest.mark.timeout(600)  # two hub processes that import the framework, on a loaded machine
def test_conversation_survives_a_restart_of_the_hub_on_sqlite(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'hub.db'}"

    async def turn(url: str, text: str, context_id: str | None = None) -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            client = await sdk_client(http, f"{url}/a2a/calc")
            if context_id is None:
                return (await send(client, text)).task
            return await send_in_context(client, text, context_id)

    with hub_process(f"calc={GRAPH}", cwd=tmp_path, store=store, start_timeout=180) as url:
        first = asyncio.run(turn(url, "my name is Ada"))
        asked = asyncio.run(turn(url, "ask me for a number"))
    assert (tmp_path / "hub.langgraph.db").is_file()  # the checkpoints, beside the tasks
    with hub_process(f"calc={GRAPH}", cwd=tmp_path, store=store, start_timeout=180) as url:
        again = asyncio.run(turn(url, "what is my name?", first.context_id))
        resumed = asyncio.run(turn(url, "12", asked.context_id))
    assert get_message_text(again.status.message) == "Your name is Ada"
    assert get_message_text(resumed.status.message) == "You said 12"


async def test_two_hubs_on_postgresql_share_the_conversation() -> None:
    """The checkpoints live in the PostgreSQL store's database: a conversation begun on one
    instance goes on on another."""
    from tests.support.cli import reachable
    from tests.support.stores import POSTGRES_URL, missing_service

    if not reachable(POSTGRES_URL):
        missing_service(f"PostgreSQL at {POSTGRES_URL} is not reachable")
    one = make_hub({"calc": hosted("calc", GRAPH, POSTGRES_URL)})
    two = make_hub({"calc": hosted("calc", GRAPH, POSTGRES_URL)})
    async with (
        LiveServer(one) as first,
        LiveServer(two) as second,
        httpx.AsyncClient(timeout=30) as http,
    ):
        a = await sdk_client(http, f"{first.url}/a2a/calc")
        b = await sdk_client(http, f"{second.url}/a2a/calc")
        began = (await send(a, "my name is Grace")).task
        asked = (await send(a, "ask me for a number")).task
        again = await send_in_context(b, "what is my name?", began.context_id)
        resumed = await send_in_context(b, "3", asked.context_id)
    assert get_message_text(again.status.message) == "Your name is Grace"
    assert get_message_text(resumed.status.message) == "You said 3"


# --- the example, and bad input -------------------------------------------------------------


def test_the_example_is_hosted_with_its_model_at_the_hubs_llm_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("A2A_HUB_LLM_URL", "http://127.0.0.1:9/llm/v1")
    monkeypatch.delitem(sys.modules, "examples.langgraph_agent", raising=False)
    executor = hosted("calc", "examples.langgraph_agent:graph", "memory://")
    assert isinstance(executor, LangGraphExecutor) and executor.name == "Calculator"
    assert executor.skills is not None  # its tools, on the card
    assert [s["id"] for s in executor.skills] == ["add", "multiply", "ask_human"]
    assert executor.skills[0]["description"] == "Add two numbers."
    from examples.langgraph_agent import hub_model

    assert str(hub_model().openai_api_base) == "http://127.0.0.1:9/llm/v1"  # type: ignore[attr-defined]


def test_a_graph_without_messages_state_is_refused_in_one_line() -> None:
    with pytest.raises(SettingsError) as info:
        hosted("counter", "tests.support.langgraph_agents:no_messages")
    text = str(info.value)
    assert "\n" not in text and "no 'messages' state" in text and "count" in text


@pytest.mark.timeout(300)
def test_serve_refuses_a_graph_without_messages_in_one_line(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "a2a_hub", "serve", "--store", "memory://",
         "--agent", "counter=tests.support.langgraph_agents:no_messages"],
        cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode != 0
    text = (out.stdout + out.stderr).strip()
    assert "Traceback" not in text
    assert "no 'messages' state" in text and len(text.splitlines()) <= 2, text


def test_a_missing_extra_names_the_pip_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_graph.py").write_text("from langgraph.graph import StateGraph\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "langgraph.graph", None)
    with pytest.raises(SettingsError) as info:
        hosted("x", "my_graph:graph")
    assert "pip install 'a2a-hub[langgraph]'" in str(info.value)
