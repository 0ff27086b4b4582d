"""The engine's pieces other bindings build on: the agent-wide feed, the task log, ending."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import pytest

from a2a_hub.agents.echo import EchoExecutor
from a2a_hub.engine import TaskEngine
from a2a_hub.engine.caller import Caller
from a2a_hub.engine.ending import fail_orphan
from a2a_hub.engine.pubsub import EventsLostError, Feed, FeedItem
from a2a_hub.protocol.errors import InternalError
from a2a_hub.protocol.types import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a_hub.stores.base import LogConflictError, TaskEvent, TaskQuery
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import ChattyExecutor, PizzaExecutor, SlowExecutor

LATER = SendMessageConfiguration(return_immediately=True)


def req(
    text: str,
    *,
    task_id: str | None = None,
    context_id: str | None = None,
    configuration: SendMessageConfiguration | None = None,
) -> SendMessageRequest:
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )
    return SendMessageRequest(message=message, configuration=configuration)


async def drain(feed: Feed) -> list[FeedItem]:
    """What the feed holds now (it never waits: the sends that fed it have returned)."""
    items = []
    while (item := await feed.next(idle=0)) is not None:
        items.append(item)
    return items


async def settle(engine: TaskEngine, task_ids: Sequence[str]) -> None:
    for _ in range(500):
        tasks = [await engine.get_task(t) for t in task_ids]
        if all(t.status.state.terminal for t in tasks):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the tasks did not finish")


async def test_one_feed_carries_every_task_in_each_tasks_order() -> None:
    store = MemoryStore()
    engine = TaskEngine("a", ChattyExecutor(chunks=30, pause_every=1), store)
    feed = engine.feed()
    started = [await engine.send(req(f"go {i}", configuration=LATER)) for i in range(3)]
    ids = [t.id for t in started if isinstance(t, Task)]
    await settle(engine, ids)
    items = await drain(feed)
    assert {item.task_id for item in items} == set(ids)
    for task_id in ids:
        mine = [item.event for item in items if item.task_id == task_id]
        # exactly the task's log, in order: nothing lost, nothing twice
        assert mine == await store.read_events("a", task_id)
        assert [e.seq for e in mine] == list(range(1, 34))
    contexts = {item.task_id: item.context_id for item in items}
    assert contexts == {t.id: t.context_id for t in started if isinstance(t, Task)}
    feed.close()


async def test_an_immediate_message_reply_is_on_the_feed_with_its_context() -> None:
    engine = TaskEngine("a", EchoExecutor(reply="message"), MemoryStore())
    async with engine.feed() as feed:
        answer = await engine.send(req("hi", context_id="ctx-1"))
        assert isinstance(answer, Message)
        (item,) = await drain(feed)
    assert item.event.seq == 0
    assert item.event.event.message == answer
    assert item.context_id == "ctx-1"


async def test_two_feeds_each_get_everything_and_closing_one_leaves_the_other() -> None:
    engine = TaskEngine("a", PizzaExecutor(), MemoryStore())
    first, second = engine.feed(), engine.feed()
    assert engine.pubsub.feeds == 2
    task = await engine.send(req("pizza"))
    assert isinstance(task, Task)
    got_first, got_second = await drain(first), await drain(second)
    assert got_first == got_second
    assert [i.event.seq for i in got_first] == [1, 2, 3]
    first.close()
    assert engine.pubsub.feeds == 1
    done = await engine.send(req("margherita", task_id=task.id))
    assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
    assert [i.event.seq for i in await drain(second)] == [4, 5, 6, 7]
    with pytest.raises(StopAsyncIteration):
        await first.next()  # a closed feed ends, and received nothing more
    second.close()
    assert engine.pubsub.feeds == 0


async def test_a_feed_that_falls_behind_is_told_and_resyncs_from_the_log() -> None:
    store = MemoryStore()
    engine = TaskEngine("a", ChattyExecutor(chunks=20, pause_every=0), store)
    feed = engine.feed(5)
    task = await engine.send(req("go"))  # 23 events, and nobody reads the feed meanwhile
    assert isinstance(task, Task)
    assert feed.pending <= 5 and feed.overflows > 0
    with pytest.raises(EventsLostError) as lost:
        await feed.next()
    tail = await drain(feed)  # what came after the gap
    assert lost.value.dropped + len(tail) == 23
    assert [i.event.seq for i in tail] == list(range(24 - len(tail), 24))
    # the documented resync: read the log after the last event seen, skip what comes twice
    seen = 0
    replay = await engine.log.read(task.id, seen)
    merged = replay + [i.event for i in tail if i.event.seq > replay[-1].seq]
    assert merged == await store.read_events("a", task.id)
    # the feed stays usable after the gap
    again = await engine.send(req("go"))
    assert isinstance(again, Task)
    with pytest.raises(EventsLostError):
        await feed.next()
    feed.close()


async def test_a_closed_feed_unsubscribes_and_an_engine_closing_ends_its_feeds() -> None:
    engine = TaskEngine("a", PizzaExecutor(), MemoryStore())
    async with engine.feed() as feed:
        assert engine.pubsub.feeds == 1
    assert engine.pubsub.feeds == 0 and feed.closed
    await engine.send(req("pizza"))
    assert feed.pending == 0
    waiting = engine.feed()
    consumer = asyncio.ensure_future(waiting.next())
    await asyncio.sleep(0)
    await engine.send(req("pizza"))
    first = await consumer
    assert first is not None and first.event.seq == 1
    await engine.close()
    # what was published before the close is still delivered, then the feed ends
    assert [i.event.seq async for i in waiting] == [2, 3]
    assert engine.pubsub.feeds == 0


async def test_a_callers_feed_shows_only_the_tasks_it_may_see() -> None:
    engine = TaskEngine("a", PizzaExecutor(), MemoryStore())
    alice, bob = Caller(principal="alice"), Caller(principal="bob")
    everyone, alices = engine.feed(), engine.feed(caller=alice)
    mine = await engine.send(req("pizza"), caller=alice)
    theirs = await engine.send(req("pizza"), caller=bob)
    assert isinstance(mine, Task) and isinstance(theirs, Task)
    assert {i.task_id for i in await drain(alices)} == {mine.id}
    assert {i.task_id for i in await drain(everyone)} == {mine.id, theirs.id}


async def test_ending_a_stored_task_is_published_on_the_feed() -> None:
    store = MemoryStore()
    engine = TaskEngine("a", PizzaExecutor(), store)
    task = await engine.send(req("pizza"))
    assert isinstance(task, Task)
    async with engine.feed() as feed:
        canceled = await engine.cancel_task(task.id)
        (item,) = await drain(feed)
    assert canceled.status.state is TaskState.CANCELED
    assert item.task_id == task.id and item.event.seq == 4
    assert item.event == (await store.read_events("a", task.id))[-1]


class ConflictingStore(MemoryStore):
    """A memory store that reports a log conflict as :class:`LogConflictError`."""

    async def save_task(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent] = (),
        *,
        owner: str | None = None,
    ) -> None:
        try:
            await super().save_task(agent_id, task, events, owner=owner)
        except LogConflictError:
            raise
        except ValueError as exc:
            raise LogConflictError(str(exc)) from exc


async def test_an_orphan_failed_meanwhile_is_a_log_conflict_for_its_run() -> None:
    slow = SlowExecutor()
    store = ConflictingStore()
    engine = TaskEngine("a", slow, store)
    pending = asyncio.ensure_future(engine.send(req("work")))
    await asyncio.wait_for(slow.started.wait(), 5)
    for _ in range(200):  # written within flush_delay
        listed = await store.list_tasks("a", TaskQuery())
        if listed.tasks:
            break
        await asyncio.sleep(0.01)
    task_id = listed.tasks[0].id
    async with engine.feed() as feed:
        assert await fail_orphan(store, "a", task_id, "its instance died", engine.pubsub)
        (item,) = await drain(feed)
    assert item.event.event.status_update is not None
    assert item.event.event.status_update.status.state is TaskState.FAILED
    # the run, still alive after all, cannot write over the failure
    await engine.cancel_task(task_id)
    with pytest.raises(InternalError, match="changed by another instance"):
        await asyncio.wait_for(pending, 5)
    stored = await store.get_task("a", task_id)
    assert stored is not None and stored.status.state is TaskState.FAILED
    # failing it again finds nothing to do
    assert not await fail_orphan(store, "a", task_id, "again")
