"""What the stores hold and hand back: events, deliveries, claims, task records and pages.

The values every backend stores or returns (:class:`TaskEvent`, :class:`Delivery`,
:class:`MessageClaim`, :class:`StoredTask`, :class:`TaskPage`), the checks of a save's
events and the error they raise (:class:`LogConflictError`), and the opaque page tokens.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from a2a_hub.protocol.errors import InvalidParamsError
from a2a_hub.protocol.types import (
    Message,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

__all__ = [
    "Delivery",
    "DeliverySource",
    "LogConflictError",
    "MessageClaim",
    "StoredTask",
    "TaskEvent",
    "TaskPage",
    "TaskQuery",
    "check_continues",
    "check_events",
    "decode_page_token",
    "delivery_id",
    "encode_page_token",
    "log_conflict",
    "page_token_total",
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
    answered with a message and made no task.  ``digest`` identifies the request that
    claimed it (a hash of its message and options, see
    :func:`a2a_hub.engine.claims.send_digest`): a repeat with another digest is another
    message under the same key, and is refused.  Claims written before digests existed
    have ``""``, which matches every request.  Stores keep it as part of the claim; they
    never compare it.
    """

    task_id: str
    seq: int = 0
    instance: str = ""
    created: float = 0.0
    reply: Message | None = None
    digest: str = ""


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
