"""An API node's side of a worker tier: turns queued on Temporal, cancels sent there.

:class:`TemporalTurns` is the :class:`~a2a_hub.engine.turns.TurnDispatch` of every engine
of an API node (``a2a-hub serve --executor temporal://…``), and a service: it connects at
start (an unreachable Temporal stops the start with one line), reads each task queue's
backlog for the metrics every few seconds, and answers ``/readyz``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING

from a2a_hub import metrics
from a2a_hub.protocol.errors import (
    A2AError,
    ExecutorUnavailableError,
    UnsupportedOperationError,
)
from a2a_hub.settings import AgentSpec
from a2a_hub.workers.messages import TaskStart
from a2a_hub.workers.target import ExecutorTarget, connect, queues_of
from a2a_hub.workers.workflow import NOT_WAITING, TaskWorkflow

if TYPE_CHECKING:
    from temporalio.client import Client

__all__ = ["TemporalTurns"]

log = logging.getLogger("a2a_hub.workers")

#: Seconds between two reads of the task queues' backlogs (metrics).
BACKLOG_EVERY = 5.0
#: Seconds an update (a follow-up message) may wait for a worker to take it.
UPDATE_TIMEOUT = 30.0


class TemporalTurns:
    """Queues turns on Temporal for the agents of this API node (see the module docstring)."""

    def __init__(self, target: ExecutorTarget, specs: Callable[[], Sequence[AgentSpec]]) -> None:
        self.target = target
        #: The specs of the agents hosted now.
        self.specs = specs
        self._client: Client | None = None
        self._backlog: asyncio.Task[None] | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            raise ExecutorUnavailableError("the connection to Temporal is not open")
        return self._client

    async def __aenter__(self) -> TemporalTurns:
        self._client = await connect(self.target)
        if metrics.enabled():
            self._backlog = asyncio.ensure_future(self._read_backlogs())
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._backlog is not None:
            self._backlog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._backlog
        self._client = None

    async def check(self) -> None:
        """One cheap call (``/readyz``)."""
        await self.client.service_client.check_health()

    # --- TurnDispatch -------------------------------------------------------------------

    async def start_task(self, agent_id: str, task_id: str, seq: int) -> None:
        from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

        spec = next((s for s in self.specs() if s.id == agent_id), None)
        start = TaskStart(
            agent_id=agent_id,
            task_id=task_id,
            seq=seq,
            task_queue=(spec.task_queue if spec else None) or self.target.task_queue,
            retry_on_worker_loss=spec.retry_on_worker_loss if spec else 0,
            input_timeout=spec.input_timeout if spec else None,
            heartbeat_timeout=self.target.heartbeat_timeout,
        )
        try:
            await self.client.start_workflow(
                TaskWorkflow.run,
                start,
                id=task_id,
                task_queue=self.target.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            )
        except A2AError:
            raise
        except Exception as exc:
            raise _unavailable("queue the task", exc) from None

    async def next_turn(self, agent_id: str, task_id: str, seq: int) -> None:
        from temporalio.client import WorkflowUpdateFailedError
        from temporalio.exceptions import ApplicationError
        from temporalio.service import RPCError, RPCStatusCode

        handle = self.client.get_workflow_handle(task_id)
        try:
            await handle.execute_update(
                TaskWorkflow.next_message, seq, rpc_timeout=_seconds(UPDATE_TIMEOUT)
            )
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            if isinstance(cause, ApplicationError) and cause.type == NOT_WAITING:
                raise _not_waiting(task_id) from None
            raise _unavailable("deliver the message", exc) from None
        except RPCError as exc:
            if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION):
                raise _not_waiting(task_id) from None
            raise _unavailable("deliver the message", exc) from None

    async def cancel(self, agent_id: str, task_id: str) -> bool:
        from temporalio.service import RPCError, RPCStatusCode

        try:
            await self.client.get_workflow_handle(task_id).signal(TaskWorkflow.cancel)
        except RPCError as exc:
            if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION):
                return False  # no workflow runs it (any more)
            raise _unavailable("cancel the task", exc) from None
        return True

    # --- metrics ------------------------------------------------------------------------

    async def _read_backlogs(self) -> None:
        from temporalio.api.enums.v1 import TaskQueueType
        from temporalio.api.taskqueue.v1 import TaskQueue
        from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

        while True:
            await asyncio.sleep(BACKLOG_EVERY)
            for queue, agents in queues_of(self.target, self.specs()).items():
                request = DescribeTaskQueueRequest(
                    namespace=self.target.namespace,
                    task_queue=TaskQueue(name=queue),
                    task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
                    report_stats=True,
                )
                try:
                    found = await self.client.workflow_service.describe_task_queue(request)
                except Exception as exc:
                    log.debug("backlog of task queue %s: %s", queue, exc)
                    continue
                count = found.stats.approximate_backlog_count
                metrics.turns_queued(queue, ",".join(sorted(agents)), count)


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def _not_waiting(task_id: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"Task {task_id} is not waiting for a message (it is still working, or it ended); "
        "send the next message once it asks for input",
        data={"taskId": task_id},
    )


def _unavailable(what: str, exc: BaseException) -> ExecutorUnavailableError:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return ExecutorUnavailableError(f"could not {what} on Temporal: {text}")
