"""The client's WebSocket transport (``--transport ws``: A2A over WebSocket, subprotocol
``a2a.jsonrpc.v1``) against our server, and ``a2a-hub send --transport ws``."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from a2a_hub.client import A2AClient, Conversation, RetryPolicy
from a2a_hub.client.transports import WebSocketTransport
from a2a_hub.protocol.errors import A2AError, TaskNotCancelableError, TaskNotFoundError
from a2a_hub.protocol.types import SendMessageConfiguration, Task, TaskState
from tests.support.agents import ChattyExecutor, PizzaExecutor, SlowExecutor
from tests.support.hub import LiveServer, make_hub
from tests.support.processes import child_env

FAST = RetryPolicy(initial=0.01, max_delay=0.05)


@pytest.fixture
async def ours() -> AsyncIterator[LiveServer]:
    hub = make_hub(
        {
            "echo": "echo",
            "pizza": PizzaExecutor(),
            "slow": SlowExecutor(),
            "chatty": ChattyExecutor(chunks=30, pause_every=3),
        }
    )
    async with LiveServer(hub) as live:
        yield live


def open_sockets(server: LiveServer, agent: str) -> int:
    sockets: Any = getattr(server.app.state, "ws_sockets", None)
    return 0 if sockets is None else int(sockets.agents[agent])


def text(task: Task) -> str:
    return "".join(p.text or "" for a in task.artifacts or [] for p in a.parts)


async def test_every_operation_over_one_socket(ours: LiveServer) -> None:
    url = f"{ours.url}/a2a/echo"
    async with await A2AClient.connect(url, transport="ws", retry=FAST) as echo:
        assert isinstance(echo.transport, WebSocketTransport)
        assert echo.transport.ws_url == f"{ours.url.replace('http', 'ws')}/a2a/echo/ws"
        task = await echo.send("hello")
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        assert text(task) == "echo: hello"
        got = await echo.get_task(task.id)
        assert got.id == task.id and got.status.state is TaskState.COMPLETED
        page = await echo.list_tasks(context_id=task.context_id)
        assert [t.id for t in page.tasks] == [task.id]
        with pytest.raises(TaskNotCancelableError):
            await echo.cancel_task(task.id)
        with pytest.raises(TaskNotFoundError):
            await echo.get_task("nope")
        events = [item async for item in echo.stream("streamed")]
        assert events[-1].response.status_update is not None
        assert events[-1].response.status_update.status.state is TaskState.COMPLETED
        assert open_sockets(ours, "echo") == 1  # all of it on one socket
    async with await A2AClient.connect(f"{ours.url}/a2a/pizza", transport="ws") as pizza:
        chat = Conversation(pizza)
        first = await chat.send("I want pizza")
        assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
        items = [i async for i in chat.stream("funghi")]
        assert items[0].response.task is not None
        assert chat.state is TaskState.COMPLETED
    async with await A2AClient.connect(f"{ours.url}/a2a/slow", transport="ws") as slow:
        started = await slow.send(
            "x", configuration=SendMessageConfiguration(return_immediately=True)
        )
        assert isinstance(started, Task)
        canceled = await slow.cancel_task(started.id)
        assert canceled.status.state is TaskState.CANCELED


async def test_concurrent_streams_and_leaving_one_early(ours: LiveServer) -> None:
    url = f"{ours.url}/a2a/chatty"
    async with await A2AClient.connect(url, transport="ws", retry=FAST) as chatty:

        async def whole(word: str) -> list[Any]:
            return [item async for item in chatty.stream(word)]

        one, two = await asyncio.gather(whole("one"), whole("two"))
        for items in (one, two):
            last = items[-1].response.status_update
            assert last is not None and last.status.state is TaskState.COMPLETED
        assert one[0].response.task is not None and two[0].response.task is not None
        assert one[0].response.task.id != two[0].response.task.id
        stream = chatty.stream("left early")
        first = await anext(stream)  # type: ignore[arg-type]
        await stream.aclose()  # type: ignore[attr-defined]
        assert first.response.task is not None
        # the socket serves on (the server stopped that stream on cancelStream)
        done = await chatty.send("after")
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        assert open_sockets(ours, "chatty") == 1


async def test_leaving_a_stream_early_frees_its_slot() -> None:
    """The server allows one stream per socket here: a second stream is served only because
    leaving the first sent cancelStream."""
    slow = SlowExecutor()
    async with LiveServer(make_hub({"slow": slow}, ws_max_streams=1)) as server:
        url = f"{server.url}/a2a/slow"
        async with await A2AClient.connect(url, transport="ws", retry=FAST) as client:
            for word in ("first", "second", "third"):
                stream = client.stream(word)
                item = await anext(stream)  # type: ignore[arg-type]
                assert item.response.task is not None
                await stream.aclose()  # type: ignore[attr-defined]
            page = await client.list_tasks()
            assert len(page.tasks) == 3
            assert all(t.status.state is TaskState.WORKING for t in page.tasks)  # streams only


async def test_the_card_must_offer_json_rpc_1_0(ours: LiveServer) -> None:
    with pytest.raises(A2AError, match="offers no ws interface"):
        await A2AClient.connect(f"{ours.url}/a2a/echo/.well-known/agent.json", transport="ws")


async def test_cli_send_with_transport_ws(ours: LiveServer) -> None:
    url = f"{ours.url}/a2a/echo"
    for extra in ([], ["--stream"]):
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "a2a_hub",
            "send",
            "--transport",
            "ws",
            *extra,
            url,
            "over the socket",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**child_env(), "COLUMNS": "200", "NO_COLOR": "1"},
            cwd=os.getcwd(),
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, err.decode()
        assert "echo: over the socket" in out.decode() and "completed" in out.decode()
    page = await ours.hub.agent("echo").engine.list_tasks(_all())
    assert len(page.tasks) == 2
    assert getattr(ours.app.state, "ws_sockets", None) is not None  # they came by WebSocket


def _all() -> Any:
    from a2a_hub.protocol.types import ListTasksRequest

    return ListTasksRequest()
