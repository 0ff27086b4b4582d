"""The abstract store interfaces, one per concern, and :class:`Store`, which joins them.

The rules every backend keeps are in :mod:`a2a_hub.stores.base`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from a2a_hub.protocol.types import Task, TaskPushNotificationConfig
from a2a_hub.stores.coordinator import Coordinator, LocalCoordinator
from a2a_hub.stores.records import (
    Delivery,
    DeliverySource,
    MessageClaim,
    StoredTask,
    TaskEvent,
    TaskPage,
    TaskQuery,
)

__all__ = [
    "EventLog",
    "ExpiringTasks",
    "MessageClaims",
    "MetaStore",
    "PushConfigStore",
    "PushOutbox",
    "Store",
    "TaskStore",
]


class TaskStore(ABC):
    """Task snapshots: get, save (with events), list with filters and paging, delete."""

    @abstractmethod
    async def get_task(self, agent_id: str, task_id: str) -> Task | None:
        """The task's latest snapshot, or ``None`` if there is no such task."""

    @abstractmethod
    async def get_task_record(self, agent_id: str, task_id: str) -> StoredTask | None:
        """The snapshot, the ``seq`` of the last event folded into it and the owner,
        read atomically."""

    async def get_task_at(self, agent_id: str, task_id: str) -> tuple[Task, int] | None:
        """The snapshot and the ``seq`` of the last event folded into it, read atomically."""
        record = await self.get_task_record(agent_id, task_id)
        return None if record is None else (record.task, record.seq)

    @abstractmethod
    async def save_task(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent] = (),
        *,
        owner: str | None = None,
        deliveries: Sequence[Delivery] = (),
        push_configs: Sequence[TaskPushNotificationConfig] = (),
    ) -> None:
        """Create or replace the snapshot and append ``events`` to its log, atomically.

        ``owner`` is recorded when the task is created (its first save) and never
        changed by later saves.  ``deliveries`` (push notifications of these events)
        enter the outbox in the same atomic write; a delivery already there is kept.
        ``push_configs`` (each with its ``id``) are created or replaced in the same
        write, as :meth:`PushConfigStore.set_push_config` would (a config given with the
        message that creates the task is stored with it, in its first save).

        ``events`` must continue the log: their ``seq`` values follow the last
        stored one without gaps.  Events that do not (a gap, a duplicate: another
        writer moved the log on) raise :class:`LogConflictError` and the whole save
        changes nothing.
        """

    @abstractmethod
    async def list_tasks(self, agent_id: str, query: TaskQuery) -> TaskPage:
        """Tasks of one agent matching ``query``, most recently updated first."""

    @abstractmethod
    async def delete_task(self, agent_id: str, task_id: str) -> bool:
        """Remove the task, its events and push configs; ``False`` if it did not exist."""


class ExpiringTasks(ABC):
    """Removing old finished tasks (``task_ttl``)."""

    @abstractmethod
    async def expired_tasks(self, agent_id: str, before: float, limit: int) -> list[str]:
        """Ids of up to ``limit`` terminal tasks of ``agent_id`` last updated before
        ``before`` (epoch seconds), oldest first."""

    async def purge_expired(self, agent_id: str, before: float, limit: int = 100) -> int:
        """Remove up to ``limit`` terminal tasks last updated before ``before``, with
        their event logs and push configs; returns how many went (less than ``limit``:
        none are left)."""
        removed = 0
        for task_id in await self.expired_tasks(agent_id, before, limit):
            if await self.delete_task(agent_id, task_id):
                removed += 1
        return removed

    @abstractmethod
    async def delete_task(self, agent_id: str, task_id: str) -> bool:
        """Remove a task, its events and push configs; False if there was none."""


class EventLog(ABC):
    """Per-task event logs, read from any sequence number."""

    @abstractmethod
    async def read_events(
        self, agent_id: str, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[TaskEvent]:
        """Events with ``seq > after`` in order (at most ``limit``); ``[]`` if none."""

    @abstractmethod
    async def last_seq(self, agent_id: str, task_id: str) -> int:
        """The highest stored sequence number of the task, 0 if it has no events."""


class PushConfigStore(ABC):
    """Push notification configs, several per task, keyed by config id."""

    @abstractmethod
    async def set_push_config(
        self, agent_id: str, task_id: str, config: TaskPushNotificationConfig
    ) -> None:
        """Create or replace the config with ``config.id`` for the task.

        Raises :class:`TaskNotFoundError` if the task does not exist.
        """

    @abstractmethod
    async def get_push_config(
        self, agent_id: str, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        """One config, or ``None``."""

    @abstractmethod
    async def list_push_configs(
        self, agent_id: str, task_id: str
    ) -> list[TaskPushNotificationConfig]:
        """Every config of the task, in creation order."""

    @abstractmethod
    async def delete_push_config(self, agent_id: str, task_id: str, config_id: str) -> bool:
        """Remove one config; ``False`` if it did not exist."""


class PushOutbox(ABC):
    """Push notifications owed, until sent (then removed) or given up (then kept as dead).

    Deliveries enter with the events they announce (``save_task(deliveries=…)``) or
    through :meth:`add_deliveries`.  :meth:`claim_deliveries` hands each due delivery
    to one claimant at a time, and only the first pending delivery of each config
    (its ``order``), so that one config's notifications go out in order while other
    configs go on.  A claim lasts ``lease`` seconds: the claimant finishes the
    delivery, or reschedules it, before then, or another instance takes it over.
    """

    @abstractmethod
    async def add_deliveries(self, deliveries: Sequence[Delivery]) -> None:
        """Queue deliveries (one already queued or dead is kept as it is)."""

    @abstractmethod
    async def claim_deliveries(
        self, limit: int, lease: float, now: float | None = None
    ) -> list[Delivery]:
        """Claim up to ``limit`` due deliveries, each the first pending one of its config,
        for ``lease`` seconds; no two calls get the same delivery while its lease runs."""

    @abstractmethod
    async def finish_delivery(self, delivery: Delivery) -> None:
        """Remove a delivery (sent, or no longer wanted)."""

    @abstractmethod
    async def update_delivery(self, delivery: Delivery) -> None:
        """Store a claimed delivery's new ``attempts``, ``due``, error and ``dead`` flag
        (which ends the claim); a dead delivery no longer holds back its config."""

    async def settle_deliveries(
        self, finished: Sequence[Delivery] = (), updated: Sequence[Delivery] = ()
    ) -> None:
        """:meth:`finish_delivery` each of ``finished`` and :meth:`update_delivery` each of
        ``updated``; backends write a dispatcher round's outcomes in one step."""
        for d in finished:
            await self.finish_delivery(d)
        for d in updated:
            await self.update_delivery(d)

    @abstractmethod
    async def dead_deliveries(self, limit: int = 1000) -> list[Delivery]:
        """The deliveries that gave up, oldest due first."""

    @abstractmethod
    async def task_deliveries(self, agent_id: str, task_id: str) -> list[Delivery]:
        """The deliveries of one task still in the outbox, pending or dead, in the order of
        their config and sequence (sent ones are gone: the outbox keeps no history)."""

    @abstractmethod
    async def outbox_size(self) -> tuple[int, int]:
        """How many deliveries are pending (queued, due or claimed) and how many are dead."""

    @abstractmethod
    async def requeue_deliveries(self, ids: Sequence[str] | None = None) -> int:
        """Queue dead deliveries again (those with these :attr:`Delivery.id`, or all), due
        now with no attempts; returns how many."""


class MessageClaims(ABC):
    """Idempotent sends: each message id of a caller is run once per agent.

    A claim is keyed by ``(agent_id, owner, message_id)`` (``owner`` ``None``: anonymous
    callers, who share one scope).  It is written before the agent starts; a later
    request with the same key finds it and follows what the first one produced instead
    of running the agent again.
    """

    @abstractmethod
    async def claim_message(
        self, agent_id: str, owner: str | None, message_id: str, claim: MessageClaim
    ) -> MessageClaim | None:
        """Record ``claim`` unless the key already has one, atomically: ``None`` when it
        was recorded, else the claim already there (left unchanged).

        A ``claim`` carrying a ``reply`` completes the claim of the same ``task_id`` that
        has no reply yet (then ``None``); a claim of another task, or one that already
        has a reply, is returned unchanged.
        """

    @abstractmethod
    async def purge_claims(self, agent_id: str, before: float, limit: int = 100) -> int:
        """Remove up to ``limit`` claims of ``agent_id`` made before ``before`` (epoch
        seconds); returns how many went (less than ``limit``: none are left).  A backend
        whose claims expire by themselves (Redis: ``task_ttl`` after they were made)
        removes none here."""


class MetaStore(ABC):
    """Small named values the hub's instances share (the push signing keys), changed by
    compare-and-swap so that instances changing one at once never lose a change."""

    @abstractmethod
    async def get_meta(self, name: str) -> bytes | None:
        """The value, or ``None`` if there is none."""

    @abstractmethod
    async def swap_meta(self, name: str, expected: bytes | None, value: bytes) -> bool:
        """Set ``value`` if the stored value is ``expected`` (``None``: absent); returns
        whether it was set."""


class Store(
    TaskStore, ExpiringTasks, EventLog, PushConfigStore, PushOutbox, MetaStore, MessageClaims
):
    """A complete backend: all seven interfaces plus a lifecycle."""

    url: str = ""
    _coordinator: Coordinator | None = None

    def coordinator(self) -> Coordinator:
        """Leases and signals for the instances sharing this store (in-process by default)."""
        if self._coordinator is None:
            self._coordinator = self._make_coordinator()
        return self._coordinator

    def _make_coordinator(self) -> Coordinator:
        return LocalCoordinator()

    async def delivery_sources(self, deliveries: Sequence[Delivery]) -> list[DeliverySource]:
        """For each delivery (in order), its config and stored event; backends read them
        for a whole dispatcher round at once."""
        out = []
        for d in deliveries:
            config = await self.get_push_config(d.agent_id, d.task_id, d.config_id)
            event = None
            if config is not None and not d.snapshot:
                found = await self.read_events(d.agent_id, d.task_id, after=d.seq - 1, limit=1)
                if found and found[0].seq == d.seq:
                    event = found[0].event
            out.append(DeliverySource(config, event))
        return out

    async def orphaned_at_start(self) -> list[tuple[str, str]]:
        """``(agent_id, task_id)`` of the tasks a dead process left submitted or working,
        for a store served by one process at a time (a SQLite file): its leases lived in
        that process, so no reaper ever sees them lapse; the cluster fails them at start.
        Stores shared by instances (Redis, PostgreSQL) keep leases that lapse instead, and
        answer nothing here (the default)."""
        return []

    async def open(self) -> None:
        """Connect and create the schema if needed.  Called once before use."""

    async def close(self) -> None:
        """Release connections.  The store is not used afterwards."""
