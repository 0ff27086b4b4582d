"""This instance among the others that share its store.

A :class:`Cluster` gives the instance an id and runs three background loops:

* **renew** — every ``lease_ttl / 3`` it renews the leases of the tasks it runs;
* **reap** — every ``orphan_timeout / 4`` it claims leases that lapsed (their
  instance died: kill -9, lost machine) and fails those tasks with a message
  saying why, so no task stays ``working`` forever;
* **listen** — it receives signals from other instances: a ``CancelTask`` that
  arrived elsewhere for a task whose executor runs here (``cancel``), or a push
  config stored elsewhere for such a task (``push-config``: the run here registers
  it at once, with the task's snapshot, instead of at its next turn).

A task is leased only while it is submitted or working *in the store*: a blocking
request that finishes at once writes one terminal snapshot and takes no lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from a2a_hub.engine.ending import fail_orphan
from a2a_hub.engine.pubsub import PubSub
from a2a_hub.stores.base import Store
from a2a_hub.stores.coordinator import CANCEL_SIGNAL, PUSH_CONFIG_SIGNAL, Coordinator, Signal
from a2a_hub.stores.outage import Repeating

__all__ = ["Cluster", "Member"]

log = logging.getLogger("a2a_hub.cluster")


class Member(Protocol):
    """What the cluster needs of one agent's engine in this instance."""

    @property
    def pubsub(self) -> PubSub:
        """Where the failure of an orphaned task is published."""
        ...

    def live(self, task_id: str) -> object | None:
        """The task's run if it runs here (then it is no orphan), else ``None``."""
        ...

    async def cancel_task(self, task_id: str) -> object:
        """Cancel a task (a ``cancel`` signal from another instance)."""
        ...

    async def push_configs_changed(self, task_id: str) -> None:
        """Register push configs stored by another instance (a ``push-config`` signal)."""
        ...


class Cluster:
    """Instance id, coordinator and background loops (see the module docstring)."""

    def __init__(
        self, store: Store, *, orphan_timeout: float = 30.0, instance_id: str | None = None
    ) -> None:
        self.store = store
        self.coordinator: Coordinator = store.coordinator()
        self.id = instance_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.orphan_timeout = orphan_timeout
        self.lease_ttl = orphan_timeout * 0.75
        #: Agent id -> its engine here (each engine joins when it is created).
        self.engines: dict[str, Member] = {}
        self._loops: list[asyncio.Task[None]] = []
        #: Leases of runs that ended while the store was down: released before renewing.
        self._unreleased: set[tuple[str, str]] = set()
        #: The loops' failures while the store is down: one line, every 30 s, once back.
        self._failing: dict[str, Repeating] = {}

    async def start(self) -> None:
        """Start the coordinator and the background loops; first fail the tasks a dead
        process left running in a store only one process serves (a SQLite file)."""
        await self.coordinator.start()
        for agent_id, task_id in await self.store.orphaned_at_start():
            await fail_orphan(
                self.store,
                agent_id,
                task_id,
                "the a2a-hub process running this task stopped before it ended (found when "
                "the hub started again); send the message again to start over",
            )
        self._loops = [
            asyncio.ensure_future(self._every(self.lease_ttl / 3, self._renew)),
            asyncio.ensure_future(self._every(self.orphan_timeout / 4, self._reap)),
            asyncio.ensure_future(self._listen()),
        ]

    async def close(self) -> None:
        """Stop the loops and the coordinator."""
        for loop in self._loops:
            loop.cancel()
        for loop in self._loops:
            with contextlib.suppress(asyncio.CancelledError):
                await loop
        self._loops = []
        await self.coordinator.close()

    async def _every(self, seconds: float, work: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(seconds)
            name = getattr(work, "__name__", "loop").lstrip("_")
            failing = self._failing.setdefault(name, Repeating(log, f"cluster: {name}"))
            try:
                await work()
            except Exception as exc:  # a store outage must not kill the loop
                failing.failed(exc)
            else:
                failing.worked()

    def release_later(self, agent_id: str, task_id: str) -> None:
        """Release a lease on the next renewal: its run ended but the release failed
        (``renew_leases`` renews every lease of this instance, so it must not stay)."""
        self._unreleased.add((agent_id, task_id))

    async def _renew(self) -> None:
        for agent_id, task_id in list(self._unreleased):
            engine = self.engines.get(agent_id)
            if engine is not None and engine.live(task_id) is not None:
                self._unreleased.discard((agent_id, task_id))  # it runs here again
                continue
            await self.coordinator.release_lease(agent_id, task_id, self.id)
            self._unreleased.discard((agent_id, task_id))
        await self.coordinator.renew_leases(self.id, self.lease_ttl)

    async def _reap(self) -> None:
        """Fail the tasks of instances that stopped renewing their leases."""
        for agent_id, task_id, owner in await self.coordinator.claim_expired(self.id):
            engine = self.engines.get(agent_id)
            if engine is not None and engine.live(task_id) is not None:
                continue  # our own run (a renewal was late): it is alive, keep it
            reason = (
                f"the a2a-hub instance running this task ({owner}) stopped: no heartbeat "
                f"for {self.orphan_timeout:g} s; send the message again to start over"
            )
            await fail_orphan(
                self.store, agent_id, task_id, reason, None if engine is None else engine.pubsub
            )

    async def _listen(self) -> None:
        failing = Repeating(log, "cluster: the signal channel (retried every second)")
        while True:
            try:
                # aclosing: a cancelled loop must close the generator now, not in the GC
                async with contextlib.aclosing(self.coordinator.signals()) as signals:
                    async for signal in signals:
                        failing.worked()
                        self._handle(signal)
                return
            except Exception as exc:
                failing.failed(exc)
                await asyncio.sleep(1)

    def _handle(self, signal: Signal) -> None:
        if signal.sender == self.id or signal.kind not in (CANCEL_SIGNAL, PUSH_CONFIG_SIGNAL):
            return
        engine = self.engines.get(signal.agent_id)
        if engine is None or engine.live(signal.task_id) is None:
            return
        if signal.kind == CANCEL_SIGNAL:
            task = asyncio.ensure_future(engine.cancel_task(signal.task_id))
        else:
            task = asyncio.ensure_future(engine.push_configs_changed(signal.task_id))
        task.add_done_callback(_log_failure)


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("a signal from another instance failed: %s", task.exception())
