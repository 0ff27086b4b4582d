"""A resume whose cursor is older than what the store still holds gets the gap error,
naming the oldest event available, never a silent partial replay; on every store whose
log can be trimmed (SQLite, PostgreSQL, Redis)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from a2a_hub.engine import TaskEngine
from a2a_hub.engine.log import LogTrimmedError
from a2a_hub.engine.stream import TaskStream
from a2a_hub.protocol.errors import InvalidParamsError, StoreUnavailableError
from a2a_hub.protocol.types import Message, Part, Role, SendMessageRequest, Task
from a2a_hub.stores import Store
from tests.support.agents import ChattyExecutor, Stepper
from tests.support.stores import (
    BACKENDS,
    Backend,
    StoreHarness,
    missing_service,
    trim_log,
    unavailable,
)

TRIMMABLE = [b for b in BACKENDS if b.name != "memory"]


@pytest.fixture(params=TRIMMABLE, ids=[b.name for b in TRIMMABLE])
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreHarness]:
    backend: Backend = request.param
    if backend.name in unavailable:
        missing_service(f"{backend.name} store unavailable: {unavailable[backend.name]}")
    h = StoreHarness(backend, backend.url(tmp_path))
    try:
        h.store = await h.open()
    except (ImportError, StoreUnavailableError, OSError) as exc:
        unavailable[backend.name] = f"{type(exc).__name__}: {exc}"
        missing_service(f"{backend.name} store unavailable: {exc}")
    try:
        yield h
        await h.cleanup()
    finally:
        await h.aclose()


def request(text: str) -> SendMessageRequest:
    message = Message(message_id=uuid.uuid4().hex, role=Role.USER, parts=[Part(text=text)])
    return SendMessageRequest(message=message)


async def seqs(stream: TaskStream) -> list[int]:
    return [event.seq async for event in stream]


async def test_a_cursor_before_the_trimmed_part_is_a_gap_naming_the_oldest_id(
    harness: StoreHarness,
) -> None:
    store: Store = harness.store
    agent_id = harness.new_agent_id()
    engine = TaskEngine(agent_id, ChattyExecutor(chunks=6), store)
    try:
        task = await engine.send(request("go"))
        assert isinstance(task, Task) and task.status.state.terminal
        assert await seqs(await engine.subscribe(task.id, 0)) == list(range(1, 10))
        await trim_log(store, agent_id, task.id, 4)  # events 1..4 gone, 5..9 held

        for cursor in (0, 2, 3):
            with pytest.raises(LogTrimmedError) as caught:
                await engine.subscribe(task.id, cursor)
            err = caught.value
            assert err.data == {
                "taskId": task.id,
                "lastEventId": cursor,
                "oldestEventId": 5,
                "latestEventId": 9,
            }
            assert "the oldest event still held is 5" in err.message
            assert f"Last-Event-ID {cursor} is older" in err.message
        # the trimmed part was all before the cursor: exactly the missing events
        assert await seqs(await engine.subscribe(task.id, 4)) == [5, 6, 7, 8, 9]
        assert await seqs(await engine.subscribe(task.id, 7)) == [8, 9]
        # a cursor beyond the last event keeps its own error
        with pytest.raises(InvalidParamsError, match="beyond the last event"):
            await engine.subscribe(task.id, 10)

        await trim_log(store, agent_id, task.id, 9)  # nothing held any more
        with pytest.raises(LogTrimmedError) as caught:
            await engine.subscribe(task.id, 6)
        assert caught.value.data == {"taskId": task.id, "lastEventId": 6, "latestEventId": 9}
        assert "no event after it is held any more" in caught.value.message
        assert await seqs(await engine.subscribe(task.id, 9)) == []  # up to date: nothing missed
    finally:
        await engine.close()


async def test_a_running_task_whose_written_events_were_trimmed_is_a_gap(
    harness: StoreHarness,
) -> None:
    store: Store = harness.store
    agent_id = harness.new_agent_id()
    stepper = Stepper()
    engine = TaskEngine(agent_id, stepper, store)
    try:
        stream = await engine.send_stream(request("go"))
        task_id = stream.task_id
        await asyncio.wait_for(stepper.started.wait(), 20)
        stepper.step("a", "b")
        got = [await anext(stream) for _ in range(4)]  # task, working, a, b: all written
        assert [e.seq for e in got] == [1, 2, 3, 4]
        stream.close()
        await trim_log(store, agent_id, task_id, 4)
        with pytest.raises(LogTrimmedError) as caught:
            await engine.subscribe(task_id, 1)
        assert caught.value.data == {"taskId": task_id, "lastEventId": 1, "latestEventId": 4}
        # a subscriber at the head loses nothing: it follows on
        follower = await engine.subscribe(task_id, 4)
        stepper.step("c")
        stepper.finish()
        assert await seqs(follower) == [5, 6]
    finally:
        await engine.close()
