"""The Temporal workflow of one A2A task (workflow id = task id).

It runs the task's turns one after the other, each an activity carrying only ids
(:data:`~a2a_hub.workers.messages.TURN_ACTIVITY`, on the agent's task queue, at most one
attempt unless the agent allows ``retry_on_worker_loss``).  Between turns — the task
``input-required`` or ``auth-required`` — it holds no worker slot: it waits for the
``next_message`` update an API node sends with the follow-up (refused when the task is not
waiting), or for ``input_timeout``.  The ``cancel`` signal cancels the running or queued
turn, or the wait.  What no turn can write itself (canceled while queued or waiting,
input timed out, worker lost) is written by a local activity
(:data:`~a2a_hub.workers.messages.END_ACTIVITY`), which needs no slot.

This module is loaded in Temporal's workflow sandbox: it imports nothing but Temporal and
the plain messages.
"""

from __future__ import annotations

import asyncio
import builtins
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType

with workflow.unsafe.imports_passed_through():
    from a2a_hub.workers.messages import (
        END_ACTIVITY,
        TURN_ACTIVITY,
        WORKFLOW,
        EndTask,
        TaskStart,
        Turn,
        TurnOutcome,
    )

__all__ = ["NOT_WAITING", "TaskWorkflow"]

#: The error type of an update refused because the task is not waiting for a message.
NOT_WAITING = "TaskNotWaiting"
#: How long one turn may run at most.
TURN_LIMIT = timedelta(days=1)
CANCELED, FAILED = "TASK_STATE_CANCELED", "TASK_STATE_FAILED"
INPUT_REQUIRED, AUTH_REQUIRED = "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"


@workflow.defn(name=WORKFLOW)
class TaskWorkflow:
    """One A2A task's turns; see the module docstring."""

    def __init__(self) -> None:
        self.running = False
        self.waiting = False
        self.finished = False
        self.canceled = False
        self.pending: int | None = None
        self.outcome: TurnOutcome | None = None
        self.turn: asyncio.Task[TurnOutcome] | None = None

    @workflow.run
    async def run(self, start: TaskStart) -> str:
        seq = start.seq
        while True:
            outcome = await self._turn(start, seq)
            if outcome is None or outcome.terminal:
                self.finished = True
                return outcome.state if outcome is not None else FAILED
            self.outcome, self.waiting = outcome, True
            try:
                await workflow.wait_condition(
                    lambda: self.pending is not None or self.canceled,
                    timeout=None if start.input_timeout is None else start.input_timeout,
                )
            except builtins.TimeoutError:
                self.finished = True
                reason = f"no message came within input_timeout ({start.input_timeout:g} s)"
                return await self._end(start, FAILED, reason)
            finally:
                self.waiting = False
            if self.canceled:
                self.finished = True
                return await self._end(start, CANCELED, "Task canceled by the client")
            assert self.pending is not None
            seq, self.pending = self.pending, None

    async def _turn(self, start: TaskStart, seq: int) -> TurnOutcome | None:
        """Run one turn; ``None`` when the task was ended here (canceled, worker lost)."""
        if self.canceled:
            await self._end(start, CANCELED, "Task canceled by the client")
            return None
        self.running = True
        self.turn = workflow.start_activity(
            TURN_ACTIVITY,
            Turn(start.agent_id, start.task_id, seq),
            result_type=TurnOutcome,
            task_queue=start.task_queue,
            start_to_close_timeout=TURN_LIMIT,
            heartbeat_timeout=timedelta(seconds=start.heartbeat_timeout),
            retry_policy=RetryPolicy(
                maximum_attempts=1 + start.retry_on_worker_loss,
                initial_interval=timedelta(seconds=1),
                backoff_coefficient=1.0,
            ),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        try:
            outcome: TurnOutcome = await self.turn
            return outcome
        except (ActivityError, asyncio.CancelledError) as exc:
            if self.canceled:
                await self._end(start, CANCELED, "Task canceled by the client")
                return None
            # lost or failed; but a turn may have ended (waiting for input) just before
            now = await self._end(start, FAILED, _why(exc, start), only_running=True)
            if now in (INPUT_REQUIRED, AUTH_REQUIRED):
                return TurnOutcome(state=now, seq=0, terminal=False)
            return None
        finally:
            self.running, self.turn = False, None

    async def _end(
        self, start: TaskStart, state: str, reason: str, *, only_running: bool = False
    ) -> str:
        """End the task with ``state`` unless it is terminal (or, with ``only_running``,
        waiting for input); the state it is in then."""
        now: str = await workflow.execute_local_activity(
            END_ACTIVITY,
            EndTask(start.agent_id, start.task_id, state, reason, only_running),
            result_type=str,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=5)),
        )
        return now

    @workflow.update
    async def next_message(self, seq: int) -> None:
        """The task's next message is stored at ``seq``: run its turn.  A turn still
        finishing is waited for; refused unless the task then waits for a message."""
        await workflow.wait_condition(lambda: not self.running)
        if not self.waiting or self.pending is not None or self.canceled:
            raise ApplicationError("the task is not waiting for a message", type=NOT_WAITING)
        self.pending = seq

    @next_message.validator
    def _check_next(self, seq: int) -> None:
        if self.finished or self.canceled or self.pending is not None:
            raise ApplicationError("the task is not waiting for a message", type=NOT_WAITING)
        if not (self.waiting or self.running):
            raise ApplicationError("the task is not waiting for a message", type=NOT_WAITING)

    @workflow.signal
    def cancel(self) -> None:
        """Cancel the task: its turn (running or queued) or its wait for a message."""
        self.canceled = True
        if self.turn is not None:
            self.turn.cancel()


def _why(exc: BaseException, start: TaskStart) -> str:
    """The failure of a turn that did not end by itself, in words."""
    cause = exc.cause if isinstance(exc, ActivityError) else None
    if isinstance(cause, TimeoutError) and cause.type is TimeoutType.HEARTBEAT:
        tries = 1 + start.retry_on_worker_loss
        return (
            f"the worker running this task was lost (no heartbeat for "
            f"{start.heartbeat_timeout:g} s{'' if tries == 1 else f', {tries} attempts'}); "
            "send the message again to start over"
        )
    if isinstance(cause, ApplicationError):
        return f"the turn failed on its worker: {cause.message}"
    return f"the turn failed on its worker: {cause or exc}"
