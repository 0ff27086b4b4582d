"""What every concern of :class:`~.store.SqlStore` shares: the engine and the reader, the
group-commit writer, the check that the SQLite file is still the one opened, and the
way a plan of writes runs.

:class:`SqlBase` holds them; the concerns (:mod:`.tasks`, :mod:`.push`, :mod:`.claims`)
are mixins over it, and :class:`~.store.SqlStore` joins them and opens the database.
Plans of writes are generators of ``(statement, params)`` run either on an async
connection (:func:`drive`) or in the SQLite writer thread.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from a2a_hub.protocol.errors import StoreUnavailableError
from a2a_hub.stores.base import Store, guarded, unavailable_error
from a2a_hub.stores.coordinator import Coordinator, LocalCoordinator
from a2a_hub.stores.sql.database import engine_url, safe_url
from a2a_hub.stores.sql.sqlite_writer import SqliteWriter
from a2a_hub.stores.sql.statements import Statements

if TYPE_CHECKING:
    from a2a_hub.stores.sql.pg_writer import PostgresWriter

__all__ = [
    "Plan",
    "SqlBase",
    "SqliteFileLostError",
    "drive",
    "file_identity",
    "sql_guarded",
    "unreachable",
]

_POSTGRES_HINT = "pip install 'a2a-hub[postgres]'"

_UNREACHABLE = (OSError, sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError)

#: SQLite primary result codes that mean "the database file cannot be used", not a bug of
#: ours: PERM, BUSY, LOCKED, READONLY, IOERR, CORRUPT, FULL, CANTOPEN, NOTADB.
_SQLITE_UNUSABLE = frozenset({3, 5, 6, 8, 10, 11, 13, 14, 26})


def unreachable(exc: BaseException) -> bool:
    """The database cannot be reached (or dropped the connection under us), or, for SQLite,
    its file cannot be written or read (read-only, deleted, disk full …)."""
    if isinstance(exc, _UNREACHABLE):
        return True
    if isinstance(exc, sqlite3.Error):  # raised by the SQLite writer thread, unwrapped
        return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _SQLITE_UNUSABLE
    return isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated


def file_identity(path: str) -> tuple[str, int, int]:
    """The absolute path of a file and what identifies the file itself (device, inode)."""
    st = os.stat(path)
    return os.path.realpath(path), st.st_dev, st.st_ino


class SqliteFileLostError(OSError):
    """The SQLite file the store opened is no longer the file at its path (deleted, moved or
    replaced while serving): everything written from now on would be lost."""


sql_guarded = guarded(unreachable)

#: A plan of writes: yields ``(statement, params)``, receives each result (an
#: IntegrityError is thrown back into it) and returns its outcome.
Plan = Generator[tuple[Any, Any], Any, Any]


async def drive(conn: AsyncConnection, plan: Plan) -> Any:
    """Run a plan on an async connection (in its transaction)."""
    try:
        step = next(plan)
        while True:
            statement, params = step
            try:
                result = await conn.execute(statement, params)
            except sa_exc.IntegrityError as exc:
                step = plan.throw(exc)
            else:
                step = plan.send(result)
    except StopIteration as stop:
        return stop.value


def _unsupported(shown: str) -> ValueError:
    return ValueError(
        f"SqlStore supports sqlite:///path and postgresql://user@host/db URLs, not {shown!r}"
    )


class SqlBase(Store):
    """The state every concern of the SQL store uses, and the helpers around it."""

    def __init__(self, url: str, *, engine_options: Mapping[str, Any] | None = None) -> None:
        self.url = url
        self._engine_url, self._dialect = engine_url(url, _unsupported)
        self._safe_url = safe_url(url)
        self._engine_options = dict(engine_options or {})
        self._engine: AsyncEngine | None = None
        #: Connections for reads: in autocommit on PostgreSQL (no BEGIN/ROLLBACK round trips).
        self._reader: AsyncEngine | None = None
        #: Saves in batches (group commit): a writer thread for SQLite files, one
        #: function call per batch for PostgreSQL.
        self._writer: SqliteWriter | PostgresWriter | None = None
        #: The SQLite file opened, as (path, st_dev, st_ino); None for PostgreSQL and memory.
        self._file: tuple[str, int, int] | None = None
        self._stmts = Statements(self._dialect)
        if self._dialect == "postgresql":
            try:
                importlib.import_module("asyncpg")
            except ImportError as exc:
                raise ImportError(
                    f"The PostgreSQL store ({self._safe_url}) needs asyncpg: {_POSTGRES_HINT}"
                ) from exc

    def __repr__(self) -> str:
        return f"SqlStore({self._safe_url!r})"

    def _make_coordinator(self) -> Coordinator:
        if self._dialect == "postgresql":
            from a2a_hub.stores.sql.pg_coordinator import PostgresCoordinator

            return PostgresCoordinator(lambda: self.engine, self._safe_url)
        return LocalCoordinator()

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._dialect

    @property
    def safe_url(self) -> str:
        """The store URL with any password hidden."""
        return self._safe_url

    def _unavailable(self, exc: BaseException) -> StoreUnavailableError:
        return unavailable_error(self._safe_url, exc)

    @property
    def engine(self) -> AsyncEngine:
        """The SQLAlchemy engine; only valid between :meth:`open` and :meth:`close`."""
        if self._engine is None:
            raise RuntimeError(f"{self!r} is not open; await store.open() first")
        self._check_file()
        return self._engine

    def _read(self) -> AsyncConnection:
        """A connection for reads (use as ``async with``)."""
        if self._reader is None:
            raise RuntimeError(f"{self!r} is not open; await store.open() first")
        self._check_file()
        return self._reader.connect()

    def _check_file(self) -> None:
        """Raise :class:`SqliteFileLostError` if the SQLite file opened is no longer the one
        at its path.  SQLite keeps reading and writing a deleted or replaced file through
        its open descriptors, so without this the hub would answer every request while
        writing into a file nobody will ever open again (one ``stat`` per operation)."""
        if self._file is None:
            return
        path, dev, ino = self._file
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise SqliteFileLostError(
                f"the SQLite file {path} was deleted while the hub was serving; restart the "
                "hub (its data is gone unless you restore the file)"
            ) from None
        if (st.st_dev, st.st_ino) != (dev, ino):
            raise SqliteFileLostError(
                f"the SQLite file {path} was replaced by another file while the hub was "
                "serving; restart the hub to use the new one"
            )

    async def _write_plan(self, plan: Plan) -> Any:
        """Run a plan of writes in one transaction: on SQLite in the writer thread's next
        batch (so the dispatcher never waits for the lock a batch of saves holds)."""
        writer = self._writer
        if isinstance(writer, SqliteWriter):
            self._check_file()
            return await writer.run(plan)
        async with self.engine.begin() as conn:
            return await drive(conn, plan)
