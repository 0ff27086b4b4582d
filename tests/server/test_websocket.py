"""The WebSocket event channel (seed 003) against a real uvicorn server and `websockets`."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import websockets

from a2a_hub import Hub, metrics
from a2a_hub.stores.base import TaskQuery
from tests.support.agents import ChattyExecutor, ProgressAgent, SlowExecutor, ToolAgent
from tests.support.hub import LiveServer
from tests.support.ws import connect, iso, recv, send, terminal, until, ws_url


@pytest.fixture
async def server(hub_factory: Callable[..., Hub]) -> AsyncIterator[LiveServer]:
    hub = hub_factory(
        {
            "echo": "echo",
            "slow": SlowExecutor(),
            "chatty": ChattyExecutor(chunks=60, pause_every=1, delay=0.0),
            "tool": ToolAgent(),
            "progress": ProgressAgent(),
        },
        default_agent="echo",
        ws_max_frame_bytes=4096,
        ws_max_sockets=3,
    )
    async with LiveServer(hub) as live:
        yield live


async def test_send_message_streams_and_completes(server: LiveServer) -> None:
    sent_before = metrics.WEBSOCKET_EVENTS.values.get((), 0.0)
    async with connect(ws_url(server, "echo")) as ws:
        mid = str(uuid.uuid4())
        await send(ws, action="send_message", message_id=mid, text="hola")
        events = await until(ws, terminal)
    assert metrics.WEBSOCKET_EVENTS.values.get((), 0.0) - sent_before >= len(events)
    kinds = [e["event"] for e in events]
    assert "content_stream" in kinds and "message_completed" in kinds
    for e in events:
        assert e["task_id"] and isinstance(e["seq"], int) and e["seq"] > 0
        iso(e["timestamp"])
    chunk = next(e for e in events if e["event"] == "content_stream")
    assert chunk["chunk"] == "echo: hola" and chunk["message_id"] == mid
    done = next(e for e in events if e["event"] == "message_completed")
    assert done["response"] == {"content": "echo: hola", "type": "text", "sources": [],
                                "metadata": {}}  # fmt: skip
    statuses = [e["status"] for e in events if e["event"] == "message_status_update"]
    assert statuses[0] == "processing" and statuses[-1] == "completed"
    last = events[-1]
    assert last["global_task_id"] == last["task_id"] and last["progress"] == 1.0
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs)


async def test_default_agent_and_unknown_agent(server: LiveServer) -> None:
    async with connect(ws_url(server, None)) as ws:
        await send(ws, action="send_message", message_id="m1", text="root")
        events = await until(ws, terminal)
        assert any(e.get("chunk") == "echo: root" for e in events)
    async with connect(ws_url(server, "nobody")) as ws:
        err = await recv(ws)
        assert err["event"] == "error" and err["code"] == "agent_not_found"
        assert err["details"]["error"] == "AGENT_NOT_FOUND"
        with pytest.raises(websockets.ConnectionClosed):
            await recv(ws)


async def test_ping_pong_echoes_the_timestamp(server: LiveServer) -> None:
    async with connect(ws_url(server, "echo")) as ws:
        await send(ws, action="ping", client_timestamp="2026-01-01T00:00:00Z")
        pong = await recv(ws)
    assert pong["event"] == "pong" and pong["client_timestamp"] == "2026-01-01T00:00:00Z"
    iso(pong["timestamp"])


async def test_bad_frames_get_errors_and_the_socket_stays_open(server: LiveServer) -> None:
    async with connect(ws_url(server, "echo")) as ws:
        await ws.send("{not json")
        assert (await recv(ws))["code"] == "parse_error"
        await ws.send("[1, 2]")
        assert (await recv(ws))["code"] == "invalid_request"
        await send(ws, action="dance")
        err = await recv(ws)
        assert err["code"] == "method_not_found" and err["details"]["error"] == "METHOD_NOT_FOUND"
        await send(ws, action="send_message", message_id=5, text="x")
        assert (await recv(ws))["code"] == "invalid_params"
        await send(ws, action="send_message", message_id="big", text="x" * 5000)
        assert (await recv(ws))["code"] == "payload_too_large"
        await send(ws, action="cancel_task", global_task_id="no-such-task")
        err = await recv(ws)
        assert err["code"] == "task_not_found" and err["task_id"] == "no-such-task"
        await send(ws, action="tool_response", tool_call_id="nope", result={"status": "success"})
        assert (await recv(ws))["code"] == "invalid_params"
        await send(ws, action="ping")
        assert (await recv(ws))["event"] == "pong"
    hub = server.hub
    page = await hub.store.list_tasks("echo", TaskQuery())
    assert page.tasks == []


async def test_cancel_task(server: LiveServer) -> None:
    async with connect(ws_url(server, "slow")) as ws:
        await send(ws, action="send_message", message_id="m", text="work")
        events = await until(ws, lambda e: e.get("message") == "thinking")
        task_id = events[-1]["task_id"]
        await send(ws, action="cancel_task", global_task_id=task_id)
        events = await until(ws, terminal)
    assert events[-1]["status"] == "canceled" and events[-1]["global_task_id"] == task_id
    assert any(e["event"] == "message_status_update" and e["status"] == "failed" for e in events)


async def test_progress_server_tools_and_sources(server: LiveServer) -> None:
    async with connect(ws_url(server, "progress")) as ws:
        await send(ws, action="send_message", message_id="m", text="go")
        events = await until(ws, terminal)
    progress = [e for e in events if e["event"] == "task_status_update" and e["progress"] == 0.5]
    assert progress and progress[0]["message"] == "reading documents"
    kinds = [e["event"] for e in events]
    call = events[kinds.index("tool_call")]
    response = events[kinds.index("tool_response")]
    assert kinds.index("tool_call") < kinds.index("tool_response")
    assert call["tool_id"] == "search" and call["params"] == {"q": "x"}
    assert call["tool_call_id"] == response["tool_call_id"] == "c1"
    assert response["result"] == {"status": "success", "data": {"hits": 1}}
    done = events[kinds.index("message_completed")]
    assert done["response"]["sources"] == [
        {"title": "Doc A", "url": "https://a.example", "snippet": "alpha"}
    ]


async def test_client_tool_round_trip(server: LiveServer) -> None:
    async with connect(ws_url(server, "tool")) as ws:
        await send(ws, action="send_message", message_id="m", text="hi")
        events = await until(ws, terminal)
        assert events[-1]["status"] == "input-required"
        call = next(e for e in events if e["event"] == "tool_call")
        assert call["tool_id"] == "time_zone" and call["params"] == {"why": "greeting"}
        await send(
            ws,
            action="tool_response",
            tool_call_id="unknown-id",
            result={"status": "success", "data": {}},
        )
        assert (await recv(ws))["event"] == "error"
        await send(
            ws,
            action="tool_response",
            tool_call_id=call["tool_call_id"],
            result={"status": "success", "data": {"zone": "Europe/Madrid"}},
        )
        events = await until(ws, terminal)
    assert events[-1]["status"] == "completed"
    done = next(e for e in events if e["event"] == "message_completed")
    assert done["response"]["content"] == "your zone is Europe/Madrid"


async def test_sync_state_replays_exactly_what_was_missed(server: LiveServer) -> None:
    """Drop the socket at several points of a streamed task; every chunk arrives once.

    One task event may give several socket events with the same seq, so the client
    resumes after the seq before its newest one and skips the (seq, event) it has.
    """
    chunks: list[str] = []
    seen: set[tuple[int, str]] = set()
    newest = 0
    task_id = ""

    def take(event: dict[str, Any], boundary: int) -> None:
        nonlocal newest
        key = (event["seq"], event["event"])
        if key in seen:
            assert event["seq"] == boundary + 1  # only the replayed boundary group repeats
            return
        assert event["seq"] >= newest  # in order
        seen.add(key)
        newest = event["seq"]
        if event["event"] == "content_stream":
            chunks.append(event["chunk"])

    async with connect(ws_url(server, "chatty")) as ws:
        await send(ws, action="send_message", message_id="m", text="go")
        for _ in range(5):
            event = await recv(ws)
            task_id = event["task_id"]
            take(event, -1)
    finished = False
    drops = 0
    while not finished:
        drops += 1
        boundary = newest - 1
        async with connect(ws_url(server, "chatty")) as ws:
            await send(ws, action="sync_state", last_message_id="m", last_seq={task_id: boundary})
            for _ in range(7):
                event = await recv(ws)
                if event["event"] == "sync_completed":
                    continue
                take(event, boundary)
                if terminal(event):
                    finished = True
                    break
    assert drops > 1
    assert chunks == [f"{i:06d}".ljust(8, ".") for i in range(60)]


async def test_sync_state_by_message_id_and_with_nothing_known(server: LiveServer) -> None:
    async with connect(ws_url(server, "slow")) as ws:
        await send(ws, action="send_message", message_id="first", text="w", context_id="ctx-1")
        events = await until(ws, lambda e: e.get("message") == "thinking")
        task_id = events[-1]["task_id"]
    async with connect(ws_url(server, "slow")) as ws:
        await send(ws, action="sync_state", last_message_id="first", context_id="ctx-1")
        replay = await until(ws, lambda e: e["event"] == "sync_completed")
        assert [e["seq"] for e in replay[:-1]] == [e["seq"] for e in events]
        assert replay[-1]["tasks"] == {task_id: events[-1]["seq"]}
    async with connect(ws_url(server, "slow")) as ws:
        await send(ws, action="sync_state", context_id="ctx-1")
        state = await until(ws, lambda e: e["event"] == "task_status_update")
        assert state[-1]["status"] == "processing" and state[-1]["global_task_id"] == task_id
        await send(ws, action="cancel_task", global_task_id=task_id)
        events = await until(ws, terminal)
        assert events[-1]["status"] == "canceled"


async def test_socket_limit_per_agent(server: LiveServer) -> None:
    url = ws_url(server, "echo")
    async with (
        connect(url) as a,
        connect(url) as b,
        connect(url) as c,
    ):
        for ws in (a, b, c):
            await send(ws, action="ping")
            assert (await recv(ws))["event"] == "pong"
        async with connect(url) as d:
            err = await recv(d)
            assert err["event"] == "error" and "too many" in err["message"]
            with pytest.raises(websockets.ConnectionClosed):
                await recv(d)
    async with connect(url) as again:  # freed once they closed
        await send(again, action="ping")
        assert (await recv(again))["event"] == "pong"


async def test_idle_socket_is_closed(hub_factory: Callable[..., Hub]) -> None:
    hub = hub_factory({"echo": "echo"}, ws_idle_timeout=0.3)
    async with LiveServer(hub) as live, connect(ws_url(live, "echo")) as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
