"""Tasks and their event logs in SQL: get, save (with events and deliveries, group
committed), list, expire, delete; read the log from a sequence number.

``a2a_tasks.last_seq`` mirrors the highest event ``seq`` of the task, so that a save
checks that its events continue the log with a conditional write instead of an extra read.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import msgspec
from sqlalchemy import exc as sa_exc
from sqlalchemy import select, tuple_
from sqlalchemy.sql.elements import ColumnElement

from a2a_hub.protocol.types import StreamResponse, Task, TaskPushNotificationConfig, TaskState
from a2a_hub.stores.base import (
    Delivery,
    StoredTask,
    TaskEvent,
    TaskPage,
    TaskQuery,
    check_events,
    decode_page_token,
    encode_page_token,
    log_conflict,
    now,
    page_token_total,
)
from a2a_hub.stores.sql.base import SqlBase, drive, sql_guarded
from a2a_hub.stores.sql.schema import EVENTS_CHANNEL, tasks
from a2a_hub.stores.sql.sqlite_writer import SqliteWriter
from a2a_hub.stores.sql.statements import (
    DELETE_EVENTS,
    DELETE_OUTBOX,
    DELETE_PUSH_ALL,
    DELETE_TASK,
    GET_TASK,
    GET_TASK_AT,
    INSERT_EVENTS,
    LAST_SEQ,
    NOTIFY_EVENTS,
    READ_EVENTS,
    READ_EVENTS_LIMIT,
    count_statement,
    delivery_row,
    push_config_params,
)

__all__ = ["SqlTasks"]

_enc = msgspec.json.Encoder()
_task_dec = msgspec.json.Decoder(Task)
_event_dec = msgspec.json.Decoder(StreamResponse)

_ENDED = sorted(state.value for state in TaskState if state.terminal)


class SqlTasks(SqlBase):
    """Task snapshots (:class:`~a2a_hub.stores.base.TaskStore`, expiry) and event logs."""

    @sql_guarded
    async def get_task(self, agent_id: str, task_id: str) -> Task | None:
        async with self._read() as conn:
            data = (
                await conn.execute(GET_TASK, {"p_agent": agent_id, "p_task": task_id})
            ).scalar_one_or_none()
        return None if data is None else _task_dec.decode(data)

    @sql_guarded
    async def get_task_record(self, agent_id: str, task_id: str) -> StoredTask | None:
        async with self._read() as conn:
            row = (
                await conn.execute(GET_TASK_AT, {"p_agent": agent_id, "p_task": task_id})
            ).one_or_none()
        return None if row is None else StoredTask(_task_dec.decode(row[0]), int(row[1]), row[2])

    @sql_guarded
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
        writer = self._writer
        if push_configs:  # a task's first save with its config: a transaction of its own
            plan = self._save_plan(agent_id, task, events, owner, deliveries, push_configs)
            await self._write_plan(plan)
            return
        if isinstance(writer, SqliteWriter):
            self._check_file()
            await writer.save(agent_id, task, events, owner, deliveries)
            return
        if writer is not None:  # PostgreSQL group commit
            await writer.save(agent_id, task, events, owner, deliveries)
            return
        async with self.engine.begin() as conn:  # SQLite in memory
            await drive(conn, self._save_plan(agent_id, task, events, owner, deliveries))

    def _save_plan(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent],
        owner: str | None,
        deliveries: Sequence[Delivery] = (),
        push_configs: Sequence[TaskPushNotificationConfig] = (),
    ) -> Generator[tuple[Any, Any], Any, None]:
        """The statements of one save, for the async and the sync (SQLite writer) drivers.

        It yields ``(statement, params)`` and receives each result; an IntegrityError of
        a statement is thrown back into it.  On PostgreSQL (a save with push configs,
        outside the group commit's function) it sends the function's NOTIFY itself.
        """
        data = _enc.encode(task)
        stamp = now()
        state = task.status.state.value
        stmts = self._stmts
        row = {
            "agent_id": agent_id,
            "task_id": task.id,
            "context_id": task.context_id,
            "state": state,
            "updated_at": stamp,
            "data": data,
            "owner": owner,  # only inserted: an existing task keeps its owner
        }
        if not events:
            yield stmts.upsert_task, {**row, "last_seq": 0}
            if deliveries:
                yield stmts.add_delivery, [delivery_row(d) for d in deliveries]
            yield from self._configs_plan(agent_id, task.id, push_configs)
            return
        check_events(task.id, events)
        prev, last = events[0].seq - 1, events[-1].seq
        if prev == 0:
            result = yield stmts.upsert_task_first_events, {**row, "last_seq": last}
        else:
            result = yield (
                stmts.update_task_events,
                {
                    "p_agent": agent_id,
                    "p_task": task.id,
                    "p_prev": prev,
                    "p_context": task.context_id,
                    "p_state": state,
                    "p_data": data,
                    "p_updated": stamp,
                    "p_last": last,
                },
            )
        if result.rowcount != 1:
            stored = (yield LAST_SEQ, {"p_agent": agent_id, "p_task": task.id}).scalar_one()
            raise log_conflict(task.id, prev + 1, stored)
        rows = [
            {"agent_id": agent_id, "task_id": task.id, "seq": e.seq, "data": _enc.encode(e.event)}
            for e in events
        ]
        try:
            yield INSERT_EVENTS, rows[0] if len(rows) == 1 else rows
        except sa_exc.IntegrityError as exc:  # a concurrent writer took these seqs
            raise log_conflict(task.id, prev + 1, None) from exc
        if deliveries:
            yield stmts.add_delivery, [delivery_row(d) for d in deliveries]
        yield from self._configs_plan(agent_id, task.id, push_configs)
        if push_configs and self._dialect == "postgresql":
            payload = f"{agent_id} {task.id} {last}"
            yield NOTIFY_EVENTS, {"p_channel": EVENTS_CHANNEL, "p_payload": payload}

    def _configs_plan(
        self, agent_id: str, task_id: str, configs: Sequence[TaskPushNotificationConfig]
    ) -> Generator[tuple[Any, Any], Any, None]:
        """Create or replace push configs of a task written earlier in the same plan."""
        for config in configs:
            yield self._stmts.set_push, push_config_params(agent_id, task_id, config)

    @sql_guarded
    async def list_tasks(self, agent_id: str, query: TaskQuery) -> TaskPage:
        where: list[ColumnElement[bool]] = [tasks.c.agent_id == agent_id]
        if query.owner is not None:
            where.append(tasks.c.owner == query.owner)
        if query.context_id is not None:
            where.append(tasks.c.context_id == query.context_id)
        if query.state is not None:
            where.append(tasks.c.state == query.state.value)
        if query.updated_after is not None:
            where.append(tasks.c.updated_at >= query.updated_after)
        page_where = list(where)
        total: int | None = None
        if query.page_token:
            cursor = decode_page_token(query.page_token)
            page_where.append(tuple_(tasks.c.updated_at, tasks.c.task_id) < cursor)
            total = page_token_total(query.page_token)
        size = max(query.page_size, 0)
        stmt = (
            select(tasks.c.updated_at, tasks.c.task_id, tasks.c.data)
            .where(*page_where)
            .order_by(tasks.c.updated_at.desc(), tasks.c.task_id.desc())
            .limit(size + 1)  # one more row tells whether there is a next page
        )
        async with self._read() as conn:
            rows = (await conn.execute(stmt)).all()
            more = len(rows) > size
            if total is None and not more and not query.page_token:
                total = len(rows)  # the whole result is on this page
            elif total is None:
                # counted once, for the first page; the page token carries it to the later
                # pages, which repeat it
                counted = await conn.execute(count_statement(agent_id, query, where))
                total = int(counted.scalar_one())
        page = rows[:size]
        token = encode_page_token(page[-1][0], page[-1][1], total) if page and more else ""
        return TaskPage(
            tasks=[_task_dec.decode(r[2]) for r in page], next_page_token=token, total_size=total
        )

    @sql_guarded
    async def expired_tasks(self, agent_id: str, before: float, limit: int) -> list[str]:
        stmt = (
            select(tasks.c.task_id)
            .where(
                tasks.c.agent_id == agent_id,
                tasks.c.updated_at < before,
                tasks.c.state.in_(_ENDED),
            )
            .order_by(tasks.c.updated_at)
            .limit(limit)
        )
        async with self._read() as conn:
            return list((await conn.execute(stmt)).scalars())

    @sql_guarded
    async def delete_task(self, agent_id: str, task_id: str) -> bool:
        params = {"p_agent": agent_id, "p_task": task_id}
        # The task first: on PostgreSQL its delete waits for a save or a push config
        # write in flight on it (they lock its row), and each statement after it sees
        # what they committed; no foreign key cascades (schema v10).
        async with self.engine.begin() as conn:
            result = await conn.execute(DELETE_TASK, params)
            await conn.execute(DELETE_EVENTS, params)
            await conn.execute(DELETE_PUSH_ALL, params)
            await conn.execute(DELETE_OUTBOX, params)
        return result.rowcount > 0

    # --- events ------------------------------------------------------------------------

    @sql_guarded
    async def read_events(
        self, agent_id: str, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[TaskEvent]:
        params: dict[str, Any] = {"p_agent": agent_id, "p_task": task_id, "p_after": after}
        stmt = READ_EVENTS
        if limit is not None:
            if limit <= 0:
                return []
            stmt, params["p_limit"] = READ_EVENTS_LIMIT, limit
        async with self._read() as conn:
            rows = (await conn.execute(stmt, params)).all()
        return [TaskEvent(seq=seq, event=_event_dec.decode(data)) for seq, data in rows]

    @sql_guarded
    async def last_seq(self, agent_id: str, task_id: str) -> int:
        async with self._read() as conn:
            value = (
                await conn.execute(LAST_SEQ, {"p_agent": agent_id, "p_task": task_id})
            ).scalar_one()
        return int(value)
