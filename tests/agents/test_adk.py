"""Google ADK agents hosted unchanged, through real HTTP with the official a2a-sdk client.

The agents (tests/support/adk_agents.py) reach the hub's own LLM endpoint through LiteLLM;
the hub runs the scripted provider, whose reply depends on how many user turns the
conversation holds ("You said …" for the first, "About …" for the second, "Consider …" for
the third), so a reply shows what the ADK session remembered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("google.adk", reason="the adk extra is not installed")

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_message_text, new_text_message
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Value

from tests.support.processes import ROOT, child_env, free_port, wait_http
from tests.support.sse import frames, rpc_body, user_message
from tests.support.stores import POSTGRES_URL, missing_service

# Each hub imports ADK and LiteLLM at start (tens of seconds on a busy machine).
# One worker runs them all (--dist loadgroup), so the module's hub starts once.
pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("adk")]

AGENTS = (
    "calc=tests.support.adk_agents:root_agent",
    "broken=tests.support.adk_agents:broken_agent",
    "trips=adk_agent:root_agent",  # examples/adk_agent.py, the README's example
)
V10 = {"A2A-Version": "1.0"}


@contextlib.contextmanager
def adk_hub(cwd: Path, store: str, *, port: int | None = None) -> Iterator[str]:
    """``a2a-hub serve`` of the test ADK agents over ``store`` on the scripted LLM."""
    port = port or free_port()
    args = [sys.executable, "-m", "a2a_hub", "serve", "--port", str(port), "--store", store,
            "--llm-provider", "scripted", "--log-level", "warning",
            "--app-dir", str(ROOT / "examples")]  # fmt: skip
    for agent in AGENTS:
        args += ["--agent", agent]
    log_path = cwd / f"hub-{port}-{time.monotonic_ns()}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, cwd=cwd, env=child_env(), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            wait_http(f"{url}/healthz", proc, log_path, timeout=300)
            yield url
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One hub on a SQLite file for the module (ADK takes long to import)."""
    folder = tmp_path_factory.mktemp("adk")
    store = f"sqlite:///{folder}/hub.db"
    with adk_hub(folder, store) as url:
        yield url, folder


async def sdk_client(http: httpx.AsyncClient, url: str, *, streaming: bool = False) -> Any:
    card = await A2ACardResolver(http, url).get_agent_card()
    config = ClientConfig(
        httpx_client=http, streaming=streaming, supported_protocol_bindings=["JSONRPC"]
    )
    return ClientFactory(config).create(card)


def user(text: str, *, task_id: str | None = None, context_id: str | None = None) -> Any:
    return new_text_message(text, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)


async def send(client: Any, message: Any, **config: Any) -> Any:
    """One blocking send; the task it answers with."""
    request = SendMessageRequest(message=message)
    if config:
        request.configuration.CopyFrom(SendMessageConfiguration(**config))
    events = [e async for e in client.send_message(request)]
    assert len(events) == 1 and events[0].WhichOneof("payload") == "task", events
    return events[0].task


def data_parts(parts: Any) -> list[dict[str, Any]]:
    return [MessageToDict(p.data) for p in parts if p.WhichOneof("content") == "data"]


async def test_the_card_comes_from_the_adk_agent(hub: tuple[str, Path]) -> None:
    url, _ = hub
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, f"{url}/a2a/calc").get_agent_card()
    assert card.name == "calculator"
    assert card.description == "Adds numbers and asks a manager for refunds."
    names = {s.name for s in card.skills}
    assert {"add", "ask_manager", "wait_long"} <= names, names
    assert card.capabilities.streaming


async def test_a_blocking_send_shows_the_tool_call_and_its_result(hub: tuple[str, Path]) -> None:
    url, _ = hub
    async with httpx.AsyncClient(timeout=120) as http:
        client = await sdk_client(http, f"{url}/a2a/calc")
        task = await send(client, user('please add {"a": 2, "b": 3}'))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
        answer = '[scripted] Tool results: add → {"sum": 5}'
        assert get_artifact_text(task.artifacts[-1]) == answer
        assert get_message_text(task.status.message) == answer
        full = await client.get_task(GetTaskRequest(id=task.id, history_length=50))
    shown = [d for m in full.history for d in data_parts(m.parts)]
    calls = [d for d in shown if d.get("kind") == "tool_call"]
    results = [d for d in shown if d.get("kind") == "tool_response"]
    assert [(c["tool_id"], c["params"]) for c in calls] == [("add", {"a": 2, "b": 3})]
    assert results[0]["tool_call_id"] == calls[0]["tool_call_id"]
    assert results[0]["result"] == {"status": "success", "data": {"sum": 5}}


async def test_a_streamed_send_comes_in_chunks_in_order_and_replays(
    hub: tuple[str, Path],
) -> None:
    url, _ = hub
    async with httpx.AsyncClient(timeout=120) as http:
        client = await sdk_client(http, f"{url}/a2a/calc", streaming=True)
        request = SendMessageRequest(message=user("tell me about rivers"))
        events = [e async for e in client.send_message(request)]
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds[0] == "task" and kinds[-1] == "status_update"
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        chunks = [e.artifact_update for e in events if e.WhichOneof("payload") == "artifact_update"]
        assert len(chunks) > 3, "the reply came in several chunks"
        assert len({c.artifact.artifact_id for c in chunks}) == 1
        assert not chunks[0].append and all(c.append for c in chunks[1:])
        assert chunks[-1].last_chunk and not any(c.last_chunk for c in chunks[:-1])
        text = "".join(get_artifact_text(c.artifact) for c in chunks)
        assert text == '[scripted] You said "tell me about rivers". That is worth a careful answer.'
        # the same stream by its event ids, then again from a Last-Event-ID
        body = rpc_body("SendStreamingMessage", {"message": user_message("and lakes?")})
        async with http.stream("POST", f"{url}/a2a/calc", json=body, headers=V10) as s:
            seen = [(f.id, f.data["result"]) async for f in frames(s) if not f.comment]
        task_id = seen[0][1]["task"]["id"]
        body = rpc_body("SubscribeToTask", {"id": task_id})
        headers = {**V10, "Last-Event-ID": str(seen[2][0])}
        async with http.stream("POST", f"{url}/a2a/calc", json=body, headers=headers) as s:
            replayed = [(f.id, f.data["result"]) async for f in frames(s) if not f.comment]
    assert replayed == seen[3:]
    assert [i for i, _ in seen] == sorted(i for i, _ in seen)


async def test_a_conversation_keeps_its_context_across_turns_and_a_restart(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path}/hub.db"
    port = free_port()
    async with httpx.AsyncClient(timeout=120) as http:
        with adk_hub(tmp_path, store, port=port) as url:
            client = await sdk_client(http, f"{url}/a2a/calc")
            first = await send(client, user("cats"))
            assert get_message_text(first.status.message).startswith('[scripted] You said "cats"')
            second = await send(client, user("dogs", context_id=first.context_id))
            said = get_message_text(second.status.message)
            assert said.startswith('[scripted] About "dogs"'), said
        with adk_hub(tmp_path, store, port=port) as url:  # the same file, a new process
            client = await sdk_client(http, f"{url}/a2a/calc")
            third = await send(client, user("birds", context_id=first.context_id))
            said = get_message_text(third.status.message)
            assert said.startswith('[scripted] Consider "birds"'), said
            other = await send(client, user("fish"))  # a new context starts afresh
            assert get_message_text(other.status.message).startswith("[scripted] You said")


async def test_a_long_running_tool_asks_for_input_and_the_next_message_resumes_it(
    hub: tuple[str, Path],
) -> None:
    url, _ = hub
    async with httpx.AsyncClient(timeout=120) as http:
        client = await sdk_client(http, f"{url}/a2a/calc")
        task = await send(client, user('refund: ask_manager {"amount": 30}'))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task
        (call,) = [d for d in data_parts(task.status.message.parts) if d["kind"] == "tool_call"]
        assert call["tool_id"] == "ask_manager" and call["params"] == {"amount": 30}
        # answered with text
        done = await send(client, user("approved", task_id=task.id, context_id=task.context_id))
        assert done.id == task.id and done.status.state == TaskState.TASK_STATE_COMPLETED
        assert '{"result": "approved"}' in get_message_text(done.status.message)
        # answered with the hub's tool_response part
        task = await send(client, user('refund: ask_manager {"amount": 99}'))
        (call,) = [d for d in data_parts(task.status.message.parts) if d["kind"] == "tool_call"]
        answer = new_text_message("", role=Role.ROLE_USER, task_id=task.id,
                                  context_id=task.context_id)  # fmt: skip
        del answer.parts[:]
        answer.parts.append(Part(data=Value()))
        answer.parts[0].data.struct_value.update(
            {
                "kind": "tool_response",
                "tool_call_id": call["tool_call_id"],
                "result": {"status": "success", "data": {"approved": False}},
            }
        )
        done = await send(client, answer)
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert '{"approved": false}' in get_message_text(done.status.message)


async def test_a_running_adk_task_is_canceled(hub: tuple[str, Path]) -> None:
    url, _ = hub
    async with httpx.AsyncClient(timeout=120) as http:
        client = await sdk_client(http, f"{url}/a2a/calc")
        task = await send(client, user('wait_long {"seconds": 3600}'), return_immediately=True)
        for _ in range(600):  # until the tool runs (its call is shown)
            got = await client.get_task(GetTaskRequest(id=task.id, history_length=20))
            if any(d.get("tool_id") == "wait_long" for m in got.history
                   for d in data_parts(m.parts)):  # fmt: skip
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError(f"the tool never ran: {got}")
        canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        # the conversation goes on after the cancel
        after = await send(client, user("still there?", context_id=task.context_id))
        assert after.status.state == TaskState.TASK_STATE_COMPLETED


async def test_an_adk_agent_that_raises_fails_its_task_with_the_reason(
    hub: tuple[str, Path],
) -> None:
    url, _ = hub
    async with httpx.AsyncClient(timeout=120) as http:
        client = await sdk_client(http, f"{url}/a2a/broken")
        task = await send(client, user("bake"))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    said = get_message_text(task.status.message)
    assert said == "the ADK agent broken failed: the oven is on fire"
    assert "Traceback" not in said


def test_an_adk_object_that_is_no_agent_is_refused_in_one_line(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "a2a_hub",
            "serve",
            "--port",
            str(free_port()),
            "--agent",
            "x=tests.support.adk_agents:not_an_agent",
        ],
        cwd=tmp_path,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) <= 2 and "Traceback" not in out.stderr, out.stderr
    assert "LongRunningFunctionTool from Google ADK" in out.stderr
    assert "a2a-hub hosts an ADK agent" in out.stderr


async def test_the_same_agent_on_two_instances_sharing_postgresql(tmp_path: Path) -> None:
    try:
        import asyncpg

        conn = await asyncpg.connect(POSTGRES_URL, timeout=10)
        await conn.close()
    except (OSError, ImportError, asyncpg.PostgresError) as exc:
        missing_service(f"PostgreSQL at {POSTGRES_URL}: {exc}")
    async with httpx.AsyncClient(timeout=120) as http:
        with adk_hub(tmp_path, POSTGRES_URL) as one, adk_hub(tmp_path, POSTGRES_URL) as two:
            a = await sdk_client(http, f"{one}/a2a/calc")
            b = await sdk_client(http, f"{two}/a2a/calc")
            first = await send(a, user("tea"))
            second = await send(b, user("coffee", context_id=first.context_id))
            said = get_message_text(second.status.message)
            assert said.startswith('[scripted] About "coffee"'), said
            third = await send(a, user("water", context_id=first.context_id))
            assert get_message_text(third.status.message).startswith('[scripted] Consider "water"')


async def test_the_example_plans_and_books_a_trip(hub: tuple[str, Path]) -> None:
    url, _ = hub
    async with httpx.AsyncClient(timeout=120) as http:
        client = await sdk_client(http, f"{url}/a2a/trips")
        assert client is not None
        card = await A2ACardResolver(http, f"{url}/a2a/trips").get_agent_card()
        assert card.name == "trip_planner"
        task = await send(client, user('distance_km {"origin": "Paris", "destination": "Lyon"}'))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert '"km": 465' in get_message_text(task.status.message)
        task = await send(client, user('book_trip {"origin": "Paris", "destination": "Lille"}'))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        done = await send(client, user("confirmed", task_id=task.id, context_id=task.context_id))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert '{"result": "confirmed"}' in get_message_text(done.status.message)


def test_sessions_live_where_the_hub_keeps_its_tasks() -> None:
    from google.adk.sessions import DatabaseSessionService, InMemorySessionService

    from a2a_hub.agents.frameworks.adk import session_service

    assert isinstance(session_service("memory://"), InMemorySessionService)
    assert isinstance(session_service(None), InMemorySessionService)
    on_sqlite = session_service("sqlite:////tmp/x/hub.db")
    assert isinstance(on_sqlite, DatabaseSessionService)
    assert on_sqlite.db_engine.url.drivername == "sqlite+aiosqlite"
    on_pg = session_service("postgresql://u@h:5432/db")
    assert isinstance(on_pg, DatabaseSessionService)
    assert on_pg.db_engine.url.drivername == "postgresql+asyncpg"
    assert json.dumps(str(on_pg.db_engine.url.database)) == '"db"'
