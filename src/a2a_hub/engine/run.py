"""One execution of an executor for one task: the live snapshot, its events, their flushing.

A :class:`TaskRun` exists while an executor works on a task.  Every updater
call becomes an event: it gets the next sequence number, is folded into the
live snapshot and is queued for the store.  Queued events are written in one
``save_task`` when the task settles (terminal or interrupted: the point where a
blocked client is answered), when a non-blocking send must acknowledge the task,
or by the :class:`Flusher` on the next turn of the event loop while the executor
keeps working (events that come during a write go into the next one) — so a
blocking request that finishes at once costs a single store write.

**Durable before visible**: an event is handed to listeners (the task's
topic, so its streams — SSE, gRPC, WebSocket —, and the agent's feed) only after
the write that holds it succeeded (push deliveries are queued in that same
write), in order; what readers see of a running task (:meth:`TaskRun.stored`)
is the task as written.  So every event id a client was ever given is in the
store, and an instance that dies loses only events nobody saw; the next event
id (the reaper's failure, say) names no event anybody saw.

A run is given the pieces it works with (the executor, the store, the agent's
:class:`PubSub`, the engine's :class:`Flusher` and table of runs, the
:class:`Cluster`), never the engine itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import msgspec

from a2a_hub import tracing
from a2a_hub.engine.cluster import Cluster
from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_hub.engine.flusher import Flusher
from a2a_hub.engine.pubsub import PubSub
from a2a_hub.engine.state import (
    TRANSITIONS,
    InvalidTransitionError,
    apply_event,
    check_transition,
    timestamp,
)
from a2a_hub.protocol.errors import InternalError, StoreUnavailableError
from a2a_hub.protocol.types import (
    Artifact,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a_hub.stores.base import Delivery, LogConflictError, Store, TaskEvent

__all__ = ["TaskRun"]

log = logging.getLogger("a2a_hub.engine")

#: The states where a turn settles (the blocked request is answered): terminal or interrupted.
_SETTLED = frozenset(state for state in TaskState if state.terminal or state.interrupted)
_SUBMITTED, _WORKING, _COMPLETED = TaskState.SUBMITTED, TaskState.WORKING, TaskState.COMPLETED
#: The states of a task whose turn is not over.
_UNSETTLED = frozenset({_SUBMITTED, _WORKING})
#: The states a task may move to from each state (:data:`~a2a_hub.engine.state.TRANSITIONS`).
_LEGAL = TRANSITIONS


class TaskRun:
    """The live state of one task while its executor runs (see module docstring)."""

    __slots__ = (
        "_ended",
        "_finished",
        "_flushed",
        "_flushing",
        "_unflushed",
        "agent_id",
        "bound",
        "cancel_requested",
        "cluster",
        "context_id",
        "ctx",
        "driver",
        "executing",
        "executor",
        "flusher",
        "leased",
        "owner",
        "pubsub",
        "push_configs",
        "push_configs_new",
        "push_queued",
        "runs",
        "seq",
        "settled",
        "settled_seq",
        "store",
        "tail",
        "task",
        "task_id",
        "written",
        "written_seq",
    )

    def __init__(  # positional on the hot path: a class call with keywords builds a dict
        self,
        ctx: RequestContext,
        executor: AgentExecutor,
        store: Store,
        pubsub: PubSub,
        flusher: Flusher,
        runs: dict[str, TaskRun],
        cluster: Cluster | None = None,
        owner: str | None = None,
        task: Task | None = None,
        seq: int = 0,
        bound: bool = False,
    ) -> None:
        self.ctx = ctx
        self.agent_id = ctx.agent_id
        self.executor = executor
        self.store = store
        self.pubsub = pubsub
        self.flusher = flusher
        #: The engine's table of running tasks: the run leaves it when it finishes.
        self.runs = runs
        self.cluster = cluster
        #: The principal that created the task (``None``: anonymous), stored with it.
        self.owner = owner
        self.task_id = ctx.task_id
        self.context_id = ctx.context_id
        self.task = task
        self.seq = seq
        #: True once the request is tied to a task (a continued task or a non-blocking send).
        self.bound = bound or task is not None
        #: The task as last written (``None`` until its first write) and its last seq.
        self.written: Task | None = task
        self.written_seq = seq if task is not None else 0
        self.executing = False
        self.cancel_requested = False
        self.settled: asyncio.Future[Task | Message] = asyncio.get_running_loop().create_future()
        #: The seq of the task :attr:`settled` answers with (its 1.1 generation).
        self.settled_seq = 0
        #: Done once the run is over (made when first asked for, see :attr:`finished`).
        self._finished: asyncio.Future[None] | None = None
        self._ended = False
        #: Writes the run's end after an outage (see :meth:`_finish`), then ends the run.
        self.tail: asyncio.Task[None] | None = None
        self._unflushed: list[TaskEvent] = []
        #: True while a write is in flight (writes are serialised, see :meth:`flush`).
        self._flushing = False
        #: Done when the write in flight ends (made only when someone waits for it).
        self._flushed: asyncio.Future[None] | None = None
        #: Whether this instance holds the task's lease (it is submitted/working in the store).
        self.leased = False
        #: The asyncio task running :meth:`drive`, set by whoever starts it.
        self.driver: asyncio.Future[None] | None = None
        #: Ids of the task's push configs: each notable event saved gets a delivery each.
        self.push_configs: tuple[str, ...] = ()
        #: Told after a save that queued deliveries (wakes the push dispatcher).
        self.push_queued: Callable[[], None] | None = None
        #: Push configs to store with the next save (a new task's inline config).
        self.push_configs_new: tuple[TaskPushNotificationConfig, ...] = ()

    @property
    def finished(self) -> asyncio.Future[None]:
        """Done once the run is over: it left the table of runs (made on demand: most runs
        end without anybody waiting for them)."""
        finished = self._finished
        if finished is None:
            finished = self._finished = asyncio.get_running_loop().create_future()
            if self._ended:
                finished.set_result(None)
        return finished

    @property
    def updater(self) -> TaskUpdater:
        """A handle for the executor (made on demand: a run that kept its updater, which
        refers to the run, would be a reference cycle, freed only by the garbage
        collector, and every request's objects with it)."""
        return TaskUpdater(self)

    # --- events ----------------------------------------------------------------------

    def emit(self, event: StreamResponse) -> TaskEvent:
        """Sequence, fold and queue one event (published once written: :meth:`flush`)."""
        self.task = apply_event(self.task, event)
        return self._queue(event)

    def _queue(self, event: StreamResponse) -> TaskEvent:
        """Sequence and queue one event already folded into the live task."""
        seq = self.seq = self.seq + 1
        record = TaskEvent(seq, event)
        unflushed = self._unflushed
        unflushed.append(record)
        if len(unflushed) == 1:  # it was clean: the flusher writes it (it stays marked)
            self.flusher.mark_dirty(self)
        return record

    def snapshot(self) -> Task:
        """An independent copy of the live task (lists copied, items shared read-only)."""
        task = self.task
        assert task is not None
        return msgspec.structs.replace(
            task,
            history=None if task.history is None else list(task.history),
            artifacts=None if task.artifacts is None else list(task.artifacts),
        )

    def stored(self) -> Task | None:
        """An independent copy of the task as last written (``None``: not written yet)."""
        task = self.written
        if task is None:
            return None
        return msgspec.structs.replace(
            task,
            history=None if task.history is None else list(task.history),
            artifacts=None if task.artifacts is None else list(task.artifacts),
        )

    async def flush(self) -> None:
        """Write queued events and the snapshot in one store call (serialised), then
        publish them, in order.

        A write that fails or is cancelled requeues its events, although it may have
        landed (the store took it, then the answer was lost, or the caller was cancelled
        while a thread or a server committed it): the next write then meets those events
        in the log and counts them as written (:meth:`_write`).
        """
        while self._flushing:  # one write at a time: wait for the one in flight
            if self._flushed is None:
                self._flushed = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._flushed)
        if not self._unflushed:
            return
        self._flushing = True
        try:
            events, self._unflushed = self._unflushed, []
            snapshot = self.snapshot()
            try:
                await self._write(snapshot, events)
            except BaseException:
                self._unflushed[:0] = events
                # tried again by the flusher (a write of its own in flight is retried
                # anyway; one from elsewhere, e.g. the run's end, would otherwise not be)
                self.flusher.mark_dirty(self)
                raise
            self.written, self.written_seq = snapshot, events[-1].seq
            pubsub, task_id, owner = self.pubsub, self.task_id, self.owner
            if pubsub.listened(task_id):
                for record in events:
                    pubsub.publish(task_id, record, owner)
            if self.leased and snapshot.status.state in _SETTLED:
                await self.release_lease()
        finally:
            self._flushing = False
            waiting, self._flushed = self._flushed, None
            if waiting is not None:
                waiting.set_result(None)

    async def _write(self, snapshot: Task, events: list[TaskEvent]) -> None:
        """Take the lease if the task runs on, then save ``snapshot`` and ``events``.

        A write reported as failed may have landed (the store took it, then the
        connection was lost before its answer): its events, requeued, then meet
        themselves in the log.  A conflict whose stored events are this run's own is
        that case: those count as written and the rest is saved after them.  Any other
        conflict (another writer moved the log on) is raised.
        """
        cluster = self.cluster
        if cluster is not None and not self.leased and snapshot.status.state not in _SETTLED:
            # lease first: a task that is running in the store always has a lease
            await cluster.coordinator.acquire_lease(
                self.agent_id, self.task_id, cluster.id, cluster.lease_ttl
            )
            self.leased = True
        try:
            if self.push_configs:
                await self._save(snapshot, events)
            else:  # the common case, without a call of its own
                await self.store.save_task(self.agent_id, snapshot, events, owner=self.owner)
        except LogConflictError:
            landed = await self._landed(events)
            if not landed:
                raise
            if landed < len(events):
                await self._save(snapshot, events[landed:])
            log.info(
                "task %s: %d events reported unwritten were in the store already",
                self.task_id,
                landed,
            )

    async def _save(self, snapshot: Task, events: list[TaskEvent]) -> None:
        if self.push_configs:
            configs = self.push_configs_new
            await self.store.save_task(
                self.agent_id,
                snapshot,
                events,
                owner=self.owner,
                deliveries=self._deliveries(events),
                push_configs=configs,
            )
            if configs:
                self.push_configs_new = ()
            if self.push_queued is not None:
                self.push_queued()
        else:
            await self.store.save_task(self.agent_id, snapshot, events, owner=self.owner)

    async def _landed(self, events: list[TaskEvent]) -> int:
        """How many of ``events``, from the first, are in the store as they are here."""
        stored = await self.store.read_events(
            self.agent_id, self.task_id, after=events[0].seq - 1, limit=len(events)
        )
        encode = msgspec.json.encode
        landed = 0
        for mine, theirs in zip(events, stored, strict=False):
            if mine.seq != theirs.seq or encode(mine.event) != encode(theirs.event):
                break
            landed += 1
        return landed

    def _deliveries(self, events: list[TaskEvent]) -> list[Delivery]:
        """One delivery per push config for each event a webhook is told about: status
        changes and complete artifacts (a whole one, or the last chunk of one)."""
        out = []
        for record in events:
            ev = record.event
            art = ev.artifact_update
            if ev.status_update is None and (art is None or (art.append and not art.last_chunk)):
                continue
            for config_id in self.push_configs:
                out.append(
                    Delivery(
                        agent_id=self.agent_id,
                        task_id=self.task_id,
                        config_id=config_id,
                        seq=record.seq,
                    )
                )
        return out

    async def release_lease(self) -> None:
        """Give the task's lease back (the executor no longer runs it)."""
        cluster = self.cluster
        if self.leased and cluster is not None:
            self.leased = False
            await cluster.coordinator.release_lease(self.agent_id, self.task_id, cluster.id)

    @property
    def dirty(self) -> bool:
        """True while some events are not written yet."""
        return bool(self._unflushed)

    # --- what the updater calls ----------------------------------------------------

    def ensure_task(self) -> Task:
        """Create the task (state ``submitted``, history = the incoming message) if needed."""
        if self.task is None:
            self.bound = True
            self.emit(
                StreamResponse(
                    task=Task(
                        id=self.task_id,
                        context_id=self.context_id,
                        status=TaskStatus(state=_SUBMITTED, timestamp=timestamp()),
                        history=[self.ctx.message],
                    )
                )
            )
        assert self.task is not None
        return self.task

    async def start(self) -> None:
        task = self.task if self.task is not None else self.ensure_task()
        if task.status.state is not _WORKING:
            await self.set_status(_WORKING, None)

    async def set_status(
        self, state: TaskState, content: str | Sequence[Part] | Message | None
    ) -> None:
        task = self.task if self.task is not None else self.ensure_task()
        current = task.status.state
        if state not in _LEGAL[current]:
            check_transition(current, state)  # raises, saying why
        message = None if content is None else self.updater.message(content)
        status = TaskStatus(state=state, message=message, timestamp=timestamp())
        # folded here, as apply_event would (the live task is this run's own)
        task.status = status
        if message is not None:
            if task.history is None:
                task.history = []
            task.history.append(message)
        self._queue(
            StreamResponse(
                status_update=TaskStatusUpdateEvent(
                    task_id=self.task_id, context_id=self.context_id, status=status
                )
            )
        )
        if state in _SETTLED:
            await self.flush()
            if not self.settled.done():
                # the task as just written (a copy nobody changes) when nothing came since
                result = self.written
                if result is None or self.written_seq != self.seq:
                    result = self.snapshot()
                self.settle(result)

    def add_artifact(self, artifact: Artifact, *, append: bool, last_chunk: bool) -> None:
        """Queue an artifact (or a chunk of one); written by the flusher or the turn's end."""
        task = self.task if self.task is not None else self.ensure_task()
        if task.status.state in _SETTLED:
            raise InvalidTransitionError(
                "artifacts can only be added while the task is submitted or working"
            )
        self.emit(
            StreamResponse(
                artifact_update=TaskArtifactUpdateEvent(
                    task_id=self.task_id,
                    context_id=self.context_id,
                    artifact=artifact,
                    append=append,
                    last_chunk=last_chunk,
                )
            )
        )

    async def reply(self, content: str | Sequence[Part] | Message) -> None:
        if self.bound or self.task is not None:
            await self.set_status(_COMPLETED, content)
            return
        if self.settled.done():
            raise InvalidTransitionError("the agent already answered this message")
        message = self.updater.message(content, with_task=False)
        if message.context_id is None:
            message = msgspec.structs.replace(message, context_id=self.context_id)
        self.pubsub.publish(
            self.task_id,
            TaskEvent(0, StreamResponse(message=message)),
            self.owner,
            self.ctx.message,
        )
        self.settle(message)

    def settle(self, result: Task | Message) -> None:
        """Answer the blocked request (first call wins); a task is the one at :attr:`seq`."""
        if not self.settled.done():
            self.settled_seq = self.seq
            self.settled.set_result(result)

    # --- the executor's life -----------------------------------------------------------

    async def cancel(self) -> Task:
        """Cancel the task: ask the executor to stop (its ``cancel``, then asyncio
        cancellation), wait until the run has finished, and return the task as it ended."""
        self.cancel_requested = True
        if self.executing:
            try:
                await self.executor.cancel(self.ctx, self.updater)
            except Exception:
                log.exception("agent %s: cancel() of task %s failed", self.agent_id, self.task_id)
            if self.executing:
                self.stop()
        await asyncio.shield(self.finished)
        return self.snapshot()

    def stop(self) -> None:
        """Cancel the asyncio task running the executor (the task then ends ``failed``,
        or ``canceled`` when a cancel was requested), or the one still writing its end."""
        if self.driver is not None:
            self.driver.cancel()
        if self.tail is not None:
            self.tail.cancel()

    def drive(self) -> Coroutine[Any, Any, None]:
        """Run ``execute`` to its end and leave the task in a state that tells the truth
        (inside a tracing span when tracing is on, see :mod:`a2a_hub.tracing`): await it.

        (A plain function returning the coroutine: no coroutine of its own without tracing.)
        """
        return self._drive() if not tracing.active else self._traced()

    async def _traced(self) -> None:
        with tracing.run_span(self.agent_id, self.task_id, self.context_id) as span:
            try:
                await self._drive()
            finally:
                if self.task is not None:
                    span.set_attribute("a2a.task.state", self.task.status.state.value)

    async def _drive(self) -> None:
        failure: str | None = None
        if self.cancel_requested:  # canceled before the executor got to start
            await self._finish(None)
            return
        self.executing = True
        try:
            await self.executor.execute(self.ctx, self.updater)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not self.cancel_requested:
                failure = "the server shut down while the task was running"
                await self._finish(failure)
                raise
            if current is not None:
                current.uncancel()
        except InvalidTransitionError as exc:
            failure = f"agent broke the task protocol: {exc}"
            log.warning("agent %s, task %s: %s", self.agent_id, self.task_id, failure)
        except StoreUnavailableError as exc:  # an outage, logged by the store: no traceback
            failure = f"agent error: {exc.message}"
            log.debug("agent %s, task %s: %s", self.agent_id, self.task_id, exc.message)
        except Exception as exc:  # the agent's own failure becomes the task's failure
            failure = f"agent error: {type(exc).__name__}: {exc}"
            log.exception("agent %s failed on task %s", self.agent_id, self.task_id)
        finally:
            self.executing = False
        await self._finish(failure)

    async def _finish(self, failure: str | None) -> None:
        unwritten = False
        try:
            answered = self.task is not None or self.settled.done()
            state = self.task.status.state if self.task is not None else None
            if self.cancel_requested and (state is None or not state.terminal):
                await self.set_status(TaskState.CANCELED, "Task canceled by the client")
            elif failure is not None and (state is None or not state.terminal):
                await self.set_status(TaskState.FAILED, failure)
            elif not answered:
                await self.set_status(TaskState.FAILED, "the agent returned without answering")
            elif state in _UNSETTLED:
                await self.set_status(
                    TaskState.FAILED, "the agent stopped without finishing the task"
                )
            if self._unflushed or self._flushing:
                await self.flush()
            if self.task is not None and not self.settled.done():
                self.settle(self.snapshot())
        except BaseException as exc:
            conflict = isinstance(exc, LogConflictError)
            if conflict:  # the log moved on without us
                log.warning(
                    "task %s was changed by another instance meanwhile: %s", self.task_id, exc
                )
                exc = InternalError(
                    f"task {self.task_id} was changed by another instance meanwhile "
                    "(it may have been failed as orphaned); GetTask shows its state"
                )
            if not self.settled.done():
                self.settled.set_exception(exc)
                self.settled.exception()  # the request may be gone: never log it as lost
            if not isinstance(exc, Exception):
                raise
            # The agent's work is done but its end is not written (a store outage): the
            # request is answered with the error now, and the end written once the store
            # takes it, the lease held until then.  Given up, the task would stay "working"
            # in the store under a lease this instance renews, and a retry of the message
            # would follow it for ever.
            unwritten = self.dirty and not conflict
        finally:
            if unwritten:
                self.tail = asyncio.ensure_future(self._end_when_written())
            elif self.leased:
                await self._end()
            else:
                self._leave()

    async def leave(self) -> None:
        """Leave this process without ending the task: an API node handed its turn to a
        worker (:func:`a2a_hub.engine.turns.hand_off`)."""
        await self._end()

    async def _end_when_written(self) -> None:
        try:
            await self.flusher.write_until_clean(self)
        finally:
            await self._end()

    async def _end(self) -> None:
        """The run is over: give the lease back, leave the table of runs, wake the waiters."""
        try:
            if self.leased:
                await self.release_lease()
        except Exception as exc:
            log.warning("could not release the lease of task %s: %s", self.task_id, exc)
            if self.cluster is not None:  # else this instance would renew it for ever
                self.cluster.release_later(self.agent_id, self.task_id)
        self._leave()

    def _leave(self) -> None:
        """Leave the table of runs and wake the waiters (the lease is given back)."""
        if self.runs.get(self.task_id) is self:
            del self.runs[self.task_id]
        self._ended = True
        finished = self._finished
        if finished is not None and not finished.done():
            finished.set_result(None)
