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
"""

from __future__ import annotations

import importlib
import os
import sqlite3
import time
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from sqlalchemy import (
    Double,
    Integer,
    LargeBinary,
    Select,
    String,
    and_,
    bindparam,
    delete,
    event,
    func,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool
from sqlalchemy.sql.elements import ColumnElement

from a2a_hub.protocol.errors import StoreUnavailableError, TaskNotFoundError
from a2a_hub.protocol.types import StreamResponse, Task, TaskPushNotificationConfig, TaskState
from a2a_hub.stores.base import (
    Delivery,
    DeliverySource,
    MessageClaim,
    Store,
    StoredTask,
    TaskEvent,
    TaskPage,
    TaskQuery,
    check_events,
    decode_page_token,
    encode_page_token,
    guarded,
    log_conflict,
    now,
    page_token_total,
    unavailable_error,
)
from a2a_hub.stores.coordinator import Coordinator, LocalCoordinator
from a2a_hub.stores.sql.schema import (
    EVENTS_CHANNEL,
    events,
    message_claims,
    meta,
    push_configs,
    push_outbox,
    setup_schema,
    task_counts,
    tasks,
)
from a2a_hub.stores.sql.sqlite_writer import SqliteWriter

if TYPE_CHECKING:
    from a2a_hub.stores.sql.pg_writer import PostgresWriter

__all__ = ["SqlStore"]

_POSTGRES_HINT = "pip install 'a2a-hub[postgres]'"
_SQLITE_BUSY_TIMEOUT_MS = 5000

_enc = msgspec.json.Encoder()
_task_dec = msgspec.json.Decoder(Task)
_event_dec = msgspec.json.Decoder(StreamResponse)
_push_dec = msgspec.json.Decoder(TaskPushNotificationConfig)
_claim_dec = msgspec.json.Decoder(MessageClaim)

# --- statements ------------------------------------------------------------------------

_agent = bindparam("p_agent", type_=String)
_task = bindparam("p_task", type_=String)
_task_key = (tasks.c.agent_id == _agent, tasks.c.task_id == _task)
_event_key = (events.c.agent_id == _agent, events.c.task_id == _task)
_push_key = (push_configs.c.agent_id == _agent, push_configs.c.task_id == _task)

_GET_TASK = select(tasks.c.data).where(*_task_key)
_GET_TASK_AT = select(tasks.c.data, tasks.c.last_seq, tasks.c.owner).where(*_task_key)
_READ_EVENTS = (
    select(events.c.seq, events.c.data)
    .where(*_event_key, events.c.seq > bindparam("p_after", type_=Integer))
    .order_by(events.c.seq)
)
_READ_EVENTS_LIMIT = _READ_EVENTS.limit(bindparam("p_limit", type_=Integer))
_LAST_SEQ = select(func.coalesce(func.max(events.c.seq), 0)).where(*_event_key)
_INSERT_EVENTS = events.insert()
_DELETE_EVENTS = delete(events).where(*_event_key)
_DELETE_PUSH_ALL = delete(push_configs).where(*_push_key)
_DELETE_TASK = delete(tasks).where(*_task_key)
_config_key = (*_push_key, push_configs.c.config_id == bindparam("p_config", type_=String))
_GET_PUSH = select(push_configs.c.data).where(*_config_key)
_LIST_PUSH = (
    select(push_configs.c.data)
    .where(*_push_key)
    .order_by(push_configs.c.created, push_configs.c.config_id)
)
_DELETE_PUSH = delete(push_configs).where(*_config_key)
_mc = message_claims.c
_claim_key = (
    _mc.agent_id == _agent,
    _mc.owner == bindparam("p_owner", type_=String),
    _mc.message_id == bindparam("p_message", type_=String),
)
_GET_CLAIM = select(_mc.data).where(*_claim_key)
_SET_CLAIM = (
    update(message_claims).where(*_claim_key).values(data=bindparam("p_data", type_=LargeBinary))
)


_ob = push_outbox.c
_OUTBOX_COLUMNS = (
    _ob.agent_id,
    _ob.task_id,
    _ob.config_id,
    _ob.seq,
    _ob.snapshot,
    _ob.attempts,
    _ob.due,
    _ob.first_failure,
    _ob.last_error,
    _ob.dead,
)
_ob_key = (
    _ob.agent_id == bindparam("p_agent", type_=String),
    _ob.task_id == bindparam("p_task", type_=String),
    _ob.config_id == bindparam("p_config", type_=String),
    _ob.seq == bindparam("p_seq", type_=Integer),
    _ob.snapshot == bindparam("p_snap", type_=Integer),
)
_earlier = push_outbox.alias("earlier")
# The first pending delivery of each config, when it is due.
_DUE_HEADS = (
    select(*_OUTBOX_COLUMNS)
    .where(
        _ob.dead == 0,
        _ob.due <= bindparam("p_now", type_=Double),
        ~select(_earlier.c.seq)
        .where(
            _earlier.c.agent_id == _ob.agent_id,
            _earlier.c.task_id == _ob.task_id,
            _earlier.c.config_id == _ob.config_id,
            _earlier.c.dead == 0,
            tuple_(_earlier.c.seq, _earlier.c.snapshot) < tuple_(_ob.seq, _ob.snapshot),
        )
        .exists(),
    )
    .order_by(_ob.due)
    .limit(bindparam("p_limit", type_=Integer))
)
_CLAIM_ONE = update(push_outbox).where(*_ob_key).values(due=bindparam("p_until", type_=Double))
_ob_ident = tuple_(_ob.agent_id, _ob.task_id, _ob.config_id, _ob.seq, _ob.snapshot)


def _claim_deliveries(dialect: str) -> Any:
    """Claim the due heads in one statement (``RETURNING`` them): the conditions are
    checked again on each row as it is updated, so a row another claimant moved
    meanwhile is left out (PostgreSQL also skips rows locked by a concurrent claim)."""
    heads = _DUE_HEADS.with_only_columns(*_OUTBOX_COLUMNS[:5])
    if dialect == "postgresql":
        heads = heads.with_for_update(skip_locked=True, of=push_outbox)
    return (
        update(push_outbox)
        .where(
            _ob_ident.in_(heads),
            _ob.dead == 0,
            _ob.due <= bindparam("p_now", type_=Double),
        )
        .values(due=bindparam("p_until", type_=Double))
        .returning(*_OUTBOX_COLUMNS)
    )


_FINISH = delete(push_outbox).where(*_ob_key)
_DELETE_OUTBOX = delete(push_outbox).where(
    _ob.agent_id == bindparam("p_agent", type_=String),
    _ob.task_id == bindparam("p_task", type_=String),
)
_UPDATE_DELIVERY = (
    update(push_outbox)
    .where(*_ob_key)
    .values(
        attempts=bindparam("p_attempts", type_=Integer),
        due=bindparam("p_due", type_=Double),
        first_failure=bindparam("p_first", type_=Double),
        last_error=bindparam("p_error", type_=String),
        dead=bindparam("p_dead", type_=Integer),
    )
)
_DEAD = (
    select(*_OUTBOX_COLUMNS)
    .where(_ob.dead == 1)
    .order_by(_ob.due)
    .limit(bindparam("p_limit", type_=Integer))
)
_OUTBOX_SIZE = select(_ob.dead, func.count()).group_by(_ob.dead)
_REQUEUE = (
    update(push_outbox)
    .where(*_ob_key, _ob.dead == 1)
    .values(dead=0, attempts=0, first_failure=None, last_error="", due=bindparam("p_due"))
)


def _delivery_row(d: Delivery) -> dict[str, Any]:
    return {
        "agent_id": d.agent_id,
        "task_id": d.task_id,
        "config_id": d.config_id,
        "seq": d.seq,
        "snapshot": int(d.snapshot),
        "attempts": d.attempts,
        "due": d.due,
        "first_failure": d.first_failure,
        "last_error": d.last_error,
        "dead": int(d.dead),
    }


def _delivery_key(d: Delivery) -> dict[str, Any]:
    return {
        "p_agent": d.agent_id,
        "p_task": d.task_id,
        "p_config": d.config_id,
        "p_seq": d.seq,
        "p_snap": int(d.snapshot),
    }


def _delivery_of(row: Any) -> Delivery:
    agent, task, config, seq, snap, attempts, due, first, error, dead = row
    return Delivery(
        agent_id=agent,
        task_id=task,
        config_id=config,
        seq=int(seq),
        snapshot=bool(snap),
        attempts=int(attempts),
        due=float(due),
        first_failure=None if first is None else float(first),
        last_error=error,
        dead=bool(dead),
    )


_tc = task_counts.c


def _count_statement(
    agent_id: str, query: TaskQuery, where: list[ColumnElement[bool]]
) -> Select[Any]:
    """The statement counting the tasks ``query`` lists: by owner and state, a sum of the
    kept counts (a few rows, however many tasks); by context or update time, a count
    with the filters' indexes."""
    if query.context_id is not None or query.updated_after is not None:
        return select(func.count()).select_from(tasks).where(*where)
    counted = [_tc.agent_id == agent_id]
    if query.owner is not None:
        counted.append(_tc.owner == query.owner)
    if query.state is not None:
        counted.append(_tc.state == query.state.value)
    return select(func.coalesce(func.sum(_tc.n), 0)).where(*counted)


class _Statements:
    """The dialect-specific statements (upserts and ``greatest``) of one engine."""

    def __init__(self, dialect: str) -> None:
        insert = pg_dialect.insert if dialect == "postgresql" else sqlite_dialect.insert
        greatest = func.greatest if dialect == "postgresql" else func.max

        def newest(new: ColumnElement[float]) -> ColumnElement[float]:
            # updated_at never goes back, even if the wall clock does.
            return greatest(new, tasks.c.updated_at)

        ins = insert(tasks)
        snapshot = {
            "context_id": ins.excluded.context_id,
            "state": ins.excluded.state,
            "data": ins.excluded.data,
            "updated_at": newest(ins.excluded.updated_at),
        }
        # No events: create or replace the snapshot, the log is untouched.
        self.upsert_task = ins.on_conflict_do_update(
            index_elements=[tasks.c.agent_id, tasks.c.task_id], set_=snapshot
        )
        # Events from seq 1: create, or replace a snapshot that has no events yet.
        self.upsert_task_first_events = ins.on_conflict_do_update(
            index_elements=[tasks.c.agent_id, tasks.c.task_id],
            set_={**snapshot, "last_seq": ins.excluded.last_seq},
            where=tasks.c.last_seq == 0,
        )
        # Events after seq N > 0: the task must exist with last_seq == N.
        self.update_task_events = (
            update(tasks)
            .where(*_task_key, tasks.c.last_seq == bindparam("p_prev", type_=Integer))
            .values(
                context_id=bindparam("p_context", type_=String),
                state=bindparam("p_state", type_=String),
                data=bindparam("p_data", type_=LargeBinary),
                updated_at=newest(bindparam("p_updated", type_=Double)),
                last_seq=bindparam("p_last", type_=Integer),
            )
        )
        push_ins = insert(push_configs).values(
            agent_id=_agent,
            task_id=_task,
            config_id=bindparam("p_config", type_=String),
            created=select(func.coalesce(func.max(push_configs.c.created), 0) + 1)
            .where(*_push_key)
            .scalar_subquery(),
            data=bindparam("p_data", type_=LargeBinary),
        )
        self.claim_deliveries = _claim_deliveries(dialect)
        self.add_meta = insert(meta).on_conflict_do_nothing()
        self.add_claim = insert(message_claims).on_conflict_do_nothing()
        # A delivery already queued (or dead) is kept as it is.
        self.add_delivery = insert(push_outbox).on_conflict_do_nothing()
        self.set_push = push_ins.on_conflict_do_update(
            index_elements=[
                push_configs.c.agent_id,
                push_configs.c.task_id,
                push_configs.c.config_id,
            ],
            set_={"data": push_ins.excluded.data},
        )


# --- helpers ---------------------------------------------------------------------------


_UNREACHABLE = (OSError, sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError)

#: SQLite primary result codes that mean "the database file cannot be used", not a bug of
#: ours: PERM, BUSY, LOCKED, READONLY, IOERR, CORRUPT, FULL, CANTOPEN, NOTADB.
_SQLITE_UNUSABLE = frozenset({3, 5, 6, 8, 10, 11, 13, 14, 26})


def _unreachable(exc: BaseException) -> bool:
    """The database cannot be reached (or dropped the connection under us), or, for SQLite,
    its file cannot be written or read (read-only, deleted, disk full …)."""
    if isinstance(exc, _UNREACHABLE):
        return True
    if isinstance(exc, sqlite3.Error):  # raised by the SQLite writer thread, unwrapped
        return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _SQLITE_UNUSABLE
    return isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated


def _file_identity(path: str) -> tuple[str, int, int]:
    """The absolute path of a file and what identifies the file itself (device, inode)."""
    st = os.stat(path)
    return os.path.realpath(path), st.st_dev, st.st_ino


class SqliteFileLostError(OSError):
    """The SQLite file the store opened is no longer the file at its path (deleted, moved or
    replaced while serving): everything written from now on would be lost."""


_guarded = guarded(_unreachable)

#: A plan of writes: yields ``(statement, params)``, receives each result (an
#: IntegrityError is thrown back into it) and returns its outcome.
_Plan = Generator[tuple[Any, Any], Any, Any]


async def _drive(conn: AsyncConnection, plan: _Plan) -> Any:
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


def _engine_url(url: str) -> tuple[URL, str]:
    """The SQLAlchemy async URL for a store URL, and its dialect name."""
    parsed = make_url(url)
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "aiosqlite"):
        return parsed.set(drivername="sqlite+aiosqlite"), "sqlite"
    if backend in ("postgresql", "postgres") and driver in ("", "asyncpg"):
        return parsed.set(drivername="postgresql+asyncpg"), "postgresql"
    shown = parsed.render_as_string(hide_password=True)
    raise ValueError(
        f"SqlStore supports sqlite:///path and postgresql://user@host/db URLs, not {shown!r}"
    )


def _sqlite_in_memory(url: URL) -> bool:
    database = url.database or ""
    return database in ("", ":memory:") or "mode=memory" in database


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={_SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
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


# --- the store -------------------------------------------------------------------------


_ENDED = sorted(state.value for state in TaskState if state.terminal)


class SqlStore(Store):
    """Tasks, event logs and push configs in SQLite or PostgreSQL.

    ``SqlStore("sqlite:///var/hub.db")`` or ``SqlStore("postgresql://u:p@host/db")``;
    await :meth:`open` (creates or upgrades the schema) before use and
    :meth:`close` after.  ``engine_options`` are passed to
    :func:`~sqlalchemy.ext.asyncio.create_async_engine` (pool size, echo …).
    """

    def __init__(self, url: str, *, engine_options: Mapping[str, Any] | None = None) -> None:
        self.url = url
        self._engine_url, self._dialect = _engine_url(url)
        self._safe_url = make_url(url).render_as_string(hide_password=True)
        self._engine_options = dict(engine_options or {})
        self._engine: AsyncEngine | None = None
        #: Connections for reads: in autocommit on PostgreSQL (no BEGIN/ROLLBACK round trips).
        self._reader: AsyncEngine | None = None
        #: Saves in batches (group commit): a writer thread for SQLite files, one
        #: function call per batch for PostgreSQL.
        self._writer: SqliteWriter | PostgresWriter | None = None
        #: The SQLite file opened, as (path, st_dev, st_ino); None for PostgreSQL and memory.
        self._file: tuple[str, int, int] | None = None
        self._stmts = _Statements(self._dialect)
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

    # --- lifecycle ---------------------------------------------------------------------

    @_guarded
    async def open(self) -> None:
        if self._engine is not None:
            return
        options: dict[str, Any] = {}
        if self._dialect == "sqlite":
            database = self._engine_url.database or ""
            if _sqlite_in_memory(self._engine_url):
                # Every connection to :memory: is a new database: keep exactly one,
                # and let the pool hand it to one coroutine at a time.
                options.update(poolclass=AsyncAdaptedQueuePool, pool_size=1, max_overflow=0)
            elif not database.startswith("file:"):
                Path(database).parent.mkdir(parents=True, exist_ok=True)
        options.update(self._engine_options)
        engine = create_async_engine(self._engine_url, **options)
        if self._dialect == "sqlite":
            event.listen(engine.sync_engine, "connect", _sqlite_on_connect)
            _skip_idle_rollbacks(engine)
        else:
            event.listen(engine.sync_engine, "checkout", _drop_closed_connections)
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
                unreachable=_unreachable,
                unavailable=self._unavailable,
            )
        elif not _sqlite_in_memory(self._engine_url):
            database = self._engine_url.database or ""
            self._writer = SqliteWriter(database, self._save_plan, _sqlite_on_connect)
            self._file = _file_identity(database)

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            await writer.close()
        engine, self._engine, self._reader = self._engine, None, None
        self._file = None
        if engine is not None:
            await engine.dispose()

    # --- tasks -------------------------------------------------------------------------

    @_guarded
    async def get_task(self, agent_id: str, task_id: str) -> Task | None:
        async with self._read() as conn:
            data = (
                await conn.execute(_GET_TASK, {"p_agent": agent_id, "p_task": task_id})
            ).scalar_one_or_none()
        return None if data is None else _task_dec.decode(data)

    @_guarded
    async def get_task_record(self, agent_id: str, task_id: str) -> StoredTask | None:
        async with self._read() as conn:
            row = (
                await conn.execute(_GET_TASK_AT, {"p_agent": agent_id, "p_task": task_id})
            ).one_or_none()
        return None if row is None else StoredTask(_task_dec.decode(row[0]), int(row[1]), row[2])

    @_guarded
    async def save_task(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent] = (),
        *,
        owner: str | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        writer = self._writer
        if isinstance(writer, SqliteWriter):
            self._check_file()
            await writer.save(agent_id, task, events, owner, deliveries)
            return
        if writer is not None:  # PostgreSQL group commit
            await writer.save(agent_id, task, events, owner, deliveries)
            return
        async with self.engine.begin() as conn:  # SQLite in memory
            await _drive(conn, self._save_plan(agent_id, task, events, owner, deliveries))

    def _save_plan(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent],
        owner: str | None,
        deliveries: Sequence[Delivery] = (),
    ) -> Generator[tuple[Any, Any], Any, None]:
        """The statements of one save, for the async and the sync (SQLite writer) drivers.

        It yields ``(statement, params)`` and receives each result; an IntegrityError of
        a statement is thrown back into it.
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
                yield stmts.add_delivery, [_delivery_row(d) for d in deliveries]
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
            stored = (yield _LAST_SEQ, {"p_agent": agent_id, "p_task": task.id}).scalar_one()
            raise log_conflict(task.id, prev + 1, stored)
        rows = [
            {"agent_id": agent_id, "task_id": task.id, "seq": e.seq, "data": _enc.encode(e.event)}
            for e in events
        ]
        try:
            yield _INSERT_EVENTS, rows[0] if len(rows) == 1 else rows
        except sa_exc.IntegrityError as exc:  # a concurrent writer took these seqs
            raise log_conflict(task.id, prev + 1, None) from exc
        if deliveries:
            yield stmts.add_delivery, [_delivery_row(d) for d in deliveries]

    # --- message claims --------------------------------------------------------------

    @_guarded
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
                    found = await _drive(conn, steps)
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
            found: bytes | None = (yield _GET_CLAIM, key).scalar_one_or_none()
            return found
        found = (yield _GET_CLAIM, key).scalar_one_or_none()
        if found is None:
            return None
        held = _claim_dec.decode(found)
        if held.reply is not None or held.task_id != claim.task_id:
            return found
        yield _SET_CLAIM, {**key, "p_data": data}
        return None

    @_guarded
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

    @_guarded
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
                counted = await conn.execute(_count_statement(agent_id, query, where))
                total = int(counted.scalar_one())
        page = rows[:size]
        token = encode_page_token(page[-1][0], page[-1][1], total) if page and more else ""
        return TaskPage(
            tasks=[_task_dec.decode(r[2]) for r in page], next_page_token=token, total_size=total
        )

    @_guarded
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

    @_guarded
    async def delete_task(self, agent_id: str, task_id: str) -> bool:
        params = {"p_agent": agent_id, "p_task": task_id}
        async with self.engine.begin() as conn:
            await conn.execute(_DELETE_EVENTS, params)
            await conn.execute(_DELETE_PUSH_ALL, params)
            await conn.execute(_DELETE_OUTBOX, params)
            result = await conn.execute(_DELETE_TASK, params)
        return result.rowcount > 0

    # --- events ------------------------------------------------------------------------

    @_guarded
    async def read_events(
        self, agent_id: str, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[TaskEvent]:
        params: dict[str, Any] = {"p_agent": agent_id, "p_task": task_id, "p_after": after}
        stmt = _READ_EVENTS
        if limit is not None:
            if limit <= 0:
                return []
            stmt, params["p_limit"] = _READ_EVENTS_LIMIT, limit
        async with self._read() as conn:
            rows = (await conn.execute(stmt, params)).all()
        return [TaskEvent(seq=seq, event=_event_dec.decode(data)) for seq, data in rows]

    @_guarded
    async def last_seq(self, agent_id: str, task_id: str) -> int:
        async with self._read() as conn:
            value = (
                await conn.execute(_LAST_SEQ, {"p_agent": agent_id, "p_task": task_id})
            ).scalar_one()
        return int(value)

    # --- outbox --------------------------------------------------------------------------

    @_guarded
    async def add_deliveries(self, deliveries: Sequence[Delivery]) -> None:
        if deliveries:
            await self._write_plan(self._add_plan(deliveries))

    def _add_plan(self, deliveries: Sequence[Delivery]) -> _Plan:
        yield self._stmts.add_delivery, [_delivery_row(d) for d in deliveries]

    @_guarded
    async def claim_deliveries(
        self, limit: int, lease: float, now: float | None = None
    ) -> list[Delivery]:
        at = time.time() if now is None else now
        params = {"p_now": at, "p_until": at + lease, "p_limit": limit}
        rows = await self._write_plan(self._claim_deliveries_plan(params))
        return sorted((_delivery_of(r) for r in rows), key=lambda d: d.due)

    def _claim_deliveries_plan(self, params: dict[str, Any]) -> _Plan:
        if self._dialect == "postgresql":
            result = yield self._stmts.claim_deliveries, params
            return list(result.all())
        # SQLite: the transaction holds the database's write lock from its start, so
        # reading the heads and then moving each by its key is atomic (and each update is
        # a primary-key lookup, where one UPDATE … IN (…) walks every due row).
        heads = list((yield _DUE_HEADS, params).all())
        if heads:
            until = params["p_until"]
            yield _CLAIM_ONE, [{**_delivery_key(_delivery_of(r)), "p_until": until} for r in heads]
        return [(*row[:6], params["p_until"], *row[7:]) for row in heads]

    @_guarded
    async def finish_delivery(self, delivery: Delivery) -> None:
        await self._write_plan(self._settle_plan([delivery], ()))

    @_guarded
    async def update_delivery(self, delivery: Delivery) -> None:
        await self._write_plan(self._settle_plan((), [delivery]))

    @_guarded
    async def settle_deliveries(
        self, finished: Sequence[Delivery] = (), updated: Sequence[Delivery] = ()
    ) -> None:
        if finished or updated:
            await self._write_plan(self._settle_plan(finished, updated))

    def _settle_plan(self, finished: Sequence[Delivery], updated: Sequence[Delivery]) -> _Plan:
        if finished:
            yield _FINISH, [_delivery_key(d) for d in finished]
        if updated:
            rows = [
                {
                    **_delivery_key(d),
                    "p_attempts": d.attempts,
                    "p_due": d.due,
                    "p_first": d.first_failure,
                    "p_error": d.last_error,
                    "p_dead": int(d.dead),
                }
                for d in updated
            ]
            yield _UPDATE_DELIVERY, rows

    async def _write_plan(self, plan: _Plan) -> Any:
        """Run a plan of writes in one transaction: on SQLite in the writer thread's next
        batch (so the dispatcher never waits for the lock a batch of saves holds)."""
        writer = self._writer
        if isinstance(writer, SqliteWriter):
            self._check_file()
            return await writer.run(plan)
        async with self.engine.begin() as conn:
            return await _drive(conn, plan)

    @_guarded
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

    @_guarded
    async def dead_deliveries(self, limit: int = 1000) -> list[Delivery]:
        async with self._read() as conn:
            rows = (await conn.execute(_DEAD, {"p_limit": limit})).all()
        return [_delivery_of(r) for r in rows]

    @_guarded
    async def outbox_size(self) -> tuple[int, int]:
        async with self._read() as conn:
            rows = (await conn.execute(_OUTBOX_SIZE)).all()
        counts = {bool(dead): int(n) for dead, n in rows}
        return counts.get(False, 0), counts.get(True, 0)

    @_guarded
    async def requeue_deliveries(self, ids: Sequence[str] | None = None) -> int:
        wanted = None if ids is None else set(ids)
        count = 0
        at = time.time()
        async with self.engine.begin() as conn:
            rows = (await conn.execute(_DEAD, {"p_limit": 1_000_000})).all()
            for row in rows:
                d = _delivery_of(row)
                if wanted is None or d.id in wanted:
                    await conn.execute(_REQUEUE, {**_delivery_key(d), "p_due": at})
                    count += 1
        return count

    # --- meta --------------------------------------------------------------------------

    @_guarded
    async def get_meta(self, name: str) -> bytes | None:
        async with self._read() as conn:
            value = (
                await conn.execute(select(meta.c.value).where(meta.c.name == name))
            ).scalar_one_or_none()
        return None if value is None else bytes(value)

    @_guarded
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

    # --- push configs ------------------------------------------------------------------

    @_guarded
    async def set_push_config(
        self, agent_id: str, task_id: str, config: TaskPushNotificationConfig
    ) -> None:
        params = {
            "p_agent": agent_id,
            "p_task": task_id,
            "p_config": config.id or task_id,
            "p_data": _enc.encode(config),
        }
        try:
            async with self.engine.begin() as conn:
                await conn.execute(self._stmts.set_push, params)
        except sa_exc.IntegrityError as exc:  # the foreign key: no such task
            raise TaskNotFoundError(f"Task {task_id} not found") from exc

    @_guarded
    async def get_push_config(
        self, agent_id: str, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        params = {"p_agent": agent_id, "p_task": task_id, "p_config": config_id}
        async with self._read() as conn:
            data = (await conn.execute(_GET_PUSH, params)).scalar_one_or_none()
        return None if data is None else _push_dec.decode(data)

    @_guarded
    async def list_push_configs(
        self, agent_id: str, task_id: str
    ) -> list[TaskPushNotificationConfig]:
        async with self._read() as conn:
            blobs = (
                await conn.execute(_LIST_PUSH, {"p_agent": agent_id, "p_task": task_id})
            ).scalars()
            return [_push_dec.decode(b) for b in blobs]

    @_guarded
    async def delete_push_config(self, agent_id: str, task_id: str, config_id: str) -> bool:
        params = {"p_agent": agent_id, "p_task": task_id, "p_config": config_id}
        async with self.engine.begin() as conn:
            result = await conn.execute(_DELETE_PUSH, params)
        return result.rowcount > 0
