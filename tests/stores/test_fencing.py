"""A turn run again after its worker was lost fences the lost attempt, on every store.

Two workers' engines share the store: the first opens a turn and writes part of it, then
stalls (a paused process, a partitioned machine); the second opens the same turn again as
``a2a-hub worker`` does for ``retry_on_worker_loss`` (``TaskEngine.open_turn`` with a note),
which writes a ``working`` status first.  When the first wakes up and goes on, none of its
writes is accepted, event ids are never reused, and the task ends as the second left it.
"""

from __future__ import annotations

import asyncio
import json

import msgspec

from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_hub.engine.state import new_id, timestamp
from a2a_hub.protocol.types import (
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)
from a2a_hub.stores.base import Store, TaskEvent


class Stalling(AgentExecutor):
    """Writes one artifact, stalls until ``go`` is set, then writes on and completes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.wrote = asyncio.Event()
        self.go = asyncio.Event()

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        await updater.artifact(f"{self.name} before", name=self.name)
        self.wrote.set()
        await self.go.wait()
        await updater.artifact(f"{self.name} after", name=self.name)
        await updater.complete(f"{self.name} done")


async def _submitted(store: Store, agent_id: str) -> str:
    """A task as an API node stores it before queueing its first turn (seq 1)."""
    task_id, context_id = new_id(), new_id()
    message = Message(
        message_id=new_id(),
        role=Role.USER,
        parts=[Part(text="work")],
        task_id=task_id,
        context_id=context_id,
    )
    task = Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp=timestamp()),
        history=[message],
    )
    await store.save_task(agent_id, task, [TaskEvent(1, StreamResponse(task=task))])
    return task_id


async def test_a_turn_run_again_refuses_every_write_of_the_lost_attempt(
    store: Store, agent_id: str
) -> None:
    lost, other = Stalling("lost"), Stalling("other")
    first = TaskEngine(agent_id, lost, store)
    second = TaskEngine(agent_id, other, store)
    task_id = await _submitted(store, agent_id)

    run = await first.open_turn(task_id, 1)
    assert run is not None
    zombie = asyncio.ensure_future(first.drive_turn(run))
    await asyncio.wait_for(lost.wrote.wait(), 10)
    await run.flush()  # (the flusher writes it anyway) working, the artifact
    assert await store.last_seq(agent_id, task_id) == 3

    again = await second.open_turn(task_id, 1, note="resumed on another worker")
    assert again is not None
    assert await store.last_seq(agent_id, task_id) == 4  # the fence is written first
    other.go.set()
    await second.drive_turn(again)
    lost.go.set()  # the lost attempt wakes up and goes on
    await asyncio.wait_for(zombie, 10)
    await first.close()
    await second.close()

    events = await store.read_events(agent_id, task_id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    texts = [json.dumps(msgspec.to_builtins(e.event)) for e in events]
    assert "resumed on another worker" in texts[3]
    assert not any("lost" in text for text in texts[4:]), texts[4:]
    record = await store.get_task_record(agent_id, task_id)
    assert record is not None
    assert record.task.status.state is TaskState.COMPLETED
    assert record.task.status.message is not None
    assert record.task.status.message.parts[0].text == "other done"
