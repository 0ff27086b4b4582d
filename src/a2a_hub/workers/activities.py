"""The activities of a worker tier, run by ``a2a-hub worker`` on its hub's engines.

* :meth:`Turns.run_turn` — one turn: the agent's engine opens it from the store
  (:meth:`~a2a_hub.engine.engine.TaskEngine.open_turn`) and drives it with today's
  ``TaskRun``, heartbeating the last written seq.  A cancellation from Temporal (the
  workflow's ``cancel`` signal) cancels the run as a ``CancelTask`` would; a retry (the
  agent's ``retry_on_worker_loss``) first writes a ``working`` status saying it resumed.
* :meth:`Turns.end_task` — a local activity: ends a task no turn runs (canceled while
  queued or waiting, input timed out, worker lost).  It needs only the store, so any
  worker runs it, hosting the agent or not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from temporalio import activity
from temporalio.exceptions import ApplicationError

from a2a_hub import metrics
from a2a_hub.engine.ending import end_stored_task
from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.run import TaskRun
from a2a_hub.protocol.types import TaskState
from a2a_hub.stores.base import LogConflictError, Store
from a2a_hub.workers.messages import END_ACTIVITY, TURN_ACTIVITY, EndTask, Turn, TurnOutcome

__all__ = ["Turns"]

log = logging.getLogger("a2a_hub.workers")


class Turns:
    """The activities, bound to this worker's engines and store."""

    def __init__(
        self,
        engines: Callable[[str], TaskEngine | None],
        store: Store,
        worker_id: str,
        heartbeat_timeout: float,
    ) -> None:
        self.engines = engines
        self.store = store
        self.worker_id = worker_id
        self.heartbeat_every = max(heartbeat_timeout / 4, 0.2)

    @activity.defn(name=TURN_ACTIVITY)
    async def run_turn(self, turn: Turn) -> TurnOutcome:
        """Run one turn of a task (see the module docstring)."""
        engine = self.engines(turn.agent_id)
        if engine is None:
            raise ApplicationError(
                f"agent {turn.agent_id!r} is not hosted by worker {self.worker_id}",
                non_retryable=True,
            )
        info = activity.info()
        note = None
        if info.attempt > 1:
            note = (
                f"resumed on worker {self.worker_id} (attempt {info.attempt}): the worker "
                "running this turn was lost"
            )
        # heartbeats from the start to the answer (the last seq written): a slow store
        # while the turn opens or ends is not a lost worker
        run: TaskRun | None = None
        beat = asyncio.ensure_future(self._heartbeat(lambda: 0 if run is None else run.written_seq))
        try:
            run = await engine.open_turn(turn.task_id, turn.seq, note=note)
            if run is not None:  # else the turn is over already (a repeat)
                waited = (info.started_time - info.current_attempt_scheduled_time).total_seconds()
                await self._drive(engine, turn, run, waited)
            return await self._outcome(turn)
        finally:
            beat.cancel()

    async def _drive(self, engine: TaskEngine, turn: Turn, run: TaskRun, waited: float) -> None:
        """Drive an opened turn to its end; Temporal's cancel cancels it as CancelTask does."""
        metrics.worker_turn(turn.agent_id, self.worker_id, 1, waited)
        drive = asyncio.ensure_future(engine.drive_turn(run))
        run.driver = drive
        try:
            await asyncio.shield(drive)
        except asyncio.CancelledError:
            if activity.is_worker_shutdown() or not activity.is_cancelled():
                run.stop()  # the worker stops: the task fails saying so
            else:
                await asyncio.shield(run.cancel())  # CancelTask through Temporal
            with contextlib.suppress(BaseException):
                await asyncio.shield(drive)
        finally:
            metrics.worker_turn(turn.agent_id, self.worker_id, -1)

    async def _heartbeat(self, written: Callable[[], int]) -> None:
        """Tell Temporal this worker is alive, with the last seq written, until cancelled."""
        while True:
            activity.heartbeat(written())
            await asyncio.sleep(self.heartbeat_every)

    async def _outcome(self, turn: Turn) -> TurnOutcome:
        record = await self.store.get_task_record(turn.agent_id, turn.task_id)
        if record is None:
            return TurnOutcome(state=TaskState.FAILED.value, seq=0, terminal=True)
        state = record.task.status.state
        return TurnOutcome(state=state.value, seq=record.seq, terminal=state.terminal)

    @activity.defn(name=END_ACTIVITY)
    async def end_task(self, end: EndTask) -> str:
        """End a task no turn runs with ``end.state`` and its reason, unless it is terminal
        already; the state it is in afterwards."""
        state = TaskState(end.state)
        while True:
            record = await self.store.get_task_record(end.agent_id, end.task_id)
            if record is None:
                return TaskState.FAILED.value
            task, seq, owner = record
            if task.status.state.terminal or (end.only_running and task.status.state.interrupted):
                return task.status.state.value
            try:
                ended, event = await end_stored_task(
                    self.store, end.agent_id, task, seq, state, end.reason, owner=owner
                )
            except LogConflictError:
                continue  # written meanwhile: read it again
            engine = self.engines(end.agent_id)
            if engine is not None:
                engine.pubsub.publish(end.task_id, event, owner)
                if state is TaskState.CANCELED and task.status.state.interrupted:
                    try:  # the executor hears of the cancel of a task waiting for input
                        await engine.executor.cancel_waiting(task)
                    except Exception:
                        log.exception("cancel_waiting of agent %s failed", end.agent_id)
            log.info("task %s of agent %s: %s", end.task_id, end.agent_id, end.reason)
            return ended.status.state.value
