"""The task engine of one agent: send, get, list, cancel.

It knows nothing of protocol versions: the transports decode requests into the
canonical 1.0 types, call these methods, and encode what they return.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from a2a_hub.engine.caller import ANONYMOUS, Caller
from a2a_hub.engine.executor import AgentExecutor, RequestContext
from a2a_hub.engine.run import TaskRun
from a2a_hub.engine.state import new_id, timestamp, trim_history
from a2a_hub.engine.stream import Subscription, TaskStream
from a2a_hub.protocol.errors import (
    InternalError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a_hub.protocol.types import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a_hub.stores.base import Store, TaskEvent, TaskQuery
from a2a_hub.stores.coordinator import Signal

if TYPE_CHECKING:
    from a2a_hub.engine.cluster import Cluster

__all__ = ["TaskEngine", "fail_orphan"]

log = logging.getLogger("a2a_hub.engine")

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50


class TaskEngine:
    """Runs one agent's executor over the tasks kept in ``store``."""

    def __init__(
        self,
        agent_id: str,
        executor: AgentExecutor,
        store: Store,
        *,
        flush_delay: float = 0.05,
        cluster: Cluster | None = None,
        cancel_wait: float = 10.0,
    ) -> None:
        self.agent_id = agent_id
        self.executor = executor
        self.store = store
        self.flush_delay = flush_delay
        #: Leases and signals shared with other instances (None: this process only).
        self.cluster = cluster
        self.cancel_wait = cancel_wait
        if cluster is not None:
            cluster.engines[agent_id] = self
        self._runs: dict[str, TaskRun] = {}
        self._topics: dict[str, set[Subscription]] = {}
        self._dirty: set[TaskRun] = set()
        self._flusher: asyncio.Task[None] | None = None

    # --- send ---------------------------------------------------------------------------

    async def send(
        self,
        request: SendMessageRequest,
        *,
        new_task_id: str | None = None,
        caller: Caller = ANONYMOUS,
        extensions: frozenset[str] = frozenset(),
    ) -> Task | Message:
        """Handle ``SendMessage``: answer with a Message, or a Task once it settles.

        ``new_task_id`` is the id a new task gets (0.1 clients choose their own);
        if a task with that id exists, the message continues it.  ``extensions`` are
        the activated extensions (the executor's ``ctx.extensions``).
        """
        run = await self.begin(
            request, new_task_id=new_task_id, caller=caller, extensions=extensions
        )
        config = request.configuration
        history_length = config.history_length if config is not None else None
        if config is not None and config.return_immediately:
            run.ensure_task()
            await run.flush()
            self._spawn(run)
            return trim_history(run.snapshot(), history_length)
        # Blocking: run the executor right here, in the request's own asyncio task (no
        # task to create, no hop through the loop).  A CancelTask cancels this task;
        # drive() absorbs that cancellation and leaves the task canceled.
        run.driver = asyncio.current_task()
        await run.drive()
        result = run.settled.result()
        if isinstance(result, Task):
            return trim_history(result, history_length)
        return result

    async def begin(
        self,
        request: SendMessageRequest,
        *,
        new_task_id: str | None = None,
        caller: Caller = ANONYMOUS,
        extensions: frozenset[str] = frozenset(),
    ) -> TaskRun:
        """Validate a send and prepare its run (not started): shared by send and stream."""
        message = request.message
        _check_message(message)
        config = request.configuration
        if config is not None and config.history_length is not None and config.history_length < 0:
            raise InvalidParamsError("configuration.historyLength must be 0 or more")
        task_id = message.task_id or new_task_id
        existing: Task | None = None
        if task_id is not None:
            self._refuse_if_running(task_id)
            found = await self.store.get_task_at(self.agent_id, task_id)
            existing, seq = found if found is not None else (None, 0)
            if existing is None and message.task_id is not None:
                raise TaskNotFoundError(
                    f"Task {task_id} not found; send the message without taskId "
                    "to start a new task",
                    data={"taskId": task_id},
                )
        if existing is not None:
            return self._continue(existing, seq, message, request, extensions)
        task_id = task_id or new_id()
        context_id = message.context_id or new_id()
        if message.task_id != task_id or message.context_id != context_id:
            message = msgspec.structs.replace(message, task_id=task_id, context_id=context_id)
        ctx = RequestContext(
            agent_id=self.agent_id,
            message=message,
            task_id=task_id,
            context_id=context_id,
            configuration=config,
            metadata=request.metadata,
            extensions=extensions,
            context_loader=self._context_loader(context_id, task_id),
        )
        self._refuse_if_running(task_id)
        run = TaskRun(self, ctx, bound=new_task_id is not None)
        self._runs[task_id] = run
        return run

    def _continue(
        self,
        task: Task,
        seq: int,
        message: Message,
        request: SendMessageRequest,
        extensions: frozenset[str],
    ) -> TaskRun:
        state = task.status.state
        if state.terminal:
            raise UnsupportedOperationError(
                f"Task {task.id} is {state.label} and accepts no more messages; "
                "send without taskId (keeping contextId) to start a new task",
                data={"taskId": task.id, "state": state.value},
            )
        if not state.interrupted:
            raise UnsupportedOperationError(
                f"Task {task.id} is still {state.label}; send the next message once it "
                "asks for input (input-required)",
                data={"taskId": task.id, "state": state.value},
            )
        if message.context_id is not None and message.context_id != task.context_id:
            raise InvalidParamsError(
                f"message.contextId {message.context_id!r} does not match the context "
                f"{task.context_id!r} of task {task.id}",
            )
        message = msgspec.structs.replace(message, task_id=task.id, context_id=task.context_id)
        ctx = RequestContext(
            agent_id=self.agent_id,
            message=message,
            task_id=task.id,
            context_id=task.context_id,
            task=task,
            configuration=request.configuration,
            metadata=request.metadata,
            extensions=extensions,
            context_loader=self._context_loader(task.context_id, task.id),
        )
        self._refuse_if_running(task.id)
        live = msgspec.structs.replace(
            task,
            history=list(task.history or []),
            artifacts=None if task.artifacts is None else list(task.artifacts),
        )
        run = TaskRun(self, ctx, task=live, seq=seq)
        self._runs[task.id] = run
        run.emit(StreamResponse(message=message))
        return run

    async def send_stream(
        self,
        request: SendMessageRequest,
        *,
        new_task_id: str | None = None,
        caller: Caller = ANONYMOUS,
        extensions: frozenset[str] = frozenset(),
    ) -> TaskStream:
        """``SendStreamingMessage``: the events of the turn this message starts, live."""
        run = await self.begin(
            request, new_task_id=new_task_id, caller=caller, extensions=extensions
        )
        run.ctx.streaming = True
        if run.task is None:
            stream = await TaskStream(self, run.task_id, after=0).start(fresh=True)
        else:  # a continued task: start from its snapshot, the new message included
            stream = await TaskStream(self, run.task_id, after=None).start()
        self._spawn(run)
        return stream

    async def subscribe(
        self, task_id: str, after: int | None = None, *, caller: Caller = ANONYMOUS
    ) -> TaskStream:
        """``SubscribeToTask``: a snapshot then live events, or with ``after`` a replay first.

        Without ``after`` a terminal task is refused (UnsupportedOperation); with it, the
        missed tail of any task is delivered and the stream ends if the task is not running.
        """
        run = self._runs.get(task_id)
        stream = TaskStream(self, task_id, after=after)
        try:
            if run is not None and run.task is not None:
                last, state = run.seq, run.task.status.state
            else:
                found = await self.store.get_task_at(self.agent_id, task_id)
                if found is None:
                    raise self.not_found(task_id)
                last, state = found[1], found[0].status.state
                stream.finite = state.terminal or state.interrupted
            if after is None and state.terminal:
                raise UnsupportedOperationError(
                    f"Task {task_id} is already {state.label}; there is nothing to follow "
                    "(GetTask returns its final state)",
                    data={"taskId": task_id, "state": state.value},
                )
            if after is not None and after > last:
                raise InvalidParamsError(
                    f"Last-Event-ID {after} is beyond the last event ({last}) of task {task_id}"
                )
        except BaseException:
            stream.close()
            raise
        return await stream.start()

    def topic(self, task_id: str) -> set[Subscription]:
        """The subscribers of a task (created on first use)."""
        subs = self._topics.get(task_id)
        if subs is None:
            subs = self._topics[task_id] = set()
        return subs

    def leave(self, task_id: str, sub: Subscription) -> None:
        """Remove a subscriber; drop the topic when it is empty."""
        subs = self._topics.get(task_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._topics[task_id]

    def publish(self, task_id: str, event: TaskEvent) -> None:
        """Hand an event to every subscriber of the task (never blocks)."""
        subs = self._topics.get(task_id)
        if subs:
            for sub in subs:
                sub.push(event)

    def not_found(self, task_id: str) -> TaskNotFoundError:
        """The error for an unknown task id."""
        return TaskNotFoundError(f"Task {task_id} not found", data={"taskId": task_id})

    def _context_loader(self, context_id: str, task_id: str) -> Callable[[], Awaitable[list[Task]]]:
        async def load() -> list[Task]:
            page = await self.store.list_tasks(
                self.agent_id, TaskQuery(context_id=context_id, page_size=MAX_PAGE_SIZE)
            )
            return [t for t in reversed(page.tasks) if t.id != task_id]

        return load

    def _refuse_if_running(self, task_id: str) -> None:
        if task_id in self._runs:
            raise UnsupportedOperationError(
                f"Task {task_id} is still working; send the next message once it asks for input",
                data={"taskId": task_id},
            )

    def _spawn(self, run: TaskRun) -> None:
        run.driver = asyncio.ensure_future(run.drive())

    def mark_dirty(self, run: TaskRun) -> None:
        """Note a run with unwritten events; the flusher writes it within ``flush_delay``."""
        self._dirty.add(run)
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush_loop())

    async def _flush_loop(self) -> None:
        """Write runs that keep working, every ``flush_delay`` seconds (one task per engine)."""
        while True:
            await asyncio.sleep(self.flush_delay)
            dirty, self._dirty = self._dirty, set()
            for run in dirty:
                if run.dirty:
                    try:
                        await run.flush()
                    except Exception as exc:  # kept queued; the next flush tries again
                        log.warning("writing task %s failed: %s", run.task_id, exc)
                        self._dirty.add(run)

    def forget(self, run: TaskRun) -> None:
        """Called by a run when it has finished."""
        if self._runs.get(run.task_id) is run:
            del self._runs[run.task_id]

    def live(self, task_id: str) -> TaskRun | None:
        """The running execution of a task in this process, if any."""
        return self._runs.get(task_id)

    # --- get / list / cancel ------------------------------------------------------------

    async def get_task(
        self, task_id: str, history_length: int | None = None, *, caller: Caller = ANONYMOUS
    ) -> Task:
        """``GetTask``: the newest snapshot, history trimmed to ``history_length``."""
        if history_length is not None and history_length < 0:
            raise InvalidParamsError("historyLength must be 0 or more")
        run = self._runs.get(task_id)
        if run is not None and run.task is not None:
            return trim_history(run.snapshot(), history_length)
        task = await self.store.get_task(self.agent_id, task_id)
        if task is None:
            raise self.not_found(task_id)
        return trim_history(task, history_length)

    async def list_tasks(
        self, request: ListTasksRequest, *, caller: Caller = ANONYMOUS
    ) -> ListTasksResponse:
        """``ListTasks``: newest first, filtered, paged."""
        page_size = DEFAULT_PAGE_SIZE if request.page_size is None else request.page_size
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidParamsError(f"pageSize must be between 1 and {MAX_PAGE_SIZE}")
        if request.history_length is not None and request.history_length < 0:
            raise InvalidParamsError("historyLength must be 0 or more")
        status = None if request.status is TaskState.UNSPECIFIED else request.status
        after = (
            _parse_time(request.status_timestamp_after) if request.status_timestamp_after else None
        )
        page = await self.store.list_tasks(
            self.agent_id,
            TaskQuery(
                context_id=request.context_id or None,
                state=status,
                updated_after=after,
                page_size=page_size,
                page_token=request.page_token or None,
            ),
        )
        tasks = []
        for task in page.tasks:
            run = self._runs.get(task.id)
            if run is not None and run.task is not None:
                task = run.snapshot()
            tasks.append(
                trim_history(
                    task, request.history_length, include_artifacts=bool(request.include_artifacts)
                )
            )
        return ListTasksResponse(
            tasks=tasks,
            next_page_token=page.next_page_token,
            page_size=page_size,
            total_size=page.total_size,
        )

    async def cancel_task(self, task_id: str, *, caller: Caller = ANONYMOUS) -> Task:
        """``CancelTask``: stop the executor if it runs, and end the task ``canceled``."""
        run = self._runs.get(task_id)
        if run is not None and run.task is not None and not run.task.status.state.terminal:
            run.cancel_requested = True
            if run.executing:
                try:
                    await self.executor.cancel(run.ctx, run.updater)
                except Exception:
                    log.exception("agent %s: cancel() of task %s failed", self.agent_id, task_id)
                if run.executing:
                    _cancel_driver(run)
            await asyncio.shield(run.finished)
            return run.snapshot()
        found = await self.store.get_task_at(self.agent_id, task_id)
        if found is None:
            raise self.not_found(task_id)
        task, seq = found
        state = task.status.state
        if not state.terminal and not state.interrupted and self.cluster is not None:
            owner = await self.cluster.coordinator.lease_owner(self.agent_id, task_id)
            if owner is not None and owner != self.cluster.id:
                return await self._cancel_remote(task_id, seq)
        if state.terminal:
            raise TaskNotCancelableError(
                f"Task {task_id} is already {state.label} and cannot be canceled",
                data={"taskId": task_id, "state": state.value},
            )
        task, event = await _end_stored_task(
            self.store, self.agent_id, task, seq, TaskState.CANCELED, "Task canceled by the client"
        )
        self.publish(task_id, event)
        return task

    async def _cancel_remote(self, task_id: str, seq: int) -> Task:
        """Ask the instance that runs the task to cancel it, and wait for the outcome."""
        assert self.cluster is not None
        coordinator = self.cluster.coordinator
        await coordinator.publish(Signal("cancel", self.agent_id, task_id, self.cluster.id))
        deadline = asyncio.get_running_loop().time() + self.cancel_wait
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise InternalError(
                    f"the instance running task {task_id} did not confirm the cancellation "
                    f"within {self.cancel_wait:g} s; try again"
                )
            await coordinator.wait_events(self.agent_id, task_id, seq, min(remaining, 1.0))
            found = await self.store.get_task_at(self.agent_id, task_id)
            if found is None:
                raise self.not_found(task_id)
            task, seq = found
            if task.status.state.terminal:
                return task

    async def close(self) -> None:
        """Stop every running executor; their tasks end ``failed`` (server shutting down)."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        runs = list(self._runs.values())
        for run in runs:
            if run.executing:
                _cancel_driver(run)
        for run in runs:
            await asyncio.wait([run.finished], timeout=5)


def _cancel_driver(run: TaskRun) -> None:
    if run.driver is not None:
        run.driver.cancel()


def _check_message(message: Message) -> None:
    if not message.message_id:
        raise InvalidParamsError("message.messageId is required")
    if message.role is not Role.USER:
        raise InvalidParamsError("message.role must be ROLE_USER for a message sent to an agent")
    if not message.parts:
        raise InvalidParamsError("message.parts must contain at least one part")
    for i, part in enumerate(message.parts):
        present = sum(x is not None for x in (part.text, part.raw, part.url)) + (
            part.data is not msgspec.UNSET
        )
        if present != 1:
            raise InvalidParamsError(
                f"message.parts[{i}] must have exactly one of text, raw, url or data"
            )


def _parse_time(value: str) -> float:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise InvalidParamsError(
            f"statusTimestampAfter {value!r} is not an ISO 8601 timestamp"
        ) from exc


async def fail_orphan(
    store: Store, agent_id: str, task_id: str, reason: str, engine: TaskEngine | None = None
) -> bool:
    """Fail a task whose instance died, if it is still submitted or working; True if it was."""
    found = await store.get_task_at(agent_id, task_id)
    if found is None:
        return False
    task, seq = found
    if task.status.state not in (TaskState.SUBMITTED, TaskState.WORKING):
        return False
    try:
        _, event = await _end_stored_task(store, agent_id, task, seq, TaskState.FAILED, reason)
    except ValueError:
        return False  # the task moved on meanwhile: its instance is alive after all
    log.warning("task %s of agent %s failed: %s", task_id, agent_id, reason)
    if engine is not None:
        engine.publish(task_id, event)
    return True


async def _end_stored_task(
    store: Store, agent_id: str, task: Task, seq: int, state: TaskState, text: str
) -> tuple[Task, TaskEvent]:
    """Give a task that runs nowhere here its final ``state`` with an agent message saying
    why, as event ``seq + 1`` (ValueError if the log moved on meanwhile)."""
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
    await store.save_task(agent_id, ended, [event])
    return ended, event
