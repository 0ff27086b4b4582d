"""A finished request leaves no reference cycle behind.

Objects in a cycle are freed only by the garbage collector, which then frees a few
thousand requests' worth at once: that showed as 50-100 ms pauses (the p99 of
``make bench``) and cost about 15 % of throughput when every run kept its updater,
which refers back to the run.  Reference counting must free a request's objects as
soon as it ends.
"""

from __future__ import annotations

import gc
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from a2a_hub.agents.echo import EchoExecutor
from a2a_hub.engine import TaskEngine
from a2a_hub.protocol.types import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
)
from a2a_hub.stores.memory import MemoryStore

ROUNDS = 50


def request(*, immediate: bool = False) -> SendMessageRequest:
    message = Message(message_id=str(uuid.uuid4()), role=Role.USER, parts=[Part(text="hi")])
    config = SendMessageConfiguration(return_immediately=True) if immediate else None
    return SendMessageRequest(message=message, configuration=config)


@pytest.fixture
async def engine() -> AsyncIterator[TaskEngine]:
    eng = TaskEngine("a", EchoExecutor(), MemoryStore())
    yield eng
    await eng.close()


async def cyclic_garbage(work: Callable[[], Awaitable[object]]) -> int:
    """How many objects ``ROUNDS`` runs of ``work`` leave that only the collector frees."""
    await work()  # warm-up: caches, lazily built codecs
    gc.collect()
    gc.disable()
    try:
        for _ in range(ROUNDS):
            await work()
        return gc.collect()
    finally:
        gc.enable()


async def test_a_blocking_send_leaves_no_cycle(engine: TaskEngine) -> None:
    left = await cyclic_garbage(lambda: engine.send(request()))
    assert left < ROUNDS, f"{left} objects in reference cycles after {ROUNDS} sends"


async def test_a_streamed_send_leaves_no_cycle(engine: TaskEngine) -> None:
    async def streamed() -> None:
        async for _ in await engine.send_stream(request()):
            pass

    left = await cyclic_garbage(streamed)
    assert left < ROUNDS, f"{left} objects in reference cycles after {ROUNDS} streamed sends"


async def test_a_non_blocking_send_leaves_no_cycle(engine: TaskEngine) -> None:
    async def later() -> None:
        task = await engine.send(request(immediate=True))
        run = engine.runs.get(task.id)  # type: ignore[union-attr]
        if run is not None:
            await run.finished

    left = await cyclic_garbage(later)
    assert left < ROUNDS, f"{left} objects in reference cycles after {ROUNDS} sends"
