"""Several hubs over one store behave as one server (in process, local coordinator)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.protocol.types import (
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import ChattyExecutor, SlowExecutor


def hub(store: MemoryStore, *, orphan_timeout: float = 30.0) -> Hub:
    specs = [
        AgentSpec(id="slow", kind="python", executor="x:y"),
        AgentSpec(id="chatty", kind="python", executor="x:y"),
    ]
    settings = Settings.from_flat(agents=specs, store="memory://", orphan_timeout=orphan_timeout)
    return Hub(
        settings,
        store=store,
        executors={"slow": SlowExecutor(), "chatty": ChattyExecutor(chunks=200, pause_every=2)},
    )


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Hub, Hub]]:
    store = MemoryStore()
    a, b = hub(store, orphan_timeout=1.0), hub(store, orphan_timeout=1.0)
    await a.start()
    await b.start()
    yield a, b
    await a.close()
    await b.close()


def later(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=text, role=Role.USER, parts=[Part(text=text)]),
        configuration=SendMessageConfiguration(return_immediately=True),
    )


async def test_send_on_a_follow_and_list_on_b(pair: tuple[Hub, Hub]) -> None:
    a, b = pair
    task = await a.agents["chatty"].engine.send(later("go"))
    assert isinstance(task, Task)
    listed = await b.agents["chatty"].engine.list_tasks(ListTasksRequest())
    assert [t.id for t in listed.tasks] == [task.id]
    stream = await b.agents["chatty"].engine.subscribe(task.id, after=0)
    seqs = [e.seq async for e in stream]
    assert seqs == list(range(1, 204))
    final = await b.agents["chatty"].engine.get_task(task.id)
    assert final.status.state is TaskState.COMPLETED and len(final.artifacts[0].parts) == 200


async def test_cancel_on_b_reaches_the_executor_on_a(pair: tuple[Hub, Hub]) -> None:
    a, b = pair
    slow = a.agents["slow"].executor
    assert isinstance(slow, SlowExecutor)
    task = await a.agents["slow"].engine.send(later("work"))
    assert isinstance(task, Task)
    await asyncio.wait_for(slow.started.wait(), 5)
    await asyncio.sleep(0.1)  # the working state is flushed, with its lease
    canceled = await b.agents["slow"].engine.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    assert slow.canceled_calls == 1
    assert a.agents["slow"].engine.live(task.id) is None


async def test_a_dead_instance_s_tasks_are_failed_by_another(pair: tuple[Hub, Hub]) -> None:
    a, b = pair
    slow = a.agents["slow"].executor
    assert isinstance(slow, SlowExecutor)
    task = await a.agents["slow"].engine.send(later("work"))
    assert isinstance(task, Task)
    await asyncio.wait_for(slow.started.wait(), 5)
    await asyncio.sleep(0.1)
    # "kill" a: its loops stop, so its leases are not renewed any more
    for loop in a.cluster._loops:
        loop.cancel()
    engine_b = b.agents["slow"].engine
    for _ in range(100):
        got = await engine_b.get_task(task.id)
        if got.status.state is TaskState.FAILED:
            break
        await asyncio.sleep(0.05)
    assert got.status.state is TaskState.FAILED
    assert got.status.message is not None
    assert "stopped" in (got.status.message.parts[0].text or "")
