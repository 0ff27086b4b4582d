"""Abstract storage interfaces: tasks, their event logs, push configs and their outbox,
message claims, named values, expiry.

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

This module is the one place to import them from; they live by concern in
:mod:`.records` (the values stored and returned), :mod:`.interfaces` (the abstract
interfaces and :class:`Store`) and :mod:`.guard` (store outages).
"""

from __future__ import annotations

from a2a_hub.stores.guard import guarded, now, unavailable_error
from a2a_hub.stores.interfaces import (
    EventLog,
    ExpiringTasks,
    MessageClaims,
    MetaStore,
    PushConfigStore,
    PushOutbox,
    Store,
    TaskStore,
)
from a2a_hub.stores.records import (
    Delivery,
    DeliverySource,
    LogConflictError,
    MessageClaim,
    StoredTask,
    TaskEvent,
    TaskPage,
    TaskQuery,
    check_continues,
    check_events,
    decode_page_token,
    delivery_id,
    encode_page_token,
    log_conflict,
    page_token_total,
)

__all__ = [
    "Delivery",
    "DeliverySource",
    "EventLog",
    "ExpiringTasks",
    "LogConflictError",
    "MessageClaim",
    "MessageClaims",
    "MetaStore",
    "PushConfigStore",
    "PushOutbox",
    "Store",
    "StoredTask",
    "TaskEvent",
    "TaskPage",
    "TaskQuery",
    "TaskStore",
    "check_continues",
    "check_events",
    "decode_page_token",
    "delivery_id",
    "encode_page_token",
    "guarded",
    "log_conflict",
    "now",
    "page_token_total",
    "unavailable_error",
]
