"""Every SQL statement of the task store, built once: the fixed ones at import, the
dialect-specific ones (upserts, ``greatest``) per store, in :class:`Statements`.

The concerns of :class:`~.store.SqlStore` (:mod:`.tasks`, :mod:`.push`, :mod:`.claims`)
run them with their parameters; the ``p_*`` bind names are shared between statements.
"""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import (
    Double,
    Integer,
    LargeBinary,
    Select,
    String,
    bindparam,
    delete,
    func,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.sql.elements import ColumnElement

from a2a_hub.protocol.types import TaskPushNotificationConfig
from a2a_hub.stores.base import Delivery, TaskQuery
from a2a_hub.stores.sql.database import dialect_insert
from a2a_hub.stores.sql.schema import (
    events,
    message_claims,
    meta,
    push_configs,
    push_outbox,
    task_counts,
    tasks,
)

__all__ = [
    "CLAIM_ONE",
    "DEAD",
    "DELETE_EVENTS",
    "DELETE_OUTBOX",
    "DELETE_PUSH",
    "DELETE_PUSH_ALL",
    "DELETE_TASK",
    "DUE_HEADS",
    "FINISH",
    "GET_CLAIM",
    "GET_PUSH",
    "GET_TASK",
    "GET_TASK_AT",
    "INSERT_EVENTS",
    "LAST_SEQ",
    "LIST_PUSH",
    "OUTBOX_SIZE",
    "READ_EVENTS",
    "READ_EVENTS_LIMIT",
    "REQUEUE",
    "SET_CLAIM",
    "UPDATE_DELIVERY",
    "Statements",
    "count_statement",
    "delivery_key",
    "delivery_of",
    "delivery_row",
    "push_config_params",
]

_agent = bindparam("p_agent", type_=String)
_task = bindparam("p_task", type_=String)
_task_key = (tasks.c.agent_id == _agent, tasks.c.task_id == _task)
_event_key = (events.c.agent_id == _agent, events.c.task_id == _task)
_push_key = (push_configs.c.agent_id == _agent, push_configs.c.task_id == _task)

GET_TASK = select(tasks.c.data).where(*_task_key)
GET_TASK_AT = select(tasks.c.data, tasks.c.last_seq, tasks.c.owner).where(*_task_key)
READ_EVENTS = (
    select(events.c.seq, events.c.data)
    .where(*_event_key, events.c.seq > bindparam("p_after", type_=Integer))
    .order_by(events.c.seq)
)
READ_EVENTS_LIMIT = READ_EVENTS.limit(bindparam("p_limit", type_=Integer))
LAST_SEQ = select(func.coalesce(func.max(events.c.seq), 0)).where(*_event_key)
INSERT_EVENTS = events.insert()
DELETE_EVENTS = delete(events).where(*_event_key)
DELETE_PUSH_ALL = delete(push_configs).where(*_push_key)
DELETE_TASK = delete(tasks).where(*_task_key)
_config_key = (*_push_key, push_configs.c.config_id == bindparam("p_config", type_=String))
GET_PUSH = select(push_configs.c.data).where(*_config_key)
LIST_PUSH = (
    select(push_configs.c.data)
    .where(*_push_key)
    .order_by(push_configs.c.created, push_configs.c.config_id)
)
DELETE_PUSH = delete(push_configs).where(*_config_key)
#: What the PostgreSQL save function sends for a save with events (a save written
#: outside it, in a transaction of its own, sends it too).
NOTIFY_EVENTS = text("SELECT pg_notify(:p_channel, :p_payload)")
_mc = message_claims.c
_claim_key = (
    _mc.agent_id == _agent,
    _mc.owner == bindparam("p_owner", type_=String),
    _mc.message_id == bindparam("p_message", type_=String),
)
GET_CLAIM = select(_mc.data).where(*_claim_key)
SET_CLAIM = (
    update(message_claims).where(*_claim_key).values(data=bindparam("p_data", type_=LargeBinary))
)


_ob = push_outbox.c
_OUTBOX_COLUMNS = (
    _ob.agent_id,
    _ob.task_id,
    _ob.config_id,
    _ob.seq,
    _ob.snapshot,
    _ob.attempts,
    _ob.due,
    _ob.first_failure,
    _ob.last_error,
    _ob.dead,
)
_ob_key = (
    _ob.agent_id == bindparam("p_agent", type_=String),
    _ob.task_id == bindparam("p_task", type_=String),
    _ob.config_id == bindparam("p_config", type_=String),
    _ob.seq == bindparam("p_seq", type_=Integer),
    _ob.snapshot == bindparam("p_snap", type_=Integer),
)
_earlier = push_outbox.alias("earlier")
# The first pending delivery of each config, when it is due.
DUE_HEADS = (
    select(*_OUTBOX_COLUMNS)
    .where(
        _ob.dead == 0,
        _ob.due <= bindparam("p_now", type_=Double),
        ~select(_earlier.c.seq)
        .where(
            _earlier.c.agent_id == _ob.agent_id,
            _earlier.c.task_id == _ob.task_id,
            _earlier.c.config_id == _ob.config_id,
            _earlier.c.dead == 0,
            tuple_(_earlier.c.seq, _earlier.c.snapshot) < tuple_(_ob.seq, _ob.snapshot),
        )
        .exists(),
    )
    .order_by(_ob.due)
    .limit(bindparam("p_limit", type_=Integer))
)
CLAIM_ONE = update(push_outbox).where(*_ob_key).values(due=bindparam("p_until", type_=Double))
_ob_ident = tuple_(_ob.agent_id, _ob.task_id, _ob.config_id, _ob.seq, _ob.snapshot)


def _claim_deliveries(dialect: str) -> Any:
    """Claim the due heads in one statement (``RETURNING`` them): the conditions are
    checked again on each row as it is updated, so a row another claimant moved
    meanwhile is left out (PostgreSQL also skips rows locked by a concurrent claim)."""
    heads = DUE_HEADS.with_only_columns(*_OUTBOX_COLUMNS[:5])
    if dialect == "postgresql":
        heads = heads.with_for_update(skip_locked=True, of=push_outbox)
    return (
        update(push_outbox)
        .where(
            _ob_ident.in_(heads),
            _ob.dead == 0,
            _ob.due <= bindparam("p_now", type_=Double),
        )
        .values(due=bindparam("p_until", type_=Double))
        .returning(*_OUTBOX_COLUMNS)
    )


FINISH = delete(push_outbox).where(*_ob_key)
DELETE_OUTBOX = delete(push_outbox).where(
    _ob.agent_id == bindparam("p_agent", type_=String),
    _ob.task_id == bindparam("p_task", type_=String),
)
UPDATE_DELIVERY = (
    update(push_outbox)
    .where(*_ob_key)
    .values(
        attempts=bindparam("p_attempts", type_=Integer),
        due=bindparam("p_due", type_=Double),
        first_failure=bindparam("p_first", type_=Double),
        last_error=bindparam("p_error", type_=String),
        dead=bindparam("p_dead", type_=Integer),
    )
)
DEAD = (
    select(*_OUTBOX_COLUMNS)
    .where(_ob.dead == 1)
    .order_by(_ob.due)
    .limit(bindparam("p_limit", type_=Integer))
)
TASK_DELIVERIES = (
    select(*_OUTBOX_COLUMNS)
    .where(_ob.agent_id == bindparam("p_agent"), _ob.task_id == bindparam("p_task"))
    .order_by(_ob.config_id, _ob.seq, _ob.snapshot)
)
OUTBOX_SIZE = select(_ob.dead, func.count()).group_by(_ob.dead)
REQUEUE = (
    update(push_outbox)
    .where(*_ob_key, _ob.dead == 1)
    .values(dead=0, attempts=0, first_failure=None, last_error="", due=bindparam("p_due"))
)


def push_config_params(
    agent_id: str, task_id: str, config: TaskPushNotificationConfig
) -> dict[str, Any]:
    """The parameters of :attr:`Statements.set_push` for ``config`` of a task."""
    return {
        "p_agent": agent_id,
        "p_task": task_id,
        "p_config": config.id or task_id,
        "p_data": msgspec.json.encode(config),
    }


def delivery_row(d: Delivery) -> dict[str, Any]:
    return {
        "agent_id": d.agent_id,
        "task_id": d.task_id,
        "config_id": d.config_id,
        "seq": d.seq,
        "snapshot": int(d.snapshot),
        "attempts": d.attempts,
        "due": d.due,
        "first_failure": d.first_failure,
        "last_error": d.last_error,
        "dead": int(d.dead),
    }


def delivery_key(d: Delivery) -> dict[str, Any]:
    return {
        "p_agent": d.agent_id,
        "p_task": d.task_id,
        "p_config": d.config_id,
        "p_seq": d.seq,
        "p_snap": int(d.snapshot),
    }


def delivery_of(row: Any) -> Delivery:
    agent, task, config, seq, snap, attempts, due, first, error, dead = row
    return Delivery(
        agent_id=agent,
        task_id=task,
        config_id=config,
        seq=int(seq),
        snapshot=bool(snap),
        attempts=int(attempts),
        due=float(due),
        first_failure=None if first is None else float(first),
        last_error=error,
        dead=bool(dead),
    )


_tc = task_counts.c


def count_statement(
    agent_id: str, query: TaskQuery, where: list[ColumnElement[bool]]
) -> Select[Any]:
    """The statement counting the tasks ``query`` lists: by owner and state, a sum of the
    kept counts (a few rows, however many tasks); by context or update time, a count
    with the filters' indexes."""
    if query.context_id is not None or query.updated_after is not None:
        return select(func.count()).select_from(tasks).where(*where)
    counted = [_tc.agent_id == agent_id]
    if query.owner is not None:
        counted.append(_tc.owner == query.owner)
    if query.state is not None:
        counted.append(_tc.state == query.state.value)
    return select(func.coalesce(func.sum(_tc.n), 0)).where(*counted)


class Statements:
    """The dialect-specific statements (upserts and ``greatest``) of one engine."""

    def __init__(self, dialect: str) -> None:
        insert = dialect_insert(dialect)
        greatest = func.greatest if dialect == "postgresql" else func.max

        def newest(new: ColumnElement[float]) -> ColumnElement[float]:
            # updated_at never goes back, even if the wall clock does.
            return greatest(new, tasks.c.updated_at)

        ins = insert(tasks)
        snapshot = {
            "context_id": ins.excluded.context_id,
            "state": ins.excluded.state,
            "data": ins.excluded.data,
            "updated_at": newest(ins.excluded.updated_at),
        }
        # No events: create or replace the snapshot, the log is untouched.
        self.upsert_task = ins.on_conflict_do_update(
            index_elements=[tasks.c.agent_id, tasks.c.task_id], set_=snapshot
        )
        # Events from seq 1: create, or replace a snapshot that has no events yet.
        self.upsert_task_first_events = ins.on_conflict_do_update(
            index_elements=[tasks.c.agent_id, tasks.c.task_id],
            set_={**snapshot, "last_seq": ins.excluded.last_seq},
            where=tasks.c.last_seq == 0,
        )
        # Events after seq N > 0: the task must exist with last_seq == N.
        self.update_task_events = (
            update(tasks)
            .where(*_task_key, tasks.c.last_seq == bindparam("p_prev", type_=Integer))
            .values(
                context_id=bindparam("p_context", type_=String),
                state=bindparam("p_state", type_=String),
                data=bindparam("p_data", type_=LargeBinary),
                updated_at=newest(bindparam("p_updated", type_=Double)),
                last_seq=bindparam("p_last", type_=Integer),
            )
        )
        # A push config is written only if its task is there (no foreign key since v10):
        # the row comes from the task's, which PostgreSQL locks against a concurrent
        # delete (FOR KEY SHARE: the delete waits, then deletes this config too, or this
        # finds the task gone and writes nothing); SQLite has one writer at a time.
        of_task = select(
            _agent,
            _task,
            bindparam("p_config", type_=String),
            select(func.coalesce(func.max(push_configs.c.created), 0) + 1)
            .where(*_push_key)
            .scalar_subquery(),
            bindparam("p_data", type_=LargeBinary),
        ).where(*_task_key)
        if dialect == "postgresql":
            of_task = of_task.with_for_update(key_share=True, read=True, of=tasks)
        push_ins = insert(push_configs).from_select(
            ["agent_id", "task_id", "config_id", "created", "data"], of_task
        )
        self.claim_deliveries = _claim_deliveries(dialect)
        self.add_meta = insert(meta).on_conflict_do_nothing()
        self.add_claim = insert(message_claims).on_conflict_do_nothing()
        # A delivery already queued (or dead) is kept as it is.
        self.add_delivery = insert(push_outbox).on_conflict_do_nothing()
        self.set_push = push_ins.on_conflict_do_update(
            index_elements=[
                push_configs.c.agent_id,
                push_configs.c.task_id,
                push_configs.c.config_id,
            ],
            set_={"data": push_ins.excluded.data},
        )
