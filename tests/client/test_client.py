"""Our client against our server (four transports) and against the official SDK's server."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from a2a_hub import create_app
from a2a_hub.client import A2AClient, Conversation, RetryPolicy, StreamLostError
from a2a_hub.protocol.errors import TaskNotCancelableError, TaskNotFoundError
from a2a_hub.protocol.types import (
    Message,
    SendMessageConfiguration,
    Task,
    TaskState,
)
from tests.support.agents import ChattyExecutor, PizzaExecutor, SlowExecutor
from tests.support.hub import LiveServer, make_hub
from tests.support.sdk_server import SdkServer

OURS = ["jsonrpc-1.0", "rest-1.0", "jsonrpc-0.3", "jsonrpc-0.1"]
FAST = RetryPolicy(initial=0.01, max_delay=0.05)


@pytest.fixture
async def ours() -> AsyncIterator[LiveServer]:
    hub = make_hub(
        {
            "echo": "echo",
            "echo-msg": "echo?reply=message",
            "pizza": PizzaExecutor(),
            "slow": SlowExecutor(),
            "chatty": ChattyExecutor(chunks=60, pause_every=3),
        }
    )
    async with LiveServer(hub) as live:
        yield live


async def connect(live_url: str, agent: str, transport: str) -> A2AClient:
    base = f"{live_url}/a2a/{agent}"
    if transport == "jsonrpc-0.1":  # our 0.1 interface is announced by the legacy card
        return await A2AClient.connect(f"{base}/.well-known/agent.json", retry=FAST)
    return await A2AClient.connect(base, transport=transport, retry=FAST)


def text(task: Task) -> str:
    return "".join(p.text or "" for a in task.artifacts or [] for p in a.parts)


@pytest.mark.parametrize("transport", OURS)
async def test_against_our_server(ours: LiveServer, transport: str) -> None:
    async with await connect(ours.url, "echo", transport) as echo:
        assert echo.transport.version == transport.split("-")[1]
        task = await echo.send("hello")
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        assert text(task) == "echo: hello"
        got = await echo.get_task(task.id)
        assert got.id == task.id and got.status.state is TaskState.COMPLETED
        if transport in ("jsonrpc-1.0", "rest-1.0"):
            page = await echo.list_tasks(context_id=task.context_id)
            assert [t.id for t in page.tasks] == [task.id]
        with pytest.raises(TaskNotCancelableError):
            await echo.cancel_task(task.id)
        with pytest.raises(TaskNotFoundError):
            await echo.get_task("nope")
        events = [item async for item in echo.stream("streamed")]
        assert events[-1].response.status_update is not None
        assert events[-1].response.status_update.status.state is TaskState.COMPLETED
        assert [e.id for e in events] == list(range(1, len(events) + 1))
    async with await connect(ours.url, "pizza", transport) as pizza:
        chat = Conversation(pizza)
        first = await chat.send("I want pizza")
        assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
        assert chat.task_id == first.id
        done = await chat.send("margherita")
        assert isinstance(done, Task) and done.id == first.id
        assert done.status.state is TaskState.COMPLETED and chat.task_id is None
        assert chat.context_id is not None
        again = await chat.send("another")  # a new task in the same context
        assert isinstance(again, Task) and again.id != first.id
        asked = await pizza.send("pizza")
        assert isinstance(asked, Task)
        canceled = await pizza.cancel_task(asked.id)
        assert canceled.status.state is TaskState.CANCELED
    if transport == "jsonrpc-0.1":
        return  # 0.1 has no non-blocking send
    async with await connect(ours.url, "slow", transport) as slow:
        started = await slow.send(
            "x", configuration=SendMessageConfiguration(return_immediately=True)
        )
        assert isinstance(started, Task)
        canceled = await slow.cancel_task(started.id)
        assert canceled.status.state is TaskState.CANCELED


async def test_message_replies_and_streamed_conversation(ours: LiveServer) -> None:
    async with await connect(ours.url, "echo-msg", "jsonrpc-1.0") as echo:
        reply = await echo.send("hi", context_id="ctx-7")
        assert isinstance(reply, Message) and reply.context_id == "ctx-7"
    async with await connect(ours.url, "pizza", "rest-1.0") as pizza:
        chat = Conversation(pizza)
        states = [
            i.response.status_update.status.state
            async for i in chat.stream("pizza")
            if i.response.status_update
        ]
        assert states[-1] is TaskState.INPUT_REQUIRED and chat.task_id
        items = [i async for i in chat.stream("funghi")]
        assert items[0].response.task is not None  # a continued turn starts with the snapshot
        assert chat.task_id is None and chat.state is TaskState.COMPLETED


class Saboteur:
    """ASGI middleware that cuts event streams after a few frames, ``kills`` times in all."""

    def __init__(
        self,
        app: Any,
        kills: int,
        seed: int = 7,
        budgets: tuple[int, int] = (2, 25),
        first_budget: int | None = None,
    ) -> None:
        self.app = app
        self.kills = kills
        self.rng = random.Random(seed)
        self.budgets = budgets
        self.first_budget = first_budget

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.kills <= 0:
            await self.app(scope, receive, send)
            return
        budget = 0
        streaming = False

        async def cutting_send(message: Any) -> None:
            nonlocal budget, streaming
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                streaming = headers.get(b"content-type", b"").startswith(b"text/event-stream")
                if streaming:
                    budget = self.rng.randint(*self.budgets)
                    if self.first_budget is not None:
                        budget, self.first_budget = self.first_budget, None
            elif streaming and message["type"] == "http.response.body" and self.kills > 0:
                budget -= 1
                if budget < 0:
                    self.kills -= 1
                    raise ConnectionAbortedError("saboteur cut the stream")
            await send(message)

        await self.app(scope, receive, cutting_send)


@pytest.mark.parametrize("transport", ["jsonrpc-1.0", "rest-1.0", "jsonrpc-0.3"])
async def test_stream_survives_server_side_cuts(transport: str) -> None:
    hub = make_hub({"chatty": ChattyExecutor(chunks=120, pause_every=2)})
    live = LiveServer(hub)
    # a write may carry several events: cut after a few writes
    saboteur = Saboteur(create_app(hub), kills=5, budgets=(1, 6))
    live.server.config.app = saboteur
    live.server.config.loaded = False
    async with (
        live,
        await A2AClient.connect(
            f"{live.url}/a2a/chatty", transport=transport, retry=FAST
        ) as client,
    ):
        items = [item async for item in client.stream("go")]
    assert saboteur.kills == 0, "every planned cut happened"
    assert [i.id for i in items] == list(range(1, 124))
    chunks = [
        i.response.artifact_update.artifact.parts[0].text
        for i in items
        if i.response.artifact_update
    ]
    assert chunks == [f"{n:06d}.." for n in range(120)]


async def test_gives_up_with_a_clear_error() -> None:
    hub = make_hub({"chatty": ChattyExecutor(chunks=500, pause_every=1)})
    live = LiveServer(hub)
    # the first stream shows the task, every resumption is cut before its first event
    live.server.config.app = Saboteur(create_app(hub), kills=100, budgets=(0, 0), first_budget=30)
    live.server.config.loaded = False
    async with live:
        client = await A2AClient.connect(
            f"{live.url}/a2a/chatty", retry=RetryPolicy(initial=0.01, max_tries=3)
        )
        with pytest.raises(StreamLostError, match="not resumed after 3 tries"):
            async for _ in client.stream("go"):
                pass
        await client.close()


@pytest.mark.parametrize("transport", ["jsonrpc-1.0", "rest-1.0", "jsonrpc-0.3"])
async def test_against_the_official_sdk_server(transport: str) -> None:
    async with (
        SdkServer() as sdk,
        await A2AClient.connect(sdk.url, transport=transport, retry=FAST) as client,
    ):
        task = await client.send("hello")
        assert isinstance(task, Task) and text(task) == "echo: hello"
        got = await client.get_task(task.id)
        assert got.status.state is TaskState.COMPLETED
        if transport != "jsonrpc-0.3":
            page = await client.list_tasks()
            assert task.id in [t.id for t in page.tasks]
        with pytest.raises(TaskNotFoundError):
            await client.get_task("missing-task")
        chat = Conversation(client)
        first = await chat.send("pizza please")
        assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
        done = await chat.send("quattro stagioni")
        assert isinstance(done, Task) and text(done) == "order: quattro stagioni"
        events = [i async for i in client.stream("streamed")]
        assert events[-1].response.status_update is not None
        assert events[-1].response.status_update.status.state is TaskState.COMPLETED
        asked = await client.send("pizza again")
        assert isinstance(asked, Task)
        canceled = await client.cancel_task(asked.id)
        assert canceled.status.state is TaskState.CANCELED


def test_retry_policy_backs_off_exponentially_with_jitter() -> None:
    policy = RetryPolicy()
    assert (policy.initial, policy.max_tries, policy.max_delay) == (1.0, 5, 30.0)
    for attempt, base in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 16.0), (6, 30.0), (9, 30.0)]:
        delays = [policy.delay(attempt) for _ in range(200)]
        assert all(base * 0.8 <= d <= base * 1.2 for d in delays)
        assert max(delays) - min(delays) > base * 0.2  # the jitter is real


@pytest.mark.parametrize("transport", ["jsonrpc-1.0", "rest-1.0", "jsonrpc-0.3"])
async def test_a_refused_stream_raises_the_peer_s_error(ours: LiveServer, transport: str) -> None:
    async with await connect(ours.url, "echo", transport) as echo:
        with pytest.raises(TaskNotFoundError):
            async for _ in echo.subscribe("no-such-task"):
                pass
