"""Coordination of instances over PostgreSQL: a lease table and LISTEN/NOTIFY.

Leases live in ``a2a_leases`` (expiry in the database's clock, so instances on
machines whose clocks differ agree).  Signals and event wake-ups travel as
``NOTIFY`` on the channels ``a2a_signals`` and ``a2a_events``; one dedicated
asyncpg connection per instance LISTENs to both and is re-opened if it drops
(waiters fall back to short polls meanwhile, so nothing hangs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable
from typing import Any

import msgspec
from sqlalchemy import bindparam, delete, func, literal_column, select, text, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_hub.protocol.errors import StoreUnavailableError
from a2a_hub.stores.coordinator import Coordinator, Signal
from a2a_hub.stores.sql.schema import EVENTS_CHANNEL, leases

__all__ = ["SIGNALS_CHANNEL", "PostgresCoordinator"]

log = logging.getLogger("a2a_hub.stores")

SIGNALS_CHANNEL = "a2a_signals"
_now: Any = literal_column("extract(epoch from clock_timestamp())")
_signal_dec = msgspec.json.Decoder(Signal)

_ACQUIRE = pg_insert(leases).values(
    agent_id=bindparam("agent"),
    task_id=bindparam("task"),
    owner=bindparam("owner"),
    expires_at=_now + bindparam("ttl"),
)
_ACQUIRE = _ACQUIRE.on_conflict_do_update(
    index_elements=[leases.c.agent_id, leases.c.task_id],
    set_={"owner": _ACQUIRE.excluded.owner, "expires_at": _ACQUIRE.excluded.expires_at},
)
_RENEW = (
    update(leases)
    .where(leases.c.owner == bindparam("holder"))
    .values(expires_at=_now + bindparam("ttl"))
)
_RELEASE = delete(leases).where(
    leases.c.agent_id == bindparam("agent"),
    leases.c.task_id == bindparam("task"),
    leases.c.owner == bindparam("owner"),
)
_OWNER = select(leases.c.owner).where(
    leases.c.agent_id == bindparam("agent"),
    leases.c.task_id == bindparam("task"),
    leases.c.expires_at > _now,
)
_CLAIM = text(
    "DELETE FROM a2a_leases WHERE (agent_id, task_id) IN ("
    " SELECT agent_id, task_id FROM a2a_leases"
    " WHERE expires_at <= extract(epoch from clock_timestamp())"
    " ORDER BY expires_at LIMIT :limit FOR UPDATE SKIP LOCKED)"
    " RETURNING agent_id, task_id, owner"
)
#: Tasks whose last announced seq is remembered (see ``PostgresCoordinator._last``).
_LAST_KEPT = 10_000

_NOTIFY = select(func.pg_notify(bindparam("channel"), bindparam("payload")))


class PostgresCoordinator(Coordinator):
    """Leases in a table, signals and wake-ups by LISTEN/NOTIFY (see the module docstring)."""

    shared = True

    def __init__(self, engine: Callable[[], AsyncEngine], safe_url: str) -> None:
        """``engine`` returns the store's engine (open by the time :meth:`start` runs);
        ``safe_url`` names the database in messages."""
        self._engine = engine
        self._safe_url = safe_url
        self._conn: Any = None
        self._queues: set[asyncio.Queue[Signal | None]] = set()
        self._waiters: dict[tuple[str, str], asyncio.Event] = {}
        #: The last seq announced per task (newest tasks kept): a follower already behind
        #: it is woken at once instead of at the next NOTIFY.
        self._last: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._keeper: asyncio.Task[None] | None = None
        self._closed = False

    def _dsn(self) -> str:
        url = self._engine().url.set(drivername="postgresql")
        return url.render_as_string(hide_password=False)

    async def start(self) -> None:
        self._closed = False
        self._keeper = asyncio.ensure_future(self._keep_listening())

    async def close(self) -> None:
        self._closed = True
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._keeper
        await self._drop_connection()
        for queue in self._queues:
            queue.put_nowait(None)

    async def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)

    async def _keep_listening(self) -> None:
        import asyncpg  # type: ignore[import-untyped,unused-ignore]

        delay = 0.5
        while not self._closed:
            try:
                conn = await asyncpg.connect(self._dsn(), timeout=5)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _conn, lost=lost: lost.set())
                await conn.add_listener(SIGNALS_CHANNEL, self._on_signal)
                await conn.add_listener(EVENTS_CHANNEL, self._on_event)
                self._conn = conn
                delay = 0.5
                await lost.wait()
            except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
                log.warning("LISTEN connection to %s failed: %s", self._safe_url, exc)
            await self._drop_connection()
            if not self._closed:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10)

    def _on_signal(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            signal = _signal_dec.decode(payload)
        except msgspec.DecodeError:
            return
        for queue in self._queues:
            queue.put_nowait(signal)

    def _on_event(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        agent_id, _, rest = payload.partition(" ")
        task_id, _, seq = rest.rpartition(" ")
        key = (agent_id, task_id)
        if seq.isdigit():
            self._last[key] = max(int(seq), self._last.pop(key, 0))
            if len(self._last) > _LAST_KEPT:
                self._last.popitem(last=False)
        waiter = self._waiters.get(key)
        if waiter is not None:
            waiter.set()

    async def _run(self, statement: Any, params: dict[str, Any]) -> Any:
        # Every change is one statement, atomic by itself: autocommit spares the round
        # trips of BEGIN and COMMIT.
        try:
            async with self._engine().connect() as conn:
                await conn.execution_options(isolation_level="AUTOCOMMIT")
                return await conn.execute(statement, params)
        except (OSError, sa_exc.OperationalError, sa_exc.InterfaceError) as exc:
            raise StoreUnavailableError(
                f"Task store {self._safe_url} is unavailable ({type(exc).__name__})"
            ) from exc

    async def acquire_lease(self, agent_id: str, task_id: str, owner: str, ttl: float) -> None:
        await self._run(_ACQUIRE, {"agent": agent_id, "task": task_id, "owner": owner, "ttl": ttl})

    async def renew_leases(self, owner: str, ttl: float) -> None:
        await self._run(_RENEW, {"holder": owner, "ttl": ttl})

    async def release_lease(self, agent_id: str, task_id: str, owner: str) -> None:
        await self._run(_RELEASE, {"agent": agent_id, "task": task_id, "owner": owner})

    async def lease_owner(self, agent_id: str, task_id: str) -> str | None:
        result = await self._run(_OWNER, {"agent": agent_id, "task": task_id})
        owner = result.scalar_one_or_none()
        return None if owner is None else str(owner)

    async def claim_expired(self, owner: str, limit: int = 100) -> list[tuple[str, str, str]]:
        result = await self._run(_CLAIM, {"limit": limit})
        return [(str(a), str(t), str(o)) for a, t, o in result.all()]

    async def publish(self, signal: Signal) -> None:
        payload = msgspec.json.encode(signal).decode()
        await self._run(_NOTIFY, {"channel": SIGNALS_CHANNEL, "payload": payload})

    async def signals(self) -> AsyncGenerator[Signal, None]:
        queue: asyncio.Queue[Signal | None] = asyncio.Queue()
        self._queues.add(queue)
        try:
            while (signal := await queue.get()) is not None:
                yield signal
        finally:
            self._queues.discard(queue)

    async def wait_events(self, agent_id: str, task_id: str, after: int, wait: float) -> None:
        if self._conn is None:  # not listening right now: poll
            await asyncio.sleep(min(wait, 0.25))
            return
        key = (agent_id, task_id)
        if self._last.get(key, 0) > after:
            return  # announced already: the caller reads it now
        waiter = self._waiters.get(key)
        if waiter is None:
            waiter = self._waiters[key] = asyncio.Event()
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await waiter.wait()
        finally:
            waiter.clear()
            self._waiters.pop(key, None)
