"""The Python WebSocket client: events once each, across a server restart (SQLite store)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub._backoff import Backoff
from a2a_hub.client.websocket import (
    TERMINAL_STATUSES,
    WebSocketClient,
    WebSocketLostError,
    ws_url,
)
from tests.support.agents import Drip, ToolAgent
from tests.support.hub import LiveServer
from tests.support.processes import free_port


def test_ws_url() -> None:
    assert ws_url("http://h:1/a2a/x") == "ws://h:1/a2a/x/ws"
    assert ws_url("https://h/a2a/x/.well-known/agent-card.json") == "wss://h/a2a/x/ws"
    assert ws_url("ws://h/a2a/x/ws") == "ws://h/a2a/x/ws"


def _server(store: str, port: int, executors: dict[str, Any]) -> LiveServer:
    settings = Settings.from_flat(
        agents=[AgentSpec(id=name, kind="python", executor="x:y") for name in executors],
        store=store,
    )
    return LiveServer(Hub(settings, executors=executors), port=port)


async def test_client_tool_answered_by_the_client(tmp_path: Path) -> None:
    port = free_port()
    async with _server(f"sqlite:///{tmp_path}/a.db", port, {"tool": ToolAgent()}) as live:
        tools = {"time_zone": lambda params: {"zone": "UTC"}}
        async with WebSocketClient(f"{live.url}/a2a/tool", tools=tools) as client:
            await client.send_message("zone?")
            seen = []
            async for event in client.events():
                seen.append(event)
                if event["event"] == "task_status_update" and event["status"] == "completed":
                    break
    done = next(e for e in seen if e["event"] == "message_completed")
    assert done["response"]["content"] == "your zone is UTC"
    assert [e["status"] for e in seen if e["event"] == "task_status_update"].count(
        "input-required"
    ) == 1


async def test_resumes_across_a_server_restart(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/hub.db"
    port = free_port()
    first = _server(store, port, {"drip": Drip()})
    await first.__aenter__()
    chunks: list[str] = []
    fast = Backoff(initial=0.2, max_tries=10)
    client = WebSocketClient(f"{first.url}/a2a/drip", backoff=fast)
    await client.connect()
    second: LiveServer | None = None
    try:
        await client.send_message("go")
        async for event in client.events():
            if event["event"] == "content_stream":
                chunks.append(event["chunk"])
                if len(chunks) == 3 and second is None:
                    await first.__aexit__()
                    second = _server(store, port, {"drip": Drip()})
                    await second.__aenter__()
            if event["event"] == "task_status_update" and event["status"] in TERMINAL_STATUSES:
                break
    finally:
        await client.close()
        if second is not None:
            await second.__aexit__()
    assert client.reconnects >= 1
    assert chunks == [f"{i:06d}".ljust(8, ".") for i in range(len(chunks))]
    assert len(chunks) >= 3


async def test_gives_up_after_its_tries(tmp_path: Path) -> None:
    port = free_port()
    live = _server(f"sqlite:///{tmp_path}/b.db", port, {"tool": ToolAgent()})
    await live.__aenter__()
    client = WebSocketClient(f"{live.url}/a2a/tool", backoff=Backoff(initial=0.05, max_tries=2))
    await client.connect()
    await client.ping()
    await live.__aexit__()
    with pytest.raises(WebSocketLostError):
        async for _ in client.events():
            await asyncio.sleep(0)
