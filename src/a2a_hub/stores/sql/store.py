"""SQL store (``sqlite:///path``, ``postgresql://…``): SQLAlchemy 2 Core, async.

SQLite runs through aiosqlite (WAL, ``synchronous=NORMAL``), PostgreSQL through
asyncpg (the ``postgres`` extra).  Tasks, events and push configs are stored as
msgspec JSON blobs next to the few columns that are queried.

``a2a_tasks.last_seq`` mirrors the highest event ``seq`` of the task, so that
:meth:`SqlStore.save_task` checks that new events continue the log with a
conditional write instead of an extra read.  Saves are group-committed, with the
push deliveries they carry: on SQLite through one writer thread
(:mod:`.sqlite_writer`), on PostgreSQL as one function call per batch
(:mod:`.pg_writer`), one round trip and one commit for every save waiting at that
moment.  PostgreSQL reads run in autocommit: one
round trip each, no BEGIN/ROLLBACK around them.

:class:`SqlStore` is made of one mixin per concern over :class:`~.base.SqlBase` (the
engine, the reader, the writer): :mod:`.tasks` (tasks and event logs), :mod:`.push`
(push configs and the outbox), :mod:`.claims` (message claims and named values); this
module opens and closes the database.
"""

from __future__ import annotations

from a2a_hub.stores.sql.base import file_identity, sql_guarded, unreachable
from a2a_hub.stores.sql.claims import SqlClaims
from a2a_hub.stores.sql.database import open_engine, sqlite_in_memory, sqlite_on_connect
from a2a_hub.stores.sql.migrations import setup_schema
from a2a_hub.stores.sql.push import SqlPush
from a2a_hub.stores.sql.schema import EVENTS_CHANNEL
from a2a_hub.stores.sql.sqlite_writer import SqliteWriter
from a2a_hub.stores.sql.tasks import SqlTasks

__all__ = ["SqlStore"]


class SqlStore(SqlTasks, SqlPush, SqlClaims):
    """Tasks, event logs and push configs in SQLite or PostgreSQL.

    ``SqlStore("sqlite:///var/hub.db")`` or ``SqlStore("postgresql://u:p@host/db")``;
    await :meth:`open` (creates or upgrades the schema) before use and
    :meth:`close` after.  ``engine_options`` are passed to
    :func:`~sqlalchemy.ext.asyncio.create_async_engine` (pool size, echo …).
    """

    @sql_guarded
    async def open(self) -> None:
        if self._engine is not None:
            return
        engine = open_engine(self._engine_url, self._dialect, self._engine_options)
        try:
            async with engine.begin() as conn:
                await setup_schema(conn, self._safe_url)
        except BaseException:
            await engine.dispose()
            raise
        self._engine = engine
        self._reader = engine
        if self._dialect == "postgresql":
            from a2a_hub.stores.sql.pg_writer import PostgresWriter

            self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")
            self._writer = PostgresWriter(
                engine,
                channel=EVENTS_CHANNEL,
                unreachable=unreachable,
                unavailable=self._unavailable,
            )
        elif not sqlite_in_memory(self._engine_url):
            database = self._engine_url.database or ""
            self._writer = SqliteWriter(database, self._save_plan, sqlite_on_connect)
            self._file = file_identity(database)

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            await writer.close()
        engine, self._engine, self._reader = self._engine, None, None
        self._file = None
        if engine is not None:
            await engine.dispose()
