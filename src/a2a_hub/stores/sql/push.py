"""Push notification configs and the push outbox in SQL.

Outbox writes run as plans: on SQLite in the writer thread's next batch (so the push
dispatcher never waits for the lock a batch of saves holds), else in one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import msgspec
from sqlalchemy import and_, or_, select

from a2a_hub.protocol.errors import TaskNotFoundError
from a2a_hub.protocol.types import StreamResponse, TaskPushNotificationConfig
from a2a_hub.stores.base import Delivery, DeliverySource
from a2a_hub.stores.sql.base import Plan, SqlBase, sql_guarded
from a2a_hub.stores.sql.schema import events, push_configs
from a2a_hub.stores.sql.statements import (
    CLAIM_ONE,
    DEAD,
    DELETE_PUSH,
    DUE_HEADS,
    FINISH,
    GET_PUSH,
    LIST_PUSH,
    OUTBOX_SIZE,
    REQUEUE,
    TASK_DELIVERIES,
    UPDATE_DELIVERY,
    delivery_key,
    delivery_of,
    delivery_row,
    push_config_params,
)

__all__ = ["SqlPush"]

_enc = msgspec.json.Encoder()
_event_dec = msgspec.json.Decoder(StreamResponse)
_push_dec = msgspec.json.Decoder(TaskPushNotificationConfig)


class SqlPush(SqlBase):
    """Push configs (:class:`~a2a_hub.stores.base.PushConfigStore`) and the outbox
    (:class:`~a2a_hub.stores.base.PushOutbox`)."""

    @sql_guarded
    async def add_deliveries(self, deliveries: Sequence[Delivery]) -> None:
        if deliveries:
            await self._write_plan(self._add_plan(deliveries))

    def _add_plan(self, deliveries: Sequence[Delivery]) -> Plan:
        yield self._stmts.add_delivery, [delivery_row(d) for d in deliveries]

    @sql_guarded
    async def claim_deliveries(
        self, limit: int, lease: float, now: float | None = None
    ) -> list[Delivery]:
        at = time.time() if now is None else now
        params = {"p_now": at, "p_until": at + lease, "p_limit": limit}
        rows = await self._write_plan(self._claim_deliveries_plan(params))
        return sorted((delivery_of(r) for r in rows), key=lambda d: d.due)

    def _claim_deliveries_plan(self, params: dict[str, Any]) -> Plan:
        if self._dialect == "postgresql":
            result = yield self._stmts.claim_deliveries, params
            return list(result.all())
        # SQLite: the transaction holds the database's write lock from its start, so
        # reading the heads and then moving each by its key is atomic (and each update is
        # a primary-key lookup, where one UPDATE … IN (…) walks every due row).
        heads = list((yield DUE_HEADS, params).all())
        if heads:
            until = params["p_until"]
            yield CLAIM_ONE, [{**delivery_key(delivery_of(r)), "p_until": until} for r in heads]
        return [(*row[:6], params["p_until"], *row[7:]) for row in heads]

    @sql_guarded
    async def finish_delivery(self, delivery: Delivery) -> None:
        await self._write_plan(self._settle_plan([delivery], ()))

    @sql_guarded
    async def update_delivery(self, delivery: Delivery) -> None:
        await self._write_plan(self._settle_plan((), [delivery]))

    @sql_guarded
    async def settle_deliveries(
        self, finished: Sequence[Delivery] = (), updated: Sequence[Delivery] = ()
    ) -> None:
        if finished or updated:
            await self._write_plan(self._settle_plan(finished, updated))

    def _settle_plan(self, finished: Sequence[Delivery], updated: Sequence[Delivery]) -> Plan:
        if finished:
            yield FINISH, [delivery_key(d) for d in finished]
        if updated:
            rows = [
                {
                    **delivery_key(d),
                    "p_attempts": d.attempts,
                    "p_due": d.due,
                    "p_first": d.first_failure,
                    "p_error": d.last_error,
                    "p_dead": int(d.dead),
                }
                for d in updated
            ]
            yield UPDATE_DELIVERY, rows

    @sql_guarded
    async def delivery_sources(self, deliveries: Sequence[Delivery]) -> list[DeliverySource]:
        if not deliveries:
            return []
        pc, ec = push_configs.c, events.c
        # Per agent, its tasks (and the seqs wanted): "IN" lists an index can serve on
        # SQLite and PostgreSQL alike (a row-value IN list makes SQLite scan the table);
        # the rows beyond those asked for are dropped below.
        tasks_of: dict[str, set[str]] = {}
        seqs_of: dict[str, set[int]] = {}
        for d in deliveries:
            tasks_of.setdefault(d.agent_id, set()).add(d.task_id)
            if not d.snapshot:
                seqs_of.setdefault(d.agent_id, set()).add(d.seq)
        config_where = or_(
            *(and_(pc.agent_id == a, pc.task_id.in_(ts)) for a, ts in tasks_of.items())
        )
        event_where = or_(
            *(
                and_(ec.agent_id == a, ec.task_id.in_(tasks_of[a]), ec.seq.in_(seqs))
                for a, seqs in seqs_of.items()
            )
        )
        async with self._read() as conn:
            config_rows = (
                await conn.execute(
                    select(pc.agent_id, pc.task_id, pc.config_id, pc.data).where(config_where)
                )
            ).all()
            event_rows: Sequence[Any] = ()
            if seqs_of:
                event_rows = (
                    await conn.execute(
                        select(ec.agent_id, ec.task_id, ec.seq, ec.data).where(event_where)
                    )
                ).all()
        configs = {(a, t, c): _push_dec.decode(data) for a, t, c, data in config_rows}
        found = {(a, t, int(seq)): data for a, t, seq, data in event_rows}
        out = []
        for d in deliveries:
            config = configs.get((d.agent_id, d.task_id, d.config_id))
            data = None
            if config is not None and not d.snapshot:
                data = found.get((d.agent_id, d.task_id, d.seq))
            out.append(DeliverySource(config, None if data is None else _event_dec.decode(data)))
        return out

    @sql_guarded
    async def dead_deliveries(self, limit: int = 1000) -> list[Delivery]:
        async with self._read() as conn:
            rows = (await conn.execute(DEAD, {"p_limit": limit})).all()
        return [delivery_of(r) for r in rows]

    @sql_guarded
    async def task_deliveries(self, agent_id: str, task_id: str) -> list[Delivery]:
        async with self._read() as conn:
            params = {"p_agent": agent_id, "p_task": task_id}
            rows = (await conn.execute(TASK_DELIVERIES, params)).all()
        return [delivery_of(r) for r in rows]

    @sql_guarded
    async def outbox_size(self) -> tuple[int, int]:
        async with self._read() as conn:
            rows = (await conn.execute(OUTBOX_SIZE)).all()
        counts = {bool(dead): int(n) for dead, n in rows}
        return counts.get(False, 0), counts.get(True, 0)

    @sql_guarded
    async def requeue_deliveries(self, ids: Sequence[str] | None = None) -> int:
        wanted = None if ids is None else set(ids)
        count = 0
        at = time.time()
        async with self.engine.begin() as conn:
            rows = (await conn.execute(DEAD, {"p_limit": 1_000_000})).all()
            for row in rows:
                d = delivery_of(row)
                if wanted is None or d.id in wanted:
                    await conn.execute(REQUEUE, {**delivery_key(d), "p_due": at})
                    count += 1
        return count

    @sql_guarded
    async def set_push_config(
        self, agent_id: str, task_id: str, config: TaskPushNotificationConfig
    ) -> None:
        params = push_config_params(agent_id, task_id, config)
        async with self.engine.begin() as conn:
            result = await conn.execute(self._stmts.set_push, params)
        if result.rowcount != 1:  # written only while the task is there
            raise TaskNotFoundError(f"Task {task_id} not found")

    @sql_guarded
    async def get_push_config(
        self, agent_id: str, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        params = {"p_agent": agent_id, "p_task": task_id, "p_config": config_id}
        async with self._read() as conn:
            data = (await conn.execute(GET_PUSH, params)).scalar_one_or_none()
        return None if data is None else _push_dec.decode(data)

    @sql_guarded
    async def list_push_configs(
        self, agent_id: str, task_id: str
    ) -> list[TaskPushNotificationConfig]:
        async with self._read() as conn:
            blobs = (
                await conn.execute(LIST_PUSH, {"p_agent": agent_id, "p_task": task_id})
            ).scalars()
            return [_push_dec.decode(b) for b in blobs]

    @sql_guarded
    async def delete_push_config(self, agent_id: str, task_id: str, config_id: str) -> bool:
        params = {"p_agent": agent_id, "p_task": task_id, "p_config": config_id}
        async with self.engine.begin() as conn:
            result = await conn.execute(DELETE_PUSH, params)
        return result.rowcount > 0
