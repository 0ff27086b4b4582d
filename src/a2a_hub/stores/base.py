"""Abstract storage interfaces: tasks, their event logs, push configs.

Every backend (``memory``, ``sql`` for SQLite and PostgreSQL, and ``redis``)
implements :class:`Store`, and one contract test suite runs the same test bodies
against all of them.

Rules every backend keeps:

* Tasks are namespaced by ``agent_id``: a task saved for one agent is not
  found through another.
* ``get``/``read`` of something that does not exist returns ``None`` / ``[]``;
  they never raise for "not found".  Deleting a missing task returns ``False``.
* Values returned are independent copies: mutating them never changes what is
  stored (the memory backend copies on the way in and out to keep that true).
* ``save`` writes the task snapshot and appends its new events in one atomic
  step, so the snapshot is always the fold of the stored log; events that do
  not continue the log raise :class:`LogConflictError` (checked by
  :func:`check_events` / :func:`check_continues`, worded by :func:`log_conflict`).
* A task's owner is recorded by its first save and never changes.
* A backend that cannot reach its server raises
  :class:`~a2a_hub.protocol.errors.StoreUnavailableError`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Concatenate, NamedTuple, ParamSpec, Protocol, TypeVar

import msgspec

from a2a_hub import metrics
from a2a_hub.protocol.errors import InvalidParamsError, StoreUnavailableError
from a2a_hub.protocol.types import (
    Message,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a_hub.stores import outage
from a2a_hub.stores.coordinator import Coordinator, LocalCoordinator

__all__ = [
    "Delivery",
    "DeliverySource",
    "EventLog",
    "LogConflictError",
    "MessageClaim",
    "MessageClaims",
    "MetaStore",
    "PushConfigStore",
    "PushOutbox",
    "Retention",
    "Store",
    "StoredTask",
    "TaskEvent",
    "TaskPage",
    "TaskQuery",
    "TaskStore",
    "check_continues",
    "check_events",
    "decode_page_token",
    "encode_page_token",
    "guarded",
    "log_conflict",
    "page_token_total",
    "unavailable_error",
]


class LogConflictError(ValueError):
    """A save whose events do not continue the stored log: another writer moved it on.

    Raised by every backend's ``save_task`` (the whole save changes nothing);
    a subclass of ``ValueError`` for callers written before it existed.
    """


class TaskEvent(msgspec.Struct, frozen=True):
    """One change to a task: its per-task sequence number (1, 2, 3 …) and payload.

    The payload is a :class:`StreamResponse` with exactly one member set:
    ``task`` (a snapshot; always the first event), ``status_update``,
    ``artifact_update``, or ``message`` — a client message appended to the
    task's history when a conversation continues (not forwarded to streams).
    """

    seq: int
    event: StreamResponse


def log_conflict(task_id: str, first: int, stored: int | None) -> LogConflictError:
    """The error for a save whose events start at ``first`` when the stored log of
    ``task_id`` ends at ``stored`` (``None``: not known, but past ``first``); one wording
    for every backend."""
    where = "its log already holds it" if stored is None else f"the last stored seq is {stored}"
    return LogConflictError(
        f"event seq {first} does not continue the log of task {task_id} ({where}): "
        "another writer moved it on"
    )


def check_events(task_id: str, events: Sequence[TaskEvent]) -> None:
    """Check what a save's events say by themselves: sequence numbers from 1 up, without
    gaps.  Raises :class:`LogConflictError` (the store is not asked)."""
    if not events:
        return
    first = events[0].seq
    if first < 1:
        raise LogConflictError(
            f"event seq {first} of task {task_id} is not positive; sequence numbers start at 1"
        )
    for offset, ev in enumerate(events):
        if ev.seq != first + offset:
            raise LogConflictError(
                f"event seq {ev.seq} of task {task_id} does not follow {first + offset - 1}"
            )


def check_continues(task_id: str, events: Sequence[TaskEvent], last_stored: int) -> None:
    """Check that ``events`` continue a log whose last stored seq is ``last_stored``
    (backends that read it first); raises :class:`LogConflictError`."""
    check_events(task_id, events)
    if events and events[0].seq != last_stored + 1:
        raise log_conflict(task_id, events[0].seq, last_stored)


class Delivery(msgspec.Struct, kw_only=True):
    """One push notification owed to one config: the task's event ``seq`` (or, with
    ``snapshot``, the task as it is when sent, for a config registered on a running task).

    Its identity is ``(agent_id, task_id, config_id, seq, snapshot)``; :attr:`id` is a
    stable id derived from it (the same on every retry and every instance).  A pending
    delivery may be tried from ``due`` (wall-clock seconds); a claimed one has ``due``
    pushed to the end of its lease, so a dead instance's claims come due again.
    """

    agent_id: str
    task_id: str
    config_id: str
    seq: int
    snapshot: bool = False
    attempts: int = 0
    due: float = 0.0
    first_failure: float | None = None
    last_error: str = ""
    dead: bool = False

    @property
    def id(self) -> str:
        """The stable delivery id (``X-A2A-Notification-Id``, the JWT's ``jti``)."""
        return delivery_id(self.agent_id, self.task_id, self.config_id, self.seq, self.snapshot)

    @property
    def order(self) -> tuple[int, bool]:
        """Its place among the deliveries to the same config."""
        return self.seq, self.snapshot


_DELIVERY_NS = uuid.UUID("5f1b3f0c-6c1e-4c55-a3b5-0f6e0b0d2a11")


_DELIVERY_NS_BYTES = _DELIVERY_NS.bytes


def delivery_id(agent_id: str, task_id: str, config_id: str, seq: int, snapshot: bool) -> str:
    """The stable id of a delivery: the UUID version 5 of its identity (what
    ``uuid.uuid5`` gives, computed without building UUID objects: once per send)."""
    kind = "s" if snapshot else "e"
    name = f"{agent_id}\0{task_id}\0{config_id}\0{seq}\0{kind}".encode()
    raw = bytearray(hashlib.sha1(_DELIVERY_NS_BYTES + name, usedforsecurity=False).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x50  # version 5
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class DeliverySource(NamedTuple):
    """What a claimed delivery is sent from: its push ``config`` (``None``: deleted since)
    and, for an event delivery whose config exists, the stored ``event`` at its seq
    (``None`` for a snapshot delivery, without a config, or when the event is gone)."""

    config: TaskPushNotificationConfig | None
    event: StreamResponse | None


class MessageClaim(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the first request carrying a message id made of it (see :class:`MessageClaims`).

    ``task_id`` is the task the message created or continued; ``seq`` the last seq of
    that task's log when the message was claimed (0 for a new task), so its own events
    are those after it.  ``instance`` is the hub instance that runs it and ``created``
    the wall-clock second it was claimed.  ``reply`` is the agent's answer when it
    answered with a message and made no task.
    """

    task_id: str
    seq: int = 0
    instance: str = ""
    created: float = 0.0
    reply: Message | None = None


class StoredTask(NamedTuple):
    """A task as stored: its snapshot, the ``seq`` of the last event folded into it, and
    its ``owner`` (the principal that created it; ``None`` when created anonymously)."""

    task: Task
    seq: int
    owner: str | None = None


class TaskQuery(msgspec.Struct, kw_only=True):
    """Filters and paging of :meth:`TaskStore.list_tasks` (newest first).

    ``page_size`` is at least 1; the engine validates it before asking the store.
    """

    context_id: str | None = None
    state: TaskState | None = None
    updated_after: float | None = None
    #: Only tasks created by this principal (``None``: every owner).
    owner: str | None = None
    page_size: int = 50
    page_token: str | None = None


class TaskPage(msgspec.Struct, kw_only=True):
    """One page of tasks, newest first, and the token of the next page ("" if none)."""

    tasks: list[Task]
    next_page_token: str
    total_size: int


def encode_page_token(updated_at: float, task_id: str, total: int | None = None) -> str:
    """Opaque keyset cursor: the position after the last task of a page (and, when given,
    the ``totalSize`` counted for the first page, which later pages repeat)."""
    raw = msgspec.json.encode(
        [updated_at, task_id] if total is None else [updated_at, task_id, total]
    )
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def page_token_total(token: str) -> int | None:
    """The ``totalSize`` a page token carries, if any (the token is valid: decoded before)."""
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    items = msgspec.json.decode(raw)
    if isinstance(items, list) and len(items) == 3 and isinstance(items[2], int):
        return items[2] if items[2] >= 0 else None
    return None


def decode_page_token(token: str) -> tuple[float, str]:
    """Inverse of :func:`encode_page_token`; a bad token is an invalid param."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        items = msgspec.json.decode(raw, type=list[float | str | int])
        if len(items) not in (2, 3):
            raise ValueError("not a cursor")
        first, task_id = items[0], items[1]
        if isinstance(first, str) or not isinstance(task_id, str):
            raise ValueError("not a cursor")
        updated_at = float(first)
    except (ValueError, msgspec.DecodeError) as exc:
        raise InvalidParamsError(
            "pageToken is not a token this server issued; pass nextPageToken from the "
            "previous ListTasks response, or omit it for the first page"
        ) from exc
    return updated_at, task_id


def unavailable_error(url: str, exc: BaseException) -> StoreUnavailableError:
    """The error for "the store's server cannot be reached", naming the (password-free) URL."""
    cause = getattr(exc, "orig", None) or exc
    detail = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    reason = f"{type(cause).__name__}: {detail}" if detail else type(cause).__name__
    return StoreUnavailableError(f"Task store {url} is unavailable ({reason})")


class _Guardable(Protocol):
    def _unavailable(self, exc: BaseException) -> StoreUnavailableError: ...


_S = TypeVar("_S", bound=_Guardable)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def guarded(
    unreachable: Callable[[BaseException], bool],
) -> Callable[
    [Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]]],
    Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]],
]:
    """Decorate a backend's methods: failures ``unreachable`` says mean "cannot reach the
    server" become :class:`StoreUnavailableError` (through the backend's ``_unavailable``)."""

    def decorate(
        method: Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]],
    ) -> Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]]:
        operation = method.__name__

        @functools.wraps(method)
        async def wrapper(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            record = metrics.enabled()
            start = time.perf_counter()
            try:
                result = await method(self, *args, **kwargs)
            except Exception as exc:
                down = unreachable(exc)
                if record:
                    metrics.store_failed(_backend(self), operation, down)
                if down:
                    error = self._unavailable(exc)
                    outage.failed(self, error.message)
                    raise error from exc
                raise
            if record:
                metrics.store_op(_backend(self), operation, time.perf_counter() - start)
            outage.answered(self)
            return result

        return wrapper

    return decorate


def _backend(store: object) -> str:
    """The ``backend`` label of a store's metrics: its SQL dialect, else its class."""
    return getattr(store, "dialect", None) or type(store).__name__


def now() -> float:
    """Wall-clock seconds, the time base of ``updated_at`` in every backend."""
    return time.time()


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
    ) -> None:
        """Create or replace the snapshot and append ``events`` to its log, atomically.

        ``owner`` is recorded when the task is created (its first save) and never
        changed by later saves.  ``deliveries`` (push notifications of these events)
        enter the outbox in the same atomic write; a delivery already there is kept.

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


class Retention(ABC):
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


class Store(TaskStore, Retention, EventLog, PushConfigStore, PushOutbox, MetaStore, MessageClaims):
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

    async def open(self) -> None:
        """Connect and create the schema if needed.  Called once before use."""

    async def close(self) -> None:
        """Release connections.  The store is not used afterwards."""
