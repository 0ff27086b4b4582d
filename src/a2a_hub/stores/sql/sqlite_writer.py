"""Group commit for SQLite: saves queue up and one thread writes each batch in one transaction.

Other writes of the store (the push outbox's claims and outcomes) join the same
batches through :meth:`SqliteWriter.run`, so they never wait for the database lock
a batch holds.

aiosqlite costs a thread hop per statement; a save is three of them plus the
commit.  Here every ``save_task`` waiting at the same moment goes into one batch,
written by a dedicated thread on its own sqlite3 connection in one transaction —
each save in a SAVEPOINT of its own, so one bad save (a seq conflict) fails
alone.  The statements are the store's SQLAlchemy ones, compiled once.  A caller's await returns
once the transaction holding its save has committed, so an acknowledged task is
on disk.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import sqlite as sqlite_dialect

from a2a_hub.protocol.types import Task
from a2a_hub.stores.base import Delivery, TaskEvent

__all__ = ["SqliteWriter"]

#: Statements to run: yields ``(statement, params)``, receives each result, returns a value.
Steps = Generator[tuple[Any, Any], Any, Any]
Plan = Callable[[str, Task, Sequence[TaskEvent], str | None, Sequence[Delivery]], Steps]


class _Result:
    """What a save plan reads from a statement's result: ``rowcount`` and ``scalar_one()``."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._rows = cursor.fetchall() if cursor.description else []
        self.rowcount = cursor.rowcount

    def scalar_one(self) -> Any:
        return self._rows[0][0]

    def all(self) -> list[Any]:
        return self._rows

    def scalar_one_or_none(self) -> Any:
        return self._rows[0][0] if self._rows else None


class _Compiled:
    """A statement compiled once for SQLite, executed on a raw sqlite3 cursor."""

    __slots__ = ("compiled", "order", "sql")

    def __init__(self, statement: Any) -> None:
        self.compiled = statement.compile(dialect=_DIALECT)
        self.sql: str = self.compiled.string
        self.order: tuple[str, ...] = tuple(self.compiled.positiontup or ())

    def run(self, cursor: sqlite3.Cursor, params: Any) -> _Result:
        if isinstance(params, list):
            cursor.executemany(self.sql, [self._args(p) for p in params])
        else:
            cursor.execute(self.sql, self._args(params))
        return _Result(cursor)

    def _args(self, params: dict[str, Any]) -> tuple[Any, ...]:
        values = self.compiled.construct_params(params)
        return tuple(values[name] for name in self.order)


_DIALECT = sqlite_dialect.dialect(paramstyle="qmark")


class SqliteWriter:
    """One writer thread and its batches (see the module docstring)."""

    def __init__(self, path: str, plan: Plan, on_connect: Callable[[Any, Any], None]) -> None:
        self._plan = plan
        self._path = path
        self._on_connect = on_connect
        self._conn: sqlite3.Connection | None = None
        self._compiled: dict[int, _Compiled] = {}
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="a2a-sqlite-writer")
        self._pending: list[tuple[Callable[[], Steps], asyncio.Future[Any]]] = []
        self._drainer: asyncio.Task[None] | None = None

    async def save(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent],
        owner: str | None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        """Queue one save and wait until the transaction holding it has committed."""
        await self._queue(lambda: self._plan(agent_id, task, events, owner, deliveries))

    async def run(self, steps: Steps) -> Any:
        """Run other statements in the next batch (in a savepoint of their own, like a
        save); returns what ``steps`` returns once the batch has committed."""
        return await self._queue(lambda: steps)

    async def _queue(self, item: Callable[[], Steps]) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            batch, self._pending = self._pending, []
            results: list[tuple[BaseException | None, Any]]
            try:
                results = await loop.run_in_executor(
                    self._thread, self._write, [item for item, _ in batch]
                )
            except BaseException as exc:  # the whole transaction failed
                results = [(exc, None)] * len(batch)
            for (_, future), (error, value) in zip(batch, results, strict=True):
                if future.done():
                    continue
                if error is None:
                    future.set_result(value)
                else:
                    future.set_exception(error)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(
                self._path,
                isolation_level=None,
                check_same_thread=False,
                uri=self._path.startswith("file:"),
            )
            self._on_connect(conn, None)
            self._conn = conn
        return self._conn

    def _statement(self, statement: Any) -> _Compiled:
        compiled = self._compiled.get(id(statement))
        if compiled is None:
            compiled = self._compiled[id(statement)] = _Compiled(statement)
        return compiled

    def _write(self, items: list[Callable[[], Steps]]) -> list[tuple[BaseException | None, Any]]:
        conn = self._connection()
        cursor = conn.cursor()
        outcomes: list[tuple[BaseException | None, Any]] = []
        cursor.execute("BEGIN IMMEDIATE")
        try:
            for item in items:
                cursor.execute("SAVEPOINT save")
                try:
                    value = self._run(cursor, item())
                except Exception as exc:
                    cursor.execute("ROLLBACK TO save")
                    cursor.execute("RELEASE save")
                    outcomes.append((exc, None))
                else:
                    cursor.execute("RELEASE save")
                    outcomes.append((None, value))
            cursor.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise
        return outcomes

    def _run(self, cursor: sqlite3.Cursor, steps: Steps) -> Any:
        try:
            step = next(steps)
            while True:
                statement, params = step
                try:
                    result = self._statement(statement).run(cursor, params)
                except sqlite3.IntegrityError as exc:
                    step = steps.throw(sa_exc.IntegrityError(str(statement), params, exc))
                else:
                    step = steps.send(result)
        except StopIteration as stop:
            return stop.value

    async def close(self) -> None:
        """Finish what is queued, then stop the thread."""
        if self._drainer is not None:
            await asyncio.gather(self._drainer, return_exceptions=True)
        self._thread.shutdown(wait=True)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
