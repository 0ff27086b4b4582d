"""``a2a-hub worker``: the agents of a hub run as Temporal activities, at most N at a time.

A :class:`TurnWorker` is a service (:mod:`a2a_hub.server.lifecycle`) started after the
hub's: one Temporal worker on the executor's task queue runs the task workflows and the
local activity that ends tasks, and the turns of the agents routed to that queue; one
more per other ``task_queue`` of the hosted agents runs their turns.  Each runs at most
``slots`` turns at once; a turn beyond that waits in Temporal's queue (its task stays
``submitted``), for whichever worker frees a slot first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Callable, Sequence
from datetime import timedelta
from types import TracebackType

from temporalio.client import Client
from temporalio.worker import Worker

from a2a_hub.engine.engine import TaskEngine
from a2a_hub.settings import AgentSpec
from a2a_hub.stores.base import Store
from a2a_hub.workers.activities import Turns
from a2a_hub.workers.target import ExecutorTarget, connect, queues_of
from a2a_hub.workers.workflow import TaskWorkflow

__all__ = ["TurnWorker"]

log = logging.getLogger("a2a_hub.workers")


class TurnWorker:
    """The Temporal workers of this process (see the module docstring)."""

    def __init__(
        self,
        target: ExecutorTarget,
        specs: Sequence[AgentSpec],
        engines: Callable[[str], TaskEngine | None],
        store: Store,
        *,
        slots: int = 8,
        identity: str | None = None,
    ) -> None:
        self.target = target
        self.specs = list(specs)
        self.slots = slots
        self.identity = identity or f"{socket.gethostname()}-{os.getpid()}"
        self.turns = Turns(engines, store, self.identity, target.heartbeat_timeout)
        self._stack: contextlib.AsyncExitStack | None = None
        self._client: Client | None = None

    async def check(self) -> None:
        """One cheap call to Temporal (the worker's ``/readyz``)."""
        if self._client is None:
            raise ConnectionError("not connected to Temporal")
        await self._client.service_client.check_health()

    async def __aenter__(self) -> TurnWorker:
        client = self._client = await connect(self.target)
        queues = queues_of(self.target, self.specs)
        main = self.target.task_queue
        # four heartbeats per heartbeat timeout (Temporal's default sends one per 80 % of it)
        beat = timedelta(seconds=self.target.heartbeat_timeout / 4)
        async with contextlib.AsyncExitStack() as stack:
            workers = [
                Worker(
                    client,
                    task_queue=main,
                    workflows=[TaskWorkflow],
                    activities=[self.turns.end_task]
                    + ([self.turns.run_turn] if main in queues else []),
                    max_concurrent_activities=self.slots,
                    identity=self.identity,
                    graceful_shutdown_timeout=timedelta(seconds=1),
                    max_heartbeat_throttle_interval=beat,
                    default_heartbeat_throttle_interval=beat,
                    # a lost worker's workflows move to another one within a heartbeat
                    sticky_queue_schedule_to_start_timeout=timedelta(
                        seconds=self.target.heartbeat_timeout
                    ),
                )
            ]
            for queue in queues:
                if queue != main:
                    workers.append(
                        Worker(
                            client,
                            task_queue=queue,
                            activities=[self.turns.run_turn],
                            max_concurrent_activities=self.slots,
                            identity=self.identity,
                            graceful_shutdown_timeout=timedelta(seconds=1),
                            max_heartbeat_throttle_interval=beat,
                            default_heartbeat_throttle_interval=beat,
                        )
                    )
            for worker in workers:
                await stack.enter_async_context(worker)
            self._stack = stack.pop_all()
        log.info(
            "worker %s: %d slot(s) on %s, queues %s",
            self.identity,
            self.slots,
            self.target.address,
            ", ".join(f"{q} ({', '.join(a)})" for q, a in queues.items()),
        )
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()
