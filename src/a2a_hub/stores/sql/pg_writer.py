"""Group commit for PostgreSQL: concurrent saves go to the database together, in one call.

Every ``save_task`` waiting at the same moment joins one batch, with the push
deliveries it carries, and a batch is a single statement,
``SELECT a2a_save_tasks_v6(…)`` (a function the schema defines,
see :mod:`.schema`), sent through asyncpg directly on a connection of the
store's pool: one round trip and one commit for the whole batch, the statement
prepared once per connection.  The function writes the saves in order and
reports, per save, whether its events continued the log; a save that did not
fails alone with :class:`~a2a_hub.stores.base.LogConflictError`, the others are
written.  Should the batch fail as a whole (an unexpected database error, a
deadlock with another instance), nothing of it was written and each of its
saves is tried again on its own, so one bad save never takes others with it.
A caller's await returns once the transaction holding its save has committed,
so an acknowledged task is in the database.

While a batch is on its way, the next one gathers.  Message claims (idempotent sends)
are batched the same way, in their own queue: one ``SELECT * FROM a2a_claim_messages(…)``
per batch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from a2a_hub.protocol.errors import StoreUnavailableError
from a2a_hub.protocol.types import Task
from a2a_hub.stores.base import (
    Delivery,
    MessageClaim,
    TaskEvent,
    check_events,
    log_conflict,
    now,
)
from a2a_hub.stores.sql.schema import CLAIM_MESSAGES, SAVE_TASKS_WITH_DELIVERIES

try:
    import asyncpg  # type: ignore[import-untyped,unused-ignore]
except ImportError:  # pragma: no cover - the store checks for asyncpg before using this
    asyncpg = None

__all__ = ["PostgresWriter"]

_SAVE_SQL = (
    f"SELECT {SAVE_TASKS_WITH_DELIVERIES}($1::text[], $2::text[], $3::text[], $4::text[], "
    "$5::float8[], $6::bytea[], $7::text[], $8::int[], $9::int[], $10::bytea[], $11::text, "
    "$12::int[], $13::text[], $14::int[], $15::int[], $16::int[], $17::float8[], "
    "$18::float8[], $19::text[], $20::int[])"
)

_CLAIM_SQL = (
    f"SELECT o_pos, o_data FROM {CLAIM_MESSAGES}($1::text[], $2::text[], $3::text[], "
    "$4::float8[], $5::bytea[], $6::text[], $7::bool[])"
)

# Saves and claims waiting together: one statement (the claims' function runs once, its
# rows gathered in position order).
_BOTH_SQL = (
    f"WITH c AS (SELECT o_pos, o_data FROM {CLAIM_MESSAGES}($21::text[], $22::text[], "
    "$23::text[], $24::float8[], $25::bytea[], $26::text[], $27::bool[])) "
    f"SELECT {SAVE_TASKS_WITH_DELIVERIES}($1::text[], $2::text[], $3::text[], $4::text[], "
    "$5::float8[], $6::bytea[], $7::text[], $8::int[], $9::int[], $10::bytea[], $11::text, "
    "$12::int[], $13::text[], $14::int[], $15::int[], $16::int[], $17::float8[], "
    "$18::float8[], $19::text[], $20::int[]), "
    "(SELECT array_agg(o_pos ORDER BY o_pos) FROM c), "
    "(SELECT array_agg(o_data ORDER BY o_pos) FROM c)"
)

_enc = msgspec.json.Encoder()


def _disconnected(exc: BaseException) -> bool:
    """The connection is gone (or never came): the outcome of a batch sent on it is unknown."""
    if isinstance(exc, OSError | TimeoutError):
        return True
    if asyncpg is None:  # pragma: no cover
        return False
    if isinstance(exc, asyncpg.InterfaceError):  # "connection is closed", but not bad input
        return not isinstance(exc, asyncpg.exceptions._base.DataError)
    return isinstance(
        exc,
        asyncpg.PostgresConnectionError
        | asyncpg.exceptions.CannotConnectNowError
        | asyncpg.exceptions.AdminShutdownError
        | asyncpg.exceptions.CrashShutdownError,
    )


class _Save(NamedTuple):
    """One queued save, encoded, and the future its caller awaits."""

    agent_id: str
    task_id: str
    context_id: str
    state: str
    updated_at: float
    data: bytes
    owner: str | None
    first: int
    events: list[bytes]
    deliveries: Sequence[Delivery]
    future: asyncio.Future[None]


class _Claim(NamedTuple):
    """One queued message claim and the future its caller awaits (the claim found, if
    it was not recorded)."""

    agent_id: str
    owner: str
    message_id: str
    created: float
    data: bytes
    task_id: str
    reply: bool
    future: asyncio.Future[bytes | None]


class PostgresWriter:
    """Batches of concurrent saves, one statement each (see the module docstring)."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        channel: str | None,
        unreachable: Callable[[BaseException], bool],
        unavailable: Callable[[BaseException], StoreUnavailableError],
    ) -> None:
        """``channel``: NOTIFY channel announcing new events (``None``: no NOTIFY);
        ``unreachable`` tells which failures mean the database cannot be reached, and
        ``unavailable`` makes the error raised for them."""
        self._engine = engine
        self._channel = channel
        self._unreachable = unreachable
        self._unavailable = unavailable
        self._pending: list[_Save] = []
        self._drainer: asyncio.Task[None] | None = None
        self._claims: list[_Claim] = []
        #: The connection batches go out on (only the drainer uses it).
        self._conn: AsyncConnection | None = None

    async def save(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent],
        owner: str | None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        """Queue one save and wait until the transaction holding it has committed."""
        check_events(task.id, events)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append(
            _Save(
                agent_id,
                task.id,
                task.context_id,
                task.status.state.value,
                now(),
                _enc.encode(task),
                owner,
                events[0].seq if events else 0,
                [_enc.encode(e.event) for e in events],
                deliveries,
                future,
            )
        )
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.ensure_future(self._drain())
        await future

    async def claim(
        self,
        agent_id: str,
        owner: str,
        message_id: str,
        created: float,
        data: bytes,
        claim: MessageClaim,
    ) -> bytes | None:
        """Queue one message claim (see ``Store.claim_message``) and wait until its batch
        has committed; returns the claim already there (encoded), or ``None``."""
        future: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        self._claims.append(
            _Claim(
                agent_id,
                owner,
                message_id,
                created,
                data,
                claim.task_id,
                claim.reply is not None,
                future,
            )
        )
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        # One batch on its way at a time: under load batches grow instead of multiplying,
        # and each costs the database one transaction and one WAL flush.  Claims and saves
        # waiting together go in one statement.
        while self._pending or self._claims:
            saves, self._pending = self._pending, []
            claims, self._claims = self._claims, []
            try:
                if saves and claims:
                    await self._write_both(saves, claims)
                else:
                    if claims:
                        await self._write_claims(claims)
                    if saves:
                        await self._write(saves)
            except BaseException as exc:  # cancelled: nobody may wait forever
                for save in saves:
                    _fail(save, exc)
                for claim in claims:
                    _fail(claim, exc)
                raise

    async def _write_both(self, saves: list[_Save], claims: list[_Claim]) -> None:
        """Saves and claims in one statement (one round trip, one commit); if it fails
        for another reason than an outage, each part is written on its own."""
        ordered_saves = sorted(saves, key=lambda s: (s.agent_id, s.task_id))
        ordered_claims = _sorted_claims(claims)
        try:
            row = await self._call(
                "fetchrow",
                _BOTH_SQL,
                *_save_args(ordered_saves, self._channel),
                *_claim_args(ordered_claims),
            )
        except StoreUnavailableError as exc:
            for save in saves:
                _fail(save, exc)
            for claim in claims:
                _fail(claim, exc)
            return
        except Exception:  # rolled back: each part on its own
            await self._write_claims(claims)
            await self._write(saves)
            return
        for save, outcome in zip(ordered_saves, row[0], strict=True):
            _settle(save, outcome)
        _found(ordered_claims, row[1] or [], row[2] or [])

    async def _write_claims(self, claims: list[_Claim]) -> None:
        ordered = _sorted_claims(claims)
        try:
            rows = await self._call("fetch", _CLAIM_SQL, *_claim_args(ordered))
        except Exception as exc:  # rolled back: none of them was recorded
            for claim in ordered:
                _fail(claim, exc)
            return
        _found(ordered, [r[0] for r in rows], [r[1] for r in rows])

    async def _write(self, batch: list[_Save]) -> None:
        # Saves in one order of tasks, so that batches of two instances lock rows in the same
        # order (no deadlock); sorted() is stable: saves of one task keep theirs.
        ordered = sorted(batch, key=lambda s: (s.agent_id, s.task_id))
        try:
            outcomes = await self._save_batch(ordered)
        except StoreUnavailableError as exc:
            for save in ordered:
                _fail(save, exc)
            return
        except Exception as exc:  # the batch was rolled back: every save on its own
            if len(ordered) == 1:
                _fail(ordered[0], _single_failure(ordered[0], exc))
                return
            for save in ordered:
                try:
                    outcome = (await self._save_batch([save]))[0]
                except Exception as single:
                    _fail(save, _single_failure(save, single))
                else:
                    _settle(save, outcome)
            return
        for save, outcome in zip(ordered, outcomes, strict=True):
            _settle(save, outcome)

    async def _save_batch(self, saves: list[_Save]) -> list[int]:
        """Run one batch of saves (its own transaction)."""
        result: list[int] = await self._call(
            "fetchval", _SAVE_SQL, *_save_args(saves, self._channel)
        )
        return result

    async def _call(self, method: str, sql: str, *args: Any) -> Any:
        """Run one statement (its own transaction) through asyncpg's ``method`` on the
        writer's connection (kept from batch to batch: no pool checkout per batch; a new
        one when it broke); raises StoreUnavailableError when the database cannot be
        reached or the connection broke."""
        try:
            conn = self._conn
            if conn is None or conn.closed or conn.invalidated:
                self._conn = None
                conn = self._conn = await self._engine.connect().start()
            driver: Any = (await conn.get_raw_connection()).driver_connection
            if driver.is_closed():  # the server ended it (a restart, pg_terminate_backend)
                self._conn = None
                with contextlib.suppress(Exception):
                    await conn.invalidate()
                conn = self._conn = await self._engine.connect().start()
                driver = (await conn.get_raw_connection()).driver_connection
            try:
                result = await getattr(driver, method)(sql, *args)
            except Exception as exc:
                if _disconnected(exc):
                    self._conn = None
                    with contextlib.suppress(Exception):
                        await conn.invalidate()
                raise
        except Exception as exc:
            if _disconnected(exc) or self._unreachable(exc):
                raise self._unavailable(exc) from exc
            raise
        return result

    async def close(self) -> None:
        """Finish what is queued; give the connection back."""
        if self._drainer is not None:
            await asyncio.gather(self._drainer, return_exceptions=True)
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()


def _settle(save: _Save, outcome: int) -> None:
    """Tell the caller how its save went (``outcome``: see the function in .schema)."""
    if outcome >= 0:
        _fail(save, log_conflict(save.task_id, save.first, outcome))
    elif not save.future.done():  # its caller may have been cancelled meanwhile
        save.future.set_result(None)


def _fail(item: _Save | _Claim, exc: BaseException) -> None:
    if not item.future.done():
        item.future.set_exception(exc)


def _save_args(saves: list[_Save], channel: str | None) -> list[Any]:
    """The parameters of the save function for ``saves``."""
    return [
        [s.agent_id for s in saves],
        [s.task_id for s in saves],
        [s.context_id for s in saves],
        [s.state for s in saves],
        [s.updated_at for s in saves],
        [s.data for s in saves],
        [s.owner for s in saves],
        [s.first for s in saves],
        [len(s.events) for s in saves],
        [blob for s in saves for blob in s.events],
        channel,
        [len(s.deliveries) for s in saves],
        [d.config_id for s in saves for d in s.deliveries],
        [d.seq for s in saves for d in s.deliveries],
        [int(d.snapshot) for s in saves for d in s.deliveries],
        [d.attempts for s in saves for d in s.deliveries],
        [d.due for s in saves for d in s.deliveries],
        [d.first_failure for s in saves for d in s.deliveries],
        [d.last_error for s in saves for d in s.deliveries],
        [int(d.dead) for s in saves for d in s.deliveries],
    ]


def _sorted_claims(claims: list[_Claim]) -> list[_Claim]:
    """One order of keys, so that two instances' batches never wait on each other in
    opposite orders; sorted() is stable: claims of one key keep theirs."""
    return sorted(claims, key=lambda c: (c.agent_id, c.owner, c.message_id))


def _claim_args(claims: list[_Claim]) -> list[Any]:
    """The parameters of the claim function for ``claims``."""
    return [
        [c.agent_id for c in claims],
        [c.owner for c in claims],
        [c.message_id for c in claims],
        [c.created for c in claims],
        [c.data for c in claims],
        [c.task_id for c in claims],
        [c.reply for c in claims],
    ]


def _found(claims: list[_Claim], positions: list[int], data: list[bytes]) -> None:
    """Tell each claim's caller the claim found in its place (``None``: it was recorded)."""
    found = {int(pos): bytes(blob) for pos, blob in zip(positions, data, strict=True)}
    for pos, claim in enumerate(claims, 1):
        if not claim.future.done():  # its caller may have been cancelled meanwhile
            claim.future.set_result(found.get(pos))


def _single_failure(save: _Save, exc: BaseException) -> BaseException:
    """The error of one save that failed on its own: a duplicate event key means another
    writer stored those events first."""
    if asyncpg is not None and isinstance(exc, asyncpg.UniqueViolationError):
        conflict = log_conflict(save.task_id, save.first, None)
        conflict.__cause__ = exc
        return conflict
    return exc
