"""Each task's log as this instance sees it: the store's events plus those not written yet.

A running task's newest events live in its :class:`~a2a_hub.engine.run.TaskRun`
until the run flushes them (at the latest when the task settles, or every
``flush_delay`` while it keeps working).  :class:`TaskLog` answers "the events of
task T after seq N" from both, so that whoever resumes a task — a stream after
``Last-Event-ID``, a WebSocket ``sync_state``, push delivery after falling
behind — gets exactly what it missed.  It checks no visibility: callers check the
caller first (:meth:`TaskEngine.get_task` and friends do).
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
    """The events a subscriber needs are no longer in the log."""


#: What :func:`not_found` adds when the id came with a message meant to continue the task.
CONTINUE_HINT = "send the message without taskId to start a new task"


def not_found(task_id: str, hint: str = "") -> TaskNotFoundError:
    """The error for an unknown task id (and for a task the caller may not see)."""
    text = f"Task {task_id} not found; {hint}" if hint else f"Task {task_id} not found"
    return TaskNotFoundError(text, data={"taskId": task_id})


class LiveRun(Protocol):
    """What the log reads of a running task (a :class:`~a2a_hub.engine.run.TaskRun`)."""

    @property
    def task(self) -> Task | None:
        """The live snapshot (``None`` until the task exists)."""
        ...

    @property
    def seq(self) -> int:
        """The seq of the last event folded into :attr:`task`."""
        ...

    @property
    def events(self) -> list[TaskEvent]:
        """Its events not yet known to be in the store, in order."""
        ...

    def snapshot(self) -> Task:
        """An independent copy of :attr:`task`."""
        ...


class TaskLog:
    """The logs of one agent's tasks: stored events, then the live runs' unwritten tail.

    ``runs`` is the engine's registry of running tasks (read, never changed here);
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
        if run is not None and run.task is not None:
            return TaskEvent(run.seq, StreamResponse(task=run.snapshot()))
        found = await self.store.get_task_at(self.agent_id, task_id)
        if found is None:
            raise not_found(task_id)
        task, seq = found
        return TaskEvent(seq, StreamResponse(task=task))

    async def read(self, task_id: str, after: int, limit: int = DEFAULT_PAGE) -> list[TaskEvent]:
        """Up to ``limit`` events after seq ``after``, in order, those not written yet included.

        Fewer than ``limit`` means nothing more exists now.  Raises
        :class:`LogTrimmedError` when the events right after ``after`` were trimmed
        away (retention); an unknown task has no events (``[]``).
        """
        run = self.runs.get(task_id)
        # events not yet written are only in the live run: capture them before reading
        unwritten = [e for e in run.events if e.seq > after] if run is not None else []
        events = await self.store.read_events(self.agent_id, task_id, after, limit)
        if len(events) < limit:  # the store is exhausted: continue with the unwritten tail
            tail_from = events[-1].seq if events else after
            events += [e for e in unwritten if e.seq > tail_from]
        if events and events[0].seq != after + 1:
            raise LogTrimmedError(
                f"events {after + 1}..{events[0].seq - 1} of task {task_id} are no longer "
                "in the log; subscribe again without Last-Event-ID to get a fresh snapshot",
                data={"taskId": task_id, "firstAvailable": events[0].seq},
            )
        return events[:limit]

    @property
    def shared(self) -> bool:
        """True when other instances may write these logs (see :meth:`wait`)."""
        return self.coordinator is not None

    async def wait(self, task_id: str, after: int, seconds: float) -> None:
        """Return when another instance may have written events after ``after``, or after
        ``seconds`` (at once when no other instance exists)."""
        if self.coordinator is not None:
            await self.coordinator.wait_events(self.agent_id, task_id, after, seconds)
