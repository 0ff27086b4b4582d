"""What several instances sharing one store need from it: leases, signals, and waking followers.

* **Leases** say which instance runs a task.  The running instance renews its
  leases; when one lapses (the instance died), another instance *claims* it —
  each lapsed lease is handed to exactly one claimant — and fails the task.
* **Signals** carry requests between instances, e.g. "cancel task T" to the
  instance whose executor runs it.
* **wait_events** lets an instance that follows a task running elsewhere sleep
  until new events may be in the log (or a timeout passes).

:class:`LocalCoordinator` does all of this inside one process (enough for
``memory://``/SQLite and for several hubs sharing one store object in tests);
the Redis and PostgreSQL backends provide coordinators that work across
processes and machines.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator

import msgspec

__all__ = ["CANCEL_SIGNAL", "PUSH_CONFIG_SIGNAL", "Coordinator", "LocalCoordinator", "Signal"]


#: Signal kinds: cancel a task running elsewhere; push configs stored for a task running
#: elsewhere (that instance registers them with the run at once).
CANCEL_SIGNAL = "cancel"
PUSH_CONFIG_SIGNAL = "push-config"


class Signal(msgspec.Struct, frozen=True):
    """A request from one instance to the others (``kind`` is e.g. ``"cancel"``)."""

    kind: str
    agent_id: str
    task_id: str
    sender: str = ""


class Coordinator(ABC):
    """Leases, signals and follower wake-ups for instances sharing a store."""

    #: True when this coordinator reaches other processes (Redis, PostgreSQL).
    shared: bool = False

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Connect whatever the coordinator needs (called by the hub on start)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    @abstractmethod
    async def acquire_lease(self, agent_id: str, task_id: str, owner: str, ttl: float) -> None:
        """Record that ``owner`` runs the task, for ``ttl`` seconds unless renewed."""

    @abstractmethod
    async def renew_leases(self, owner: str, ttl: float) -> None:
        """Extend every lease held by ``owner`` to ``ttl`` seconds from now."""

    @abstractmethod
    async def release_lease(self, agent_id: str, task_id: str, owner: str) -> None:
        """Drop the lease if ``owner`` holds it."""

    @abstractmethod
    async def lease_owner(self, agent_id: str, task_id: str) -> str | None:
        """The instance holding a live lease on the task, or ``None``."""

    @abstractmethod
    async def claim_expired(self, owner: str, limit: int = 100) -> list[tuple[str, str, str]]:
        """Take over lapsed leases: ``(agent_id, task_id, previous_owner)``, each to one caller."""

    @abstractmethod
    async def publish(self, signal: Signal) -> None:
        """Send a signal to every instance (including this one)."""

    @abstractmethod
    def signals(self) -> AsyncGenerator[Signal, None]:
        """Signals as they arrive, until the coordinator closes."""

    async def wait_events(self, agent_id: str, task_id: str, after: int, wait: float) -> None:
        """Return when events after ``after`` may exist, or after ``wait`` seconds.

        The default polls: it simply sleeps a short while.  Backends that can be
        told about new events (Redis streams, PostgreSQL NOTIFY) return sooner.
        """
        await asyncio.sleep(min(wait, 0.1))


class LocalCoordinator(Coordinator):
    """Leases and signals inside one process."""

    def __init__(self) -> None:
        self._leases: dict[tuple[str, str], tuple[str, float]] = {}
        self._queues: set[asyncio.Queue[Signal | None]] = set()

    async def acquire_lease(self, agent_id: str, task_id: str, owner: str, ttl: float) -> None:
        self._leases[(agent_id, task_id)] = (owner, time.time() + ttl)

    async def renew_leases(self, owner: str, ttl: float) -> None:
        until = time.time() + ttl
        for key, (holder, _) in list(self._leases.items()):
            if holder == owner:
                self._leases[key] = (owner, until)

    async def release_lease(self, agent_id: str, task_id: str, owner: str) -> None:
        held = self._leases.get((agent_id, task_id))
        if held is not None and held[0] == owner:
            del self._leases[(agent_id, task_id)]

    async def lease_owner(self, agent_id: str, task_id: str) -> str | None:
        held = self._leases.get((agent_id, task_id))
        return held[0] if held is not None and held[1] > time.time() else None

    async def claim_expired(self, owner: str, limit: int = 100) -> list[tuple[str, str, str]]:
        now = time.time()
        claimed: list[tuple[str, str, str]] = []
        for (agent_id, task_id), (holder, until) in list(self._leases.items()):
            if until <= now and len(claimed) < limit:
                del self._leases[(agent_id, task_id)]
                claimed.append((agent_id, task_id, holder))
        return claimed

    async def publish(self, signal: Signal) -> None:
        for queue in self._queues:
            queue.put_nowait(signal)

    async def signals(self) -> AsyncGenerator[Signal, None]:
        queue: asyncio.Queue[Signal | None] = asyncio.Queue()
        self._queues.add(queue)
        try:
            while (signal := await queue.get()) is not None:
                yield signal
        finally:
            self._queues.discard(queue)

    async def close(self) -> None:
        for queue in self._queues:
            queue.put_nowait(None)
