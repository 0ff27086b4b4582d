"""Durable before visible (issue 18, items 1 and 10): an event is shown only once it is
in the store, is immutable once numbered, and running tasks are written at once."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence

import pytest

from a2a_hub.engine import RequestContext, TaskEngine, TaskUpdater
from a2a_hub.engine.executor import AgentExecutor
from a2a_hub.engine.pubsub import Feed, FeedItem
from a2a_hub.protocol.errors import StoreUnavailableError, TaskNotFoundError
from a2a_hub.protocol.types import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a_hub.stores.base import Delivery, TaskEvent
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import PizzaExecutor


def req(text: str, *, task_id: str | None = None, immediate: bool = False) -> SendMessageRequest:
    message = Message(
        message_id=str(uuid.uuid4()), role=Role.USER, parts=[Part(text=text)], task_id=task_id
    )
    config = SendMessageConfiguration(return_immediately=True) if immediate else None
    return SendMessageRequest(message=message, configuration=config)


async def test_the_first_event_never_changes_after_it_is_sent() -> None:
    eng = TaskEngine("a", PizzaExecutor(), MemoryStore())
    stream = await eng.send_stream(req("pizza please"))
    events = [ev async for ev in stream]
    first = events[0].event.task
    assert first is not None
    assert len(first.history or []) == 1, "messages added later leaked into event 1"
    replay = await eng.log.read(first.id, 0)
    assert replay[0].event.task is not None and len(replay[0].event.task.history or []) == 1


async def test_a_subscription_stays_open_through_input_required_until_terminal() -> None:
    """SubscribeToTask on an interrupted task sends the state and stays open (A2A 1.0
    §3.1.6) until the task ends; a streamed send still ends with its turn."""
    eng = TaskEngine("a", PizzaExecutor(), MemoryStore())
    turn = [ev async for ev in await eng.send_stream(req("pizza please"))]
    last = turn[-1].event.status_update
    assert last is not None and last.status.state.interrupted  # the send's stream ended there
    task_id = last.task_id
    subscription = await eng.subscribe(task_id)
    snapshot = await subscription.next(idle=1.0)
    assert snapshot is not None and snapshot.event.task is not None
    assert snapshot.event.task.status.state.interrupted
    assert await subscription.next(idle=0.2) is None  # still open, nothing new yet
    await eng.send(req("margherita", task_id=task_id))
    seen = [ev async for ev in subscription]
    final = seen[-1].event.status_update
    assert final is not None and final.status.state.terminal
    assert any(ev.event.artifact_update is not None for ev in seen)
    assert [ev.seq for ev in seen] == sorted({ev.seq for ev in seen})  # in order, once


async def test_a_replay_from_an_interrupted_task_also_stays_open() -> None:
    eng = TaskEngine("a", PizzaExecutor(), MemoryStore())
    turn = [ev async for ev in await eng.send_stream(req("pizza please"))]
    task_id = turn[0].event.task.id if turn[0].event.task is not None else ""
    subscription = await eng.subscribe(task_id, after=1)
    replayed = [await subscription.next(idle=1.0) for _ in range(len(turn) - 1)]
    assert [ev.seq for ev in replayed if ev is not None] == [ev.seq for ev in turn[1:]]
    assert await subscription.next(idle=0.2) is None  # open after the replay
    subscription.close()


class HookedStore(MemoryStore):
    """A memory store whose writes call :meth:`before_save` and :meth:`after_save` (the
    write itself happens between them)."""

    async def before_save(self) -> None:
        """Called before each write."""

    async def after_save(self) -> None:
        """Called once a write is done."""

    async def save_task(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent] = (),
        *,
        owner: str | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        await self.before_save()
        await super().save_task(agent_id, task, events, owner=owner, deliveries=deliveries)
        await self.after_save()


class GatedStore(HookedStore):
    """A memory store whose writes wait for ``gate`` (set: they pass), counting them, and
    failing the first ``failures`` of them with ``error``."""

    def __init__(self, failures: int = 0, error: Exception | None = None) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.writes = 0
        self.failures = failures
        self.error = error or StoreUnavailableError("Task store gated:// is unavailable")

    async def before_save(self) -> None:
        await self.gate.wait()
        if self.failures:
            self.failures -= 1
            raise self.error
        self.writes += 1


class Steps(AgentExecutor):
    """Starts, says ``working`` twice, waits for ``go``; then ``burst`` artifacts, waits for
    ``end`` and completes."""

    def __init__(self, burst: int = 0) -> None:
        self.burst = burst
        self.waiting = asyncio.Event()
        self.go = asyncio.Event()
        self.bursted = asyncio.Event()
        self.end = asyncio.Event()

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        await updater.working("one")
        await updater.working("two")
        self.waiting.set()
        await self.go.wait()
        for n in range(self.burst):
            await updater.artifact(f"part {n}", name=f"a{n}")
        self.bursted.set()
        await self.end.wait()
        await updater.complete("done")


async def drain(feed: Feed) -> list[FeedItem]:
    items = []
    while (item := await feed.next(idle=0)) is not None:
        items.append(item)
    return items


async def stored_events(store: MemoryStore, task_id: str, count: int) -> list[TaskEvent]:
    for _ in range(500):  # hang guard only
        events = await store.read_events("a", task_id)
        if len(events) >= count:
            return events
        await asyncio.sleep(0.01)
    raise AssertionError(f"task {task_id} has {len(events)} events written, not {count}")


async def test_no_event_is_shown_before_it_is_written() -> None:
    store = GatedStore()
    store.gate.clear()  # every write waits
    executor = Steps()
    engine = TaskEngine("a", executor, store)
    feed = engine.feed()
    stream = await engine.send_stream(req("go"))
    await asyncio.wait_for(executor.waiting.wait(), 5)
    await asyncio.sleep(0.05)  # give a wrong implementation every chance to show something
    assert await drain(feed) == []
    assert await stream.next(idle=0) is None
    task_id = stream.task_id
    assert await engine.log.read(task_id, 0) == []
    with pytest.raises(TaskNotFoundError):  # a task nobody was shown is not there yet
        await engine.get_task(task_id)
    store.gate.set()
    written = await stored_events(store, task_id, 4)
    seen = [await asyncio.wait_for(stream.next(), 5) for _ in range(4)]
    assert [e.seq for e in seen if e is not None] == [1, 2, 3, 4]
    assert [item.event for item in await drain(feed)] == written
    snapshot = await engine.log.snapshot(task_id)
    assert snapshot.seq == 4 and snapshot.event.task is not None
    assert snapshot.event.task.status.state is TaskState.WORKING
    assert (await engine.get_task(task_id)).status.state is TaskState.WORKING
    executor.go.set()
    executor.end.set()
    rest = [e async for e in stream]
    assert rest[-1].event.status_update is not None
    assert rest[-1].event.status_update.status.state is TaskState.COMPLETED
    assert await engine.log.read(task_id, 0) == await store.read_events("a", task_id)
    feed.close()
    await engine.close()


async def test_a_running_task_is_written_at_once_and_events_during_a_write_coalesce() -> None:
    store = GatedStore()
    executor = Steps(burst=50)
    engine = TaskEngine("a", executor, store)
    feed = engine.feed()
    pending = asyncio.ensure_future(engine.send(req("go")))
    await asyncio.wait_for(executor.waiting.wait(), 5)
    task_id = (await asyncio.wait_for(feed.next(), 5)).task_id  # shown: written
    await stored_events(store, task_id, 4)
    assert store.writes >= 1
    store.gate.clear()  # the next write hangs while the executor adds 50 artifacts
    before = store.writes
    executor.go.set()
    await asyncio.wait_for(executor.bursted.wait(), 5)
    store.gate.set()
    events = await stored_events(store, task_id, 54)
    assert [e.seq for e in events] == list(range(1, 55))
    assert store.writes - before <= 2, "events that came during a write go into the next one"
    executor.end.set()
    answer = await asyncio.wait_for(pending, 5)
    assert isinstance(answer, Task) and answer.status.state is TaskState.COMPLETED
    feed.close()
    await engine.close()


async def test_a_blocking_send_that_finishes_at_once_costs_one_write() -> None:
    store = GatedStore()
    engine = TaskEngine("a", PizzaExecutor(), store)
    task = await engine.send(req("pizza"))
    assert isinstance(task, Task)
    await asyncio.sleep(0.05)  # a writer started for nothing would write now
    assert store.writes == 1
    await engine.close()


@pytest.mark.parametrize(
    "error", [StoreUnavailableError("Task store gated:// is unavailable"), RuntimeError("disk")]
)
async def test_failed_writes_are_retried_with_backoff_and_logged_once(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    store = GatedStore(failures=4, error=error)
    executor = Steps()
    engine = TaskEngine("a", executor, store)
    feed = engine.feed()
    caplog.set_level(logging.DEBUG, logger="a2a_hub")
    pending = asyncio.ensure_future(engine.send(req("go")))
    await asyncio.wait_for(executor.waiting.wait(), 5)
    item = await asyncio.wait_for(feed.next(), 10)  # shown once written, after the retries
    assert item is not None and item.event.seq == 1
    await stored_events(store, item.task_id, 4)
    assert store.failures == 0
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    if isinstance(error, StoreUnavailableError):
        assert warnings == []  # the store logs its own outage (stores/outage.py)
    else:
        assert len(warnings) == 1 and "retrying" in warnings[0].getMessage()
    assert not any(r.exc_info for r in caplog.records), "no traceback for a failed write"
    executor.go.set()
    executor.end.set()
    await asyncio.wait_for(pending, 5)
    feed.close()
    await engine.close()


class LingeringStore(HookedStore):
    """A memory store whose writes, once committed, keep their caller waiting for
    ``release`` while ``linger`` is set (as a commit in a thread or on a server lands
    although the coroutine awaiting it is cancelled)."""

    def __init__(self) -> None:
        super().__init__()
        self.linger = False
        self.lingering = asyncio.Event()
        self.release = asyncio.Event()

    async def after_save(self) -> None:
        if self.linger:
            self.lingering.set()
            await self.release.wait()


async def test_a_shutdown_during_a_write_that_lands_writes_the_end_after_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The shutdown cancels the flusher's write of a running task; the write lands anyway.
    The run's end meets the requeued events in the log, counts them as written and
    continues the log: the task ends ``failed`` in the store (before, the end conflicted
    with the run's own events and the task stayed ``working`` for good)."""
    store = LingeringStore()
    executor = Steps(burst=1)
    engine = TaskEngine("a", executor, store)
    pending = asyncio.ensure_future(engine.send(req("go", immediate=True)))
    await asyncio.wait_for(executor.waiting.wait(), 5)
    task = await asyncio.wait_for(pending, 5)
    assert isinstance(task, Task)
    await stored_events(store, task.id, 3)
    store.linger = True
    executor.go.set()  # the burst's artifact goes to a write that lands and lingers
    await asyncio.wait_for(store.lingering.wait(), 5)
    closing = asyncio.ensure_future(engine.close())
    await asyncio.sleep(0.05)
    store.release.set()
    await asyncio.wait_for(closing, 10)
    stored = await store.get_task("a", task.id)
    assert stored is not None and stored.status.state == TaskState.FAILED
    events = await store.read_events("a", task.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert not [r for r in caplog.records if "another instance" in r.getMessage()]


class LostAnswerStore(HookedStore):
    """A memory store whose first ``lost`` writes after ``armed`` is set land, and then
    fail as if the connection dropped before the answer (the caller cannot tell)."""

    def __init__(self, lost: int) -> None:
        super().__init__()
        self.lost = lost
        self.armed = False

    async def after_save(self) -> None:
        if self.armed and self.lost:
            self.lost -= 1
            raise StoreUnavailableError("Task store lost:// is unavailable (connection lost)")


@pytest.mark.parametrize("lost", [1, 3])
async def test_a_write_that_landed_but_was_reported_failed_is_not_written_twice(
    lost: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The store took a write, then its answer was lost: the run, retrying, finds its own
    events in the log, counts them as written and goes on (it used to meet them as
    "another writer" and leave the task working for good)."""
    store = LostAnswerStore(lost)
    executor = Steps(burst=3)
    engine = TaskEngine("a", executor, store)
    feed = engine.feed()
    pending = asyncio.ensure_future(engine.send(req("go", immediate=True)))
    await asyncio.wait_for(executor.waiting.wait(), 5)
    task = await asyncio.wait_for(pending, 5)
    assert isinstance(task, Task)
    store.armed = True
    executor.go.set()
    await asyncio.wait_for(executor.bursted.wait(), 5)
    executor.end.set()
    for _ in range(500):  # hang guard only
        stored = await store.get_task("a", task.id)
        if stored is not None and stored.status.state.terminal:
            break
        await asyncio.sleep(0.01)
    assert stored is not None and stored.status.state == TaskState.COMPLETED
    events = await store.read_events("a", task.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    shown = [item.event.seq for item in await drain(feed)]
    assert shown == [e.seq for e in events]  # each shown once, in order, none missing
    assert store.lost < lost  # answers were lost
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    feed.close()
    await engine.close()
