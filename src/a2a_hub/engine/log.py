"""Each task's log: the events in the store, and the task as last written.

An event is published only once it is written (see :mod:`a2a_hub.engine.run`), so
the store holds every event anybody was shown: :class:`TaskLog` answers "the
events of task T after seq N" from the store alone, and "the task now" from the
live run's last written snapshot (or the store), so that whoever resumes a task —
a stream after ``Last-Event-ID``, a WebSocket ``sync_state``, push delivery after
falling behind, on this instance or another one sharing the store — gets exactly
what it missed.  It checks no visibility: callers check the caller first
(:meth:`TaskEngine.get_task` and friends do).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from a2a_hub.protocol.errors import TaskNotFoundError, UnsupportedOperationError
from a2a_hub.protocol.types import StreamResponse, Task
from a2a_hub.stores.base import Store, TaskEvent
from a2a_hub.stores.coordinator import Coordinator

__all__ = [
    "CONTINUE_HINT",
    "DEFAULT_PAGE",
    "LiveRun",
    "LogTrimmedError",
    "TaskLog",
    "not_found",
]

#: Events read from the store at once.
DEFAULT_PAGE = 256


class LogTrimmedError(UnsupportedOperationError):
    """The events a subscriber needs are no longer in the log (the gap signal).

    A resume never replays part of what was missed: a cursor older than what the store
    still holds is this error, whose ``data`` names the task (``taskId``), the cursor
    (``lastEventId``), the oldest event the log still holds (``oldestEventId``, absent
    when it holds none after the cursor) and the task's last event (``latestEventId``,
    when known).  Subscribing without a cursor starts again from a snapshot.
    """

    @classmethod
    def gap(
        cls, task_id: str, after: int, oldest: int | None, latest: int | None = None
    ) -> LogTrimmedError:
        """The error for a resume of ``task_id`` after ``after`` whose next events are gone."""
        data: dict[str, object] = {"taskId": task_id, "lastEventId": after}
        if oldest is not None:
            held = f"the oldest event still held is {oldest}"
            missing = f"events {after + 1}..{oldest - 1}"
            data["oldestEventId"] = oldest
        else:
            held = "no event after it is held any more"
            missing = f"events after {after}"
        if latest is not None:
            data["latestEventId"] = latest
        return cls(
            f"Last-Event-ID {after} is older than the log of task {task_id} holds: {missing} "
            f"are no longer in the log and {held}; subscribe again without Last-Event-ID to "
            "start from a snapshot of the task",
            data=data,
        )


#: What :func:`not_found` adds when the id came with a message meant to continue the task.
CONTINUE_HINT = "send the message without taskId to start a new task"


def not_found(task_id: str, hint: str = "") -> TaskNotFoundError:
    """The error for an unknown task id (and for a task the caller may not see)."""
    text = f"Task {task_id} not found; {hint}" if hint else f"Task {task_id} not found"
    return TaskNotFoundError(text, data={"taskId": task_id})


class LiveRun(Protocol):
    """What the log reads of a running task (a :class:`~a2a_hub.engine.run.TaskRun`)."""

    @property
    def written_seq(self) -> int:
        """The seq of the last event written."""
        ...

    def stored(self) -> Task | None:
        """An independent copy of the task as last written (``None``: not written yet)."""
        ...


class TaskLog:
    """The logs of one agent's tasks (see the module docstring).

    ``runs`` is the engine's table of running tasks (read, never changed here);
    ``coordinator`` is set when other instances may write the same tasks.
    """

    __slots__ = ("agent_id", "coordinator", "runs", "store")

    def __init__(
        self,
        agent_id: str,
        store: Store,
        runs: Mapping[str, LiveRun],
        coordinator: Coordinator | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.store = store
        self.runs = runs
        self.coordinator = coordinator

    def live(self, task_id: str) -> LiveRun | None:
        """The running execution of a task in this process, if any."""
        return self.runs.get(task_id)

    async def snapshot(self, task_id: str) -> TaskEvent:
        """The task now, as one event whose ``seq`` is the last event folded into it."""
        run = self.runs.get(task_id)
        if run is not None:
            task = run.stored()
            if task is not None:
                return TaskEvent(run.written_seq, StreamResponse(task=task))
        found = await self.store.get_task_at(self.agent_id, task_id)
        if found is None:
            raise not_found(task_id)
        task, seq = found
        return TaskEvent(seq, StreamResponse(task=task))

    async def read(
        self, task_id: str, after: int, limit: int = DEFAULT_PAGE, *, written: int | None = None
    ) -> list[TaskEvent]:
        """Up to ``limit`` events after seq ``after``, in order.

        Fewer than ``limit`` means nothing more exists now.  Raises
        :class:`LogTrimmedError` when the events right after ``after`` were removed from
        the store (trimmed, evicted, expired); ``written``, the seq of the last event
        known to be written, also catches a log that holds nothing after ``after`` any
        more.  An unknown task has no events (``[]``).
        """
        events = await self.store.read_events(self.agent_id, task_id, after, limit)
        if events and events[0].seq != after + 1:
            raise LogTrimmedError.gap(task_id, after, events[0].seq, written)
        if not events and written is not None and after < written:
            raise LogTrimmedError.gap(task_id, after, None, written)
        return events

    @property
    def shared(self) -> bool:
        """True when other instances may write these logs (see :meth:`wait`)."""
        return self.coordinator is not None

    async def wait(self, task_id: str, after: int, seconds: float) -> None:
        """Return when another instance may have written events after ``after``, or after
        ``seconds`` (at once when no other instance exists)."""
        if self.coordinator is not None:
            await self.coordinator.wait_events(self.agent_id, task_id, after, seconds)
