"""The SQL plumbing the task store and the registry share: engine URLs, the engine and its
SQLite pragmas, table creation and the versioned migration runner.

Both open their databases through :func:`open_engine` (the registry reuses the task
store's engine when both live in the same database) and set up their schemas through a
:class:`VersionedSchema`, each with its own tables, version record and advisory lock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Table, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool
from sqlalchemy.schema import CreateIndex, CreateTable

__all__ = [
    "SQLITE_BUSY_TIMEOUT_MS",
    "Step",
    "VersionedSchema",
    "create_table",
    "dialect_insert",
    "engine_url",
    "open_engine",
    "safe_url",
    "sqlite_in_memory",
    "sqlite_on_connect",
]

SQLITE_BUSY_TIMEOUT_MS = 5000

#: An async migration step, or any other coroutine run in the setup transaction.
Step = Callable[[AsyncConnection], Awaitable[None]]


def engine_url(url: str, unsupported: Callable[[str], Exception]) -> tuple[URL, str]:
    """The SQLAlchemy async URL for a ``sqlite:///…`` or ``postgresql://…`` URL, and its
    dialect name (``sqlite`` or ``postgresql``); any other URL raises
    ``unsupported(shown)``, ``shown`` being the URL without its password."""
    parsed = make_url(url)
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "aiosqlite"):
        return parsed.set(drivername="sqlite+aiosqlite"), "sqlite"
    if backend in ("postgresql", "postgres") and driver in ("", "asyncpg"):
        return parsed.set(drivername="postgresql+asyncpg"), "postgresql"
    raise unsupported(parsed.render_as_string(hide_password=True))


def safe_url(url: str) -> str:
    """The URL with any password hidden, for messages."""
    return make_url(url).render_as_string(hide_password=True)


def sqlite_in_memory(url: URL) -> bool:
    """Whether a SQLite URL names an in-memory database."""
    database = url.database or ""
    return database in ("", ":memory:") or "mode=memory" in database


def sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    """The pragmas of every SQLite connection (the engine's and the store's writer thread's)."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        # The task store keeps its tables' links itself (schema v10); files made before
        # v10 still declare foreign keys, left unenforced like a new file's absent ones.
        cursor.execute("PRAGMA foreign_keys=OFF")
    finally:
        cursor.close()


def _drop_closed_connections(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """A pooled connection the server closed meanwhile (a restart, a terminated backend) is
    replaced at checkout, before anything is sent on it: no round trip, no failed request."""
    if dbapi_connection.driver_connection.is_closed():
        raise sa_exc.DisconnectionError("the server closed this pooled connection")


def _skip_idle_rollbacks(engine: AsyncEngine) -> None:
    """Spare aiosqlite a thread round trip for each ROLLBACK that would do nothing.

    SQLAlchemy rolls back when a read-only connection closes and again when a
    committed one goes back to the pool; SQLite has no transaction open then
    (sqlite3 itself skips the call), but aiosqlite still hops to its thread.
    """
    dialect = engine.sync_engine.dialect
    rollback = dialect.do_rollback

    def do_rollback(dbapi_connection: Any) -> None:
        try:
            idle = not dbapi_connection.driver_connection.in_transaction
        except Exception:  # closed, or not an aiosqlite connection: let the driver decide
            idle = False
        if not idle:
            rollback(dbapi_connection)

    setattr(dialect, "do_rollback", do_rollback)  # noqa: B010 - per-engine override


def open_engine(url: URL, dialect: str, options: Mapping[str, Any] | None = None) -> AsyncEngine:
    """A new engine for ``url`` (from :func:`engine_url`): on SQLite, the folder of the file
    made, one connection for an in-memory database, the pragmas of :func:`sqlite_on_connect`
    and no idle rollbacks; on PostgreSQL, connections the server closed dropped at checkout.
    ``options`` go to :func:`~sqlalchemy.ext.asyncio.create_async_engine` last."""
    settings: dict[str, Any] = {}
    if dialect == "sqlite":
        database = url.database or ""
        if sqlite_in_memory(url):
            # Every connection to :memory: is a new database: keep exactly one,
            # and let the pool hand it to one coroutine at a time.
            settings.update(poolclass=AsyncAdaptedQueuePool, pool_size=1, max_overflow=0)
        elif not database.startswith("file:"):
            Path(database).parent.mkdir(parents=True, exist_ok=True)
    settings.update(options or {})
    engine = create_async_engine(url, **settings)
    if dialect == "sqlite":
        event.listen(engine.sync_engine, "connect", sqlite_on_connect)
        _skip_idle_rollbacks(engine)
    else:
        event.listen(engine.sync_engine, "checkout", _drop_closed_connections)
    return engine


def dialect_insert(dialect: str) -> Any:
    """The ``insert`` of the dialect (with ``on_conflict_do_*``)."""
    return pg_dialect.insert if dialect == "postgresql" else sqlite_dialect.insert


async def create_table(conn: AsyncConnection, table: Table) -> None:
    """Create ``table`` and its indexes unless they exist."""
    await conn.execute(CreateTable(table, if_not_exists=True))
    for index in sorted(table.indexes, key=lambda ix: str(ix.name)):
        await conn.execute(CreateIndex(index, if_not_exists=True))


@dataclass(frozen=True)
class VersionedSchema:
    """A schema with a version number, set up by :meth:`setup` in one transaction.

    ``read_version`` makes sure the version record exists and reads it (``None``: an empty
    database), ``create`` makes the whole current schema (version record included),
    ``migrations[v]`` upgrades from ``v - 1`` to ``v``, and ``write_version`` records the
    version reached.  ``lock`` is the PostgreSQL advisory lock serialising instances that
    start together; ``what`` names the database in errors ("Task store", "Registry").
    """

    what: str
    version: int
    lock: int
    read_version: Callable[[AsyncConnection], Awaitable[int | None]]
    create: Step
    write_version: Callable[[AsyncConnection, int], Awaitable[None]]
    migrations: Mapping[int, Step]

    async def setup(self, conn: AsyncConnection, safe_url: str) -> None:
        """Create the schema in an empty database, or upgrade an older one (in ``conn``'s
        transaction); refuse a schema newer than this code."""
        if conn.dialect.name == "postgresql":
            # Instances starting together must not race on CREATE TABLE.
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": self.lock})
        found = await self.read_version(conn)
        if found is None:
            await self.create(conn)
        elif found > self.version:
            raise RuntimeError(
                f"{self.what} {safe_url} has schema version {found}, newer than this "
                f"a2a-hub understands ({self.version}); upgrade a2a-hub"
            )
        elif found < self.version:
            for version in range(found + 1, self.version + 1):
                await self.migrations[version](conn)
            await self.write_version(conn, self.version)
