"""A2A 1.1 preview: a task's ``generation`` is the seq of the last event of its log.

The dev-1.1 branch of a2aproject/A2A (PR #1810) gives every task a ``generation`` that starts
at 1 when it is created and grows by one with each change, carried by each status and
artifact event.  A task's event log already numbers its events 1, 2, 3 … in the order they
are written (the snapshot that creates the task is 1), in every store and on every instance,
so the generation is that number: nothing new is stored.  A client message continuing a task
is an event of the log too (it changes the history), so it takes a generation of its own;
streams do not send it, so a stream shows a gap of one there.

The engine never writes a generation into a task or event (1.0 answers stay as they are);
the 1.1 bindings stamp what they answer with :func:`stamped` and :func:`with_generation`.
"""

from __future__ import annotations

import msgspec

from a2a_hub.protocol.errors import TaskGenerationMismatchError
from a2a_hub.protocol.types import StreamResponse, Task
from a2a_hub.stores.base import TaskEvent

__all__ = ["check_generation", "stamped", "with_generation"]


def stamped(task: Task, generation: int) -> Task:
    """``task`` with its ``generation`` set (a copy)."""
    return msgspec.structs.replace(task, generation=generation)


def with_generation(record: TaskEvent) -> StreamResponse:
    """The event of ``record`` with the generation it carries in 1.1: its seq (a direct
    reply, seq 0, has none)."""
    event, seq = record.event, record.seq
    if not seq:
        return event
    if event.status_update is not None:
        update = msgspec.structs.replace(event.status_update, generation=seq)
        return StreamResponse(status_update=update)
    if event.artifact_update is not None:
        artifact = msgspec.structs.replace(event.artifact_update, generation=seq)
        return StreamResponse(artifact_update=artifact)
    if event.task is not None:
        return StreamResponse(task=stamped(event.task, seq))
    return event


def check_generation(task_id: str, expected: int | None, current: int) -> None:
    """Refuse a send whose ``ifGenerationMatch`` (``expected``) is not the task's generation."""
    if expected is not None and expected != current:
        raise TaskGenerationMismatchError(
            f"Task generation mismatch: expected {expected} but the current generation of "
            f"task {task_id} is {current}; get the task again before sending",
            data={
                "taskId": task_id,
                "expectedGeneration": expected,
                "currentGeneration": current,
            },
        )
