"""Message claims (idempotent sends) and the shared named values in SQL."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import msgspec
from sqlalchemy import delete, select, update

from a2a_hub.stores.base import MessageClaim, now
from a2a_hub.stores.sql.base import SqlBase, drive, sql_guarded
from a2a_hub.stores.sql.schema import message_claims, meta
from a2a_hub.stores.sql.sqlite_writer import SqliteWriter
from a2a_hub.stores.sql.statements import GET_CLAIM, SET_CLAIM

__all__ = ["SqlClaims"]

_enc = msgspec.json.Encoder()
_claim_dec = msgspec.json.Decoder(MessageClaim)
_mc = message_claims.c


class SqlClaims(SqlBase):
    """Message claims (:class:`~a2a_hub.stores.base.MessageClaims`) and the named values
    (:class:`~a2a_hub.stores.base.MetaStore`)."""

    @sql_guarded
    async def claim_message(
        self, agent_id: str, owner: str | None, message_id: str, claim: MessageClaim
    ) -> MessageClaim | None:
        created = claim.created or now()
        writer = self._writer
        if writer is None or isinstance(writer, SqliteWriter):
            steps = self._claim_plan(agent_id, owner or "", message_id, created, claim)
            if writer is not None:
                self._check_file()
                found: bytes | None = await writer.run(steps)
            else:
                async with self.engine.begin() as conn:
                    found = await drive(conn, steps)
        else:  # PostgreSQL: in the next batch of claims, one function call
            found = await writer.claim(
                agent_id, owner or "", message_id, created, _enc.encode(claim), claim
            )
        return None if found is None else _claim_dec.decode(found)

    def _claim_plan(
        self, agent_id: str, owner: str, message_id: str, created: float, claim: MessageClaim
    ) -> Generator[tuple[Any, Any], Any, bytes | None]:
        """The statements of one claim (the writer thread's or a connection's); returns
        the claim already there (encoded) when ``claim`` was not recorded."""
        key = {"p_agent": agent_id, "p_owner": owner, "p_message": message_id}
        data = _enc.encode(claim)
        if claim.reply is None:
            row = {
                "agent_id": agent_id,
                "owner": owner,
                "message_id": message_id,
                "created_at": created,
                "data": data,
            }
            if (yield self._stmts.add_claim, row).rowcount == 1:
                return None
            found: bytes | None = (yield GET_CLAIM, key).scalar_one_or_none()
            return found
        found = (yield GET_CLAIM, key).scalar_one_or_none()
        if found is None:
            return None
        held = _claim_dec.decode(found)
        if held.reply is not None or held.task_id != claim.task_id:
            return found
        yield SET_CLAIM, {**key, "p_data": data}
        return None

    @sql_guarded
    async def purge_claims(self, agent_id: str, before: float, limit: int = 100) -> int:
        old = (
            select(_mc.owner, _mc.message_id)
            .where(_mc.agent_id == agent_id, _mc.created_at < before)
            .order_by(_mc.created_at)
            .limit(limit)
        )
        async with self.engine.begin() as conn:
            keys = (await conn.execute(old)).all()
            for owner, message_id in keys:
                await conn.execute(
                    delete(message_claims).where(
                        _mc.agent_id == agent_id, _mc.owner == owner, _mc.message_id == message_id
                    )
                )
        return len(keys)

    @sql_guarded
    async def get_meta(self, name: str) -> bytes | None:
        async with self._read() as conn:
            value = (
                await conn.execute(select(meta.c.value).where(meta.c.name == name))
            ).scalar_one_or_none()
        return None if value is None else bytes(value)

    @sql_guarded
    async def swap_meta(self, name: str, expected: bytes | None, value: bytes) -> bool:
        async with self.engine.begin() as conn:
            if expected is None:
                result = await conn.execute(self._stmts.add_meta, {"name": name, "value": value})
            else:
                result = await conn.execute(
                    update(meta)
                    .where(meta.c.name == name, meta.c.value == expected)
                    .values(value=value)
                )
        return bool(result.rowcount == 1)
