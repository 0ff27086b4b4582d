"""Turns run by workers: the engine's side of a worker tier (``--executor temporal://…``).

An **API node** runs no executor.  It checks and claims a message as always
(:meth:`~a2a_hub.engine.runs.Runs.open`), writes what the message starts — a new task
``submitted``, or the message appended to an interrupted task — and hands the turn to a
:class:`TurnDispatch` (the Temporal client of :mod:`a2a_hub.workers`): :func:`hand_off`.
Its run leaves this process at once; the request follows the task in the shared log, like
a task running on another instance (:func:`follow_turn`).

A **worker** opens the turn from the store (:func:`turn_message`,
``Runs.adopt``) and drives it with an ordinary :class:`~a2a_hub.engine.run.TaskRun`, so
its events are written before anyone sees them ("durable before visible" holds).  A turn
run again after its worker was lost first writes a ``working`` status saying so: the
next sequence number after the last one written, so the lost attempt, should it wake up,
can no longer write (each of its saves would repeat a seq the log already holds, which
every store refuses: :class:`~a2a_hub.stores.base.LogConflictError`).
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from a2a_hub.engine.log import TaskLog
from a2a_hub.engine.pubsub import PubSub
from a2a_hub.engine.run import TaskRun
from a2a_hub.engine.stream import TaskStream
from a2a_hub.protocol.types import Message, Role, Task, TaskState
from a2a_hub.stores.base import Store, StoredTask

__all__ = ["TurnDispatch", "follow_turn", "hand_off", "turn_ended", "turn_message"]


class TurnDispatch(Protocol):
    """Where an API node sends the turns of one agent (a worker tier)."""

    async def start_task(self, agent_id: str, task_id: str, seq: int) -> None:
        """Queue the first turn of a new task, stored up to ``seq`` (its first message)."""
        ...

    async def next_turn(self, agent_id: str, task_id: str, seq: int) -> None:
        """Queue the next turn of an interrupted task whose new message is event ``seq``;
        an A2A error when the task is not waiting for a message."""
        ...

    async def cancel(self, agent_id: str, task_id: str) -> bool:
        """Ask whoever runs or holds the task to cancel it; False if nobody does (no
        workflow: the caller ends the task itself)."""
        ...


async def hand_off(run: TaskRun, dispatch: TurnDispatch) -> int:
    """Write what ``run``'s message starts and queue its turn; the run leaves this process.

    Returns the seq of the last event written here: the turn's events follow it.  A new
    task that cannot be queued ends ``failed`` saying why, and the error is raised.
    """
    fresh = run.task is None
    try:
        if fresh:
            run.ensure_task()
        await run.flush()
        try:
            if fresh:
                await dispatch.start_task(run.agent_id, run.task_id, run.seq)
            else:
                await dispatch.next_turn(run.agent_id, run.task_id, run.seq)
        except Exception as exc:
            if fresh:
                reason = getattr(exc, "message", None) or str(exc)
                await run.set_status(TaskState.FAILED, f"the task could not be queued: {reason}")
            raise
        return run.written_seq
    finally:
        await run.leave()


def turn_ended(task: Task) -> bool:
    """True once a turn has nothing more to do: terminal or waiting for a message."""
    state = task.status.state
    return state.terminal or state.interrupted


async def follow_turn(log: TaskLog, pubsub: PubSub, task_id: str, after: int) -> Task:
    """Wait for the turn whose events follow seq ``after`` to end; the task as it ended."""
    stream = TaskStream(log, pubsub, task_id, after=after)
    try:
        await stream.start(written=after)
        async for _ in stream:  # ends with the turn (an interrupted state included)
            pass
    finally:
        stream.close()
    now = await log.snapshot(task_id)
    assert now.event.task is not None
    return now.event.task


async def turn_message(store: Store, agent_id: str, record: StoredTask, seq: int) -> Message:
    """The message of the turn that event ``seq`` of the stored task started (the task of a
    first turn, or the follow-up message an API node appended)."""
    found = await store.read_events(agent_id, record.task.id, after=seq - 1, limit=1)
    if found and found[0].seq == seq:
        event = found[0].event
        if event.message is not None:
            return event.message
        if event.task is not None and event.task.history:
            return event.task.history[-1]
    for message in reversed(record.task.history or []):  # the log was trimmed meanwhile
        if message.role is Role.USER:
            return message
    raise LookupError(f"task {record.task.id} has no message to answer")


def before_message(task: Task, message: Message) -> Task | None:
    """The task as it was before ``message`` (an executor's ``ctx.task``): ``None`` for a
    task on its first turn, else without that message at the end of its history."""
    if task.status.state is TaskState.SUBMITTED:
        return None
    history = list(task.history or [])
    while history and history[-1].message_id != message.message_id:
        history.pop()  # status messages written after it (a turn run again)
    if history:
        history.pop()
    return msgspec.structs.replace(task, history=history)
