"""Events are immutable once numbered (issue 18, item 10)."""

from __future__ import annotations

import uuid

from a2a_hub.engine import TaskEngine
from a2a_hub.protocol.types import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
)
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
