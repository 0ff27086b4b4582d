"""Ending a task that no executor runs here: cancel it, fail it as orphaned, or ask its
instance to cancel it.

A task whose executor runs in this process ends through its
:class:`~a2a_hub.engine.run.TaskRun`.  Any other task — interrupted and waiting
for input, or left ``working`` by an instance that died — is ended here with one
event written straight to the store: its final status, with an agent message
saying why.  A task running in another instance is canceled by that instance,
asked through a signal (:func:`cancel_remote`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

import msgspec

from a2a_hub.engine.log import not_found
from a2a_hub.engine.pubsub import PubSub
from a2a_hub.engine.state import new_id, timestamp
from a2a_hub.protocol.errors import InternalError, TaskNotCancelableError
from a2a_hub.protocol.types import (
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a_hub.stores.base import LogConflictError, Store, StoredTask, TaskEvent
from a2a_hub.stores.coordinator import CANCEL_SIGNAL, Coordinator, Signal

__all__ = [
    "Instance",
    "cancel_remote",
    "cancel_stored_task",
    "end_stored_task",
    "fail_orphan",
    "wait_until_ended",
]

log = logging.getLogger("a2a_hub.engine")


class Instance(Protocol):
    """This instance among those sharing the store (a :class:`~a2a_hub.engine.cluster.Cluster`)."""

    @property
    def id(self) -> str:
        """The instance id, as recorded in the leases it holds."""
        ...

    @property
    def coordinator(self) -> Coordinator:
        """Leases and signals shared with the other instances."""
        ...


async def end_stored_task(
    store: Store,
    agent_id: str,
    task: Task,
    seq: int,
    state: TaskState,
    text: str,
    *,
    owner: str | None = None,
) -> tuple[Task, TaskEvent]:
    """Give a task that runs nowhere here its final ``state`` with an agent message saying
    why, as event ``seq + 1`` (:class:`LogConflictError` if the log moved on meanwhile).

    Returns the ended task and the event, for the caller to publish.
    """
    message = Message(
        message_id=new_id(),
        role=Role.AGENT,
        parts=[Part(text=text)],
        context_id=task.context_id,
        task_id=task.id,
    )
    status = TaskStatus(state=state, message=message, timestamp=timestamp())
    event = TaskEvent(
        seq + 1,
        StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id=task.id, context_id=task.context_id, status=status
            )
        ),
    )
    ended = msgspec.structs.replace(task, status=status, history=[*(task.history or []), message])
    await store.save_task(agent_id, ended, [event], owner=owner)
    return ended, event


async def fail_orphan(
    store: Store, agent_id: str, task_id: str, reason: str, pubsub: PubSub | None = None
) -> bool:
    """Fail a task whose instance died, if it is still submitted or working; True if it was.

    The failure is published on ``pubsub`` (the agent's, in this process) when given.
    """
    record = await store.get_task_record(agent_id, task_id)
    if record is None:
        return False
    task, seq, owner = record
    if task.status.state not in (TaskState.SUBMITTED, TaskState.WORKING):
        return False
    try:
        _, event = await end_stored_task(
            store, agent_id, task, seq, TaskState.FAILED, reason, owner=owner
        )
    except LogConflictError:
        return False  # the task moved on meanwhile: its instance is alive after all
    log.warning("task %s of agent %s failed: %s", task_id, agent_id, reason)
    if pubsub is not None:
        pubsub.publish(task_id, event, owner)
    return True


async def cancel_stored_task(
    store: Store,
    agent_id: str,
    record: StoredTask,
    pubsub: PubSub,
    *,
    instance: Instance | None = None,
    wait: float = 10.0,
) -> Task:
    """Cancel a task whose executor does not run here, and return it as it ended.

    A task another instance runs (it holds the lease) is canceled there
    (:func:`cancel_remote`); any other task not yet terminal is ended ``canceled``
    here and the event published on ``pubsub``; a terminal one is refused.
    """
    task, seq, owner = record
    state = task.status.state
    if not state.terminal and not state.interrupted and instance is not None:
        holder = await instance.coordinator.lease_owner(agent_id, task.id)
        if holder is not None and holder != instance.id:
            return await cancel_remote(store, instance, agent_id, task.id, seq, wait)
    if state.terminal:
        raise TaskNotCancelableError(
            f"Task {task.id} is already {state.label} and cannot be canceled",
            data={"taskId": task.id, "state": state.value},
        )
    task, event = await end_stored_task(
        store, agent_id, task, seq, TaskState.CANCELED, "Task canceled by the client", owner=owner
    )
    pubsub.publish(task.id, event, owner)
    return task


async def cancel_remote(
    store: Store, instance: Instance, agent_id: str, task_id: str, seq: int, wait: float
) -> Task:
    """Ask the instance that runs the task to cancel it, and wait (up to ``wait`` seconds)
    for the task to end; ``seq`` is the last event this instance has seen."""
    coordinator = instance.coordinator
    await coordinator.publish(Signal(CANCEL_SIGNAL, agent_id, task_id, instance.id))
    return await wait_until_ended(store, coordinator, agent_id, task_id, seq, wait)


async def wait_until_ended(
    store: Store, coordinator: Coordinator, agent_id: str, task_id: str, seq: int, wait: float
) -> Task:
    """The task once it is terminal in the store, waiting up to ``wait`` seconds for the
    instance (or worker) running it to end it; ``seq`` is the last event seen here."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise InternalError(
                f"the instance or worker running task {task_id} did not confirm the cancellation "
                f"within {wait:g} s; try again"
            )
        await coordinator.wait_events(agent_id, task_id, seq, min(remaining, 1.0))
        found = await store.get_task_at(agent_id, task_id)
        if found is None:
            raise not_found(task_id)
        task, seq = found
        if task.status.state.terminal:
            return task
