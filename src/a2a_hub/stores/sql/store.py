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

import fcntl
import os
from collections.abc import Mapping
from typing import Any

from sqlalchemy import event, select
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_hub.protocol.types import TaskState
from a2a_hub.stores.sql.base import file_identity, sql_guarded, unreachable
from a2a_hub.stores.sql.claims import SqlClaims
from a2a_hub.stores.sql.database import open_engine, sqlite_in_memory, sqlite_on_connect
from a2a_hub.stores.sql.migrations import setup_schema
from a2a_hub.stores.sql.push import SqlPush
from a2a_hub.stores.sql.schema import EVENTS_CHANNEL, tasks
from a2a_hub.stores.sql.sqlite_writer import SqliteWriter
from a2a_hub.stores.sql.tasks import SqlTasks

__all__ = ["SqlStore", "hold_plans"]

#: PostgreSQL settings of the store's connections (unless the engine options' asyncpg
#: ``server_settings`` set them).  Its statements are prepared once per connection
#: (asyncpg), and after five runs PostgreSQL keeps a generic plan if it looks no dearer:
#: on a table analyzed while empty (no autovacuum to analyze it again) a sequential scan,
#: which every read by key then repeats however large the table grows.  Every statement of
#: the store reads through an index (its keys, the list and outbox indexes), so with
#: sequential scans disabled the cached plans are the index's whatever the statistics say;
#: custom plans every time (plan_cache_mode = force_custom_plan) hold too but cost a
#: planning per statement, about 70 us per key read here.  The batch functions carry the
#: same setting (v10).  Set by a SET on each new connection, not in the start-up packet:
#: a pooler in front (PgBouncer) refuses start-up parameters it does not know.
PLAN_SETTINGS = {"enable_seqscan": "off"}


def hold_plans(engine: AsyncEngine, options: Mapping[str, Any]) -> None:
    """Give each new connection of ``engine`` :data:`PLAN_SETTINGS` (those ``options``'
    asyncpg server settings do not set)."""
    given = (options.get("connect_args") or {}).get("server_settings") or {}
    sets = "; ".join(f"SET {k} = {v}" for k, v in PLAN_SETTINGS.items() if k not in given)
    if not sets:
        return

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.run_async(lambda driver: driver.execute(sets))

    event.listen(engine.sync_engine, "connect", on_connect)


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
        if self._dialect == "postgresql":
            hold_plans(engine, self._engine_options)
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

    #: Our descriptor of the SQLite file holding its serving lock (see orphaned_at_start).
    _serving_lock: int | None = None

    async def orphaned_at_start(self) -> list[tuple[str, str]]:
        """On a SQLite file: take the file's serving lock (an ``flock``, which the kernel
        releases however this process ends, ``kill -9`` included) and, holding it, answer
        the tasks left submitted or working: a file is served by one process at a time
        (``--workers`` needs Redis or PostgreSQL), so whoever ran them is gone.  If another
        process holds the lock (it serves the file), nothing: its tasks are alive."""
        if self._file is None:
            return []
        if self._serving_lock is None:
            fd = os.open(self._file[0], os.O_RDONLY | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return []
            self._serving_lock = fd
        running = (TaskState.SUBMITTED.value, TaskState.WORKING.value)
        async with self._read() as conn:
            rows = await conn.execute(
                select(tasks.c.agent_id, tasks.c.task_id).where(tasks.c.state.in_(running))
            )
            return [(row.agent_id, row.task_id) for row in rows]

    async def close(self) -> None:
        if self._serving_lock is not None:
            os.close(self._serving_lock)  # releases the flock
            self._serving_lock = None
        writer, self._writer = self._writer, None
        if writer is not None:
            await writer.close()
        engine, self._engine, self._reader = self._engine, None, None
        self._file = None
        if engine is not None:
            await engine.dispose()
