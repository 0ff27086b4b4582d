"""SQL-only behaviour: schema versions and the migration of databases written by older versions.

Runs on SQLite (a file) and on PostgreSQL (a schema of its own in
``A2A_HUB_TEST_POSTGRES_URL``, dropped afterwards); PostgreSQL skips without a
server, or fails when ``CI=true``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
from sqlalchemy import (
    Column,
    Double,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    inspect,
    select,
    text,
)
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from a2a_hub.protocol.errors import TaskNotFoundError
from a2a_hub.protocol.types import TaskState
from a2a_hub.stores import LogConflictError, StoredTask, TaskQuery
from a2a_hub.stores.sql import SCHEMA_VERSION, SqlStore
from a2a_hub.stores.sql.statements import DELETE_TASK, Statements
from tests.support.stores import (
    POSTGRES_URL,
    missing_service,
    until_backends_gone,
    until_waiting_on_a_lock,
)

from .test_contract import make_task, push_config, snapshot_event, status_event, with_state

# --- the schema as version 2 wrote it ---------------------------------------------------

v2 = MetaData()
v2_tasks = Table(
    "a2a_tasks",
    v2,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("context_id", String, nullable=False),
    Column("state", String, nullable=False),
    Column("updated_at", Double, nullable=False),
    Column("last_seq", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
)
Index("ix_a2a_tasks_updated", v2_tasks.c.agent_id, v2_tasks.c.updated_at, v2_tasks.c.task_id)
Index("ix_a2a_tasks_context", v2_tasks.c.agent_id, v2_tasks.c.context_id, v2_tasks.c.updated_at)
v2_events = Table(
    "a2a_task_events",
    v2,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
    ForeignKeyConstraint(
        ["agent_id", "task_id"], [v2_tasks.c.agent_id, v2_tasks.c.task_id], ondelete="CASCADE"
    ),
)
Table(
    "a2a_push_configs",
    v2,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("config_id", String, primary_key=True),
    Column("created", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
    ForeignKeyConstraint(
        ["agent_id", "task_id"], [v2_tasks.c.agent_id, v2_tasks.c.task_id], ondelete="CASCADE"
    ),
)
v2_version = Table(
    "a2a_schema_version",
    v2,
    Column("id", Integer, primary_key=True),
    Column("version", Integer, nullable=False),
)
v2_leases = Table(
    "a2a_leases",
    v2,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("owner", String, nullable=False),
    Column("expires_at", Double, nullable=False),
)
Index("ix_a2a_leases_owner", v2_leases.c.owner)
Index("ix_a2a_leases_expires", v2_leases.c.expires_at)


# --- one database per test, on each SQL backend ----------------------------------------


@dataclass
class Database:
    """An empty database (SQLite file, or PostgreSQL schema) and how to open stores on it."""

    url: str
    engine_options: dict[str, Any]

    def engine(self) -> AsyncEngine:
        url = self.url.replace("sqlite://", "sqlite+aiosqlite://").replace(
            "postgresql://", "postgresql+asyncpg://"
        )
        return create_async_engine(url, **self.engine_options)

    def store(self) -> SqlStore:
        return SqlStore(self.url, engine_options=self.engine_options)


@pytest.fixture(params=["sqlite", "postgresql"])
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    if request.param == "sqlite":
        yield Database(f"sqlite:///{tmp_path}/hub.db", {})
        return
    schema = f"mig_{uuid.uuid4().hex[:12]}"
    admin = Database(POSTGRES_URL, {}).engine()
    try:
        async with admin.begin() as conn:
            await conn.execute(text(f"CREATE SCHEMA {schema}"))
    except (ImportError, OSError) as exc:
        await admin.dispose()
        missing_service(f"postgresql unavailable: {type(exc).__name__}: {exc}")
    try:
        yield Database(POSTGRES_URL, {"connect_args": {"server_settings": {"search_path": schema}}})
    finally:
        async with admin.begin() as conn:
            await conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        await admin.dispose()


async def write_version_2(database: Database, agent_id: str) -> None:
    """A version 2 database holding one task with two events (as version 2 wrote them)."""
    task = make_task("old", state=TaskState.WORKING)
    events = [snapshot_event(1, task), status_event(2, task, TaskState.WORKING)]
    engine = database.engine()
    try:
        async with engine.begin() as conn:
            await conn.run_sync(v2.create_all)
            await conn.execute(v2_version.insert().values(id=1, version=2))
            await conn.execute(
                v2_tasks.insert().values(
                    agent_id=agent_id,
                    task_id=task.id,
                    context_id=task.context_id,
                    state=task.status.state.value,
                    updated_at=1_700_000_000.0,
                    last_seq=2,
                    data=msgspec.json.encode(with_state(task, TaskState.WORKING)),
                )
            )
            await conn.execute(
                v2_events.insert(),
                [
                    {
                        "agent_id": agent_id,
                        "task_id": task.id,
                        "seq": e.seq,
                        "data": msgspec.json.encode(e.event),
                    }
                    for e in events
                ],
            )
    finally:
        await engine.dispose()


async def schema_of(database: Database) -> tuple[int, set[str], set[str]]:
    """The recorded version, the columns of a2a_tasks and the names of its indexes."""
    engine = database.engine()
    try:
        async with engine.connect() as conn:
            version = (await conn.execute(select(v2_version.c.version))).scalar_one()

            def inspected(sync: Any) -> tuple[set[str], set[str]]:
                found = inspect(sync)
                return (
                    {c["name"] for c in found.get_columns("a2a_tasks")},
                    {str(ix["name"]) for ix in found.get_indexes("a2a_tasks")},
                )

            columns, indexes = await conn.run_sync(inspected)
    finally:
        await engine.dispose()
    return int(version), columns, indexes


async def foreign_keys_of(database: Database) -> dict[str, list[str]]:
    """The tables each of the events' and push configs' foreign keys refers to."""
    engine = database.engine()
    try:
        async with engine.connect() as conn:

            def inspected(sync: Any) -> dict[str, list[str]]:
                found = inspect(sync)
                return {
                    table: [key["referred_table"] for key in found.get_foreign_keys(table)]
                    for table in ("a2a_task_events", "a2a_push_configs")
                }

            return await conn.run_sync(inspected)
    finally:
        await engine.dispose()


async def test_a_new_database_gets_the_current_schema(database: Database) -> None:
    store = database.store()
    await store.open()
    await store.close()
    version, columns, indexes = await schema_of(database)
    assert version == SCHEMA_VERSION
    assert "owner" in columns
    assert {"ix_a2a_tasks_owner", "ix_a2a_tasks_state"} <= indexes
    # The store keeps events and push configs with their task itself (v10).
    assert await foreign_keys_of(database) == {"a2a_task_events": [], "a2a_push_configs": []}


async def test_a_version_2_database_is_migrated_and_keeps_its_tasks(database: Database) -> None:
    agent_id = "agent"
    await write_version_2(database, agent_id)
    store = database.store()
    await store.open()
    try:
        old = with_state(make_task("old", state=TaskState.WORKING), TaskState.WORKING)
        # Tasks written before owners existed have none.
        assert await store.get_task_record(agent_id, "old") == StoredTask(old, 2, None)
        assert [e.seq for e in await store.read_events(agent_id, "old")] == [1, 2]
        assert (await store.list_tasks(agent_id, TaskQuery())).tasks == [old]
        assert (await store.list_tasks(agent_id, TaskQuery(owner="alice"))).total_size == 0
        # The migration counted the tasks already there (totalSize of a page that is not
        # the whole result comes from the counts).
        await store.save_task(agent_id, make_task("later"), owner="bob")
        assert (await store.list_tasks(agent_id, TaskQuery(page_size=1))).total_size == 2
        working = TaskQuery(page_size=1, state=TaskState.WORKING)
        assert (await store.list_tasks(agent_id, working)).tasks == [old]
        assert await store.delete_task(agent_id, "later")
        # Their log continues, and new tasks record their owner.
        done = with_state(old, TaskState.COMPLETED)
        await store.save_task(
            agent_id, done, [status_event(3, old, TaskState.COMPLETED)], owner="alice"
        )
        assert await store.get_task_record(agent_id, "old") == StoredTask(done, 3, None)
        new = make_task("new")
        await store.save_task(agent_id, new, [snapshot_event(1, new)], owner="alice")
        page = await store.list_tasks(agent_id, TaskQuery(owner="alice"))
        assert (page.tasks, page.total_size) == ([new], 1)
        assert (await store.list_tasks(agent_id, TaskQuery(page_size=1))).total_size == 2
        ended = TaskQuery(page_size=1, state=TaskState.COMPLETED)
        assert (await store.list_tasks(agent_id, ended)).total_size == 1
    finally:
        await store.close()
    version, columns, indexes = await schema_of(database)
    assert version == SCHEMA_VERSION
    assert "owner" in columns
    assert {"ix_a2a_tasks_owner", "ix_a2a_tasks_state"} <= indexes
    # PostgreSQL's foreign keys are dropped (v10); a SQLite file keeps its declarations,
    # unenforced (the delete above and the contract suite behave the same either way).
    refers = [] if database.url.startswith("postgresql") else ["a2a_tasks"]
    assert await foreign_keys_of(database) == {
        "a2a_task_events": refers,
        "a2a_push_configs": refers,
    }

    # Opening the migrated database again changes nothing.
    again = database.store()
    await again.open()
    try:
        assert (await again.get_task_record(agent_id, "new")) == StoredTask(new, 1, "alice")
    finally:
        await again.close()


async def test_a_newer_schema_is_refused(database: Database) -> None:
    store = database.store()
    await store.open()
    await store.close()
    engine = database.engine()
    try:
        async with engine.begin() as conn:
            await conn.execute(v2_version.update().values(version=SCHEMA_VERSION + 1))
    finally:
        await engine.dispose()
    with pytest.raises(RuntimeError, match=f"schema version {SCHEMA_VERSION + 1}"):
        await database.store().open()


async def test_postgresql_a_push_config_never_outlives_its_task(database: Database) -> None:
    """No foreign key since v10: a push config written while its task is deleted goes with
    it, and one written while the delete is in flight is refused (TaskNotFound)."""
    if not database.url.startswith("postgresql"):
        pytest.skip("SQLite has one writer at a time: nothing runs in between")
    store = database.store()
    await store.open()
    engine = database.engine()
    task = make_task("t")
    key = {"p_agent": "agent", "p_task": task.id}
    config = {**key, "p_config": "c0", "p_data": msgspec.json.encode(push_config("c0"))}
    try:
        await store.save_task("agent", task, [snapshot_event(1, task)])
        # A config written (not yet committed): the delete waits, then deletes it too.
        async with engine.connect() as other:
            assert (await other.execute(Statements("postgresql").set_push, config)).rowcount
            deleting = asyncio.ensure_future(store.delete_task("agent", task.id))
            await until_waiting_on_a_lock(engine)
            await other.commit()
        assert await deleting is True
        assert await store.list_push_configs("agent", task.id) == []
        # A delete in flight: the config write waits, then finds the task gone.
        await store.save_task("agent", task, [snapshot_event(1, task)])
        async with engine.connect() as other:
            await other.execute(DELETE_TASK, key)
            setting = asyncio.ensure_future(
                store.set_push_config("agent", task.id, push_config("c1"))
            )
            await until_waiting_on_a_lock(engine)
            await other.commit()
        with pytest.raises(TaskNotFoundError):
            await setting
        assert await store.list_push_configs("agent", task.id) == []
    finally:
        await store.close()
        await engine.dispose()


# --- PostgreSQL connections --------------------------------------------------------------


async def test_postgresql_saves_go_on_after_the_server_dropped_the_connections() -> None:
    """Pooled connections the server terminated are replaced before a batch is sent on them,
    so saves after a database restart (or a killed backend) simply work."""
    name = f"a2a-test-{uuid.uuid4().hex[:12]}"
    store = SqlStore(
        POSTGRES_URL,
        engine_options={"connect_args": {"server_settings": {"application_name": name}}},
    )
    try:
        await store.open()
    except (ImportError, OSError) as exc:
        missing_service(f"postgresql unavailable: {type(exc).__name__}: {exc}")
    agent_id = f"agent-{uuid.uuid4().hex}"
    admin = Database(POSTGRES_URL, {}).engine()
    try:
        first = make_task("first")
        await store.save_task(agent_id, first, [snapshot_event(1, first)])
        async with admin.connect() as conn:
            terminate = text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = :name"
            )
            assert (await conn.execute(terminate, {"name": name})).scalar_one() >= 1
        await until_backends_gone(admin, name)
        await asyncio.sleep(0.05)  # and the client's event loop has read the sockets' end
        second = make_task("second")
        await store.save_task(agent_id, second, [snapshot_event(1, second)])
        assert await store.get_task_record(agent_id, second.id) == StoredTask(second, 1, None)
        assert await store.get_task_record(agent_id, first.id) == StoredTask(first, 1, None)
        # Reads and deletes too.
        async with admin.connect() as conn:
            await conn.execute(terminate, {"name": name})
        await until_backends_gone(admin, name)
        await asyncio.sleep(0.05)  # and the client's event loop has read the sockets' end
        assert await store.get_task(agent_id, first.id) == first
    finally:
        for task_id in ("first", "second"):
            await store.delete_task(agent_id, task_id)
        await store.close()
        await admin.dispose()


async def test_postgresql_a_save_the_database_refuses_fails_alone() -> None:
    """Saves are written in batches; one the database refuses (PostgreSQL text cannot hold
    NUL) fails on its own, and the saves sent with it are written all the same."""
    store = SqlStore(POSTGRES_URL)
    try:
        await store.open()
    except (ImportError, OSError) as exc:
        missing_service(f"postgresql unavailable: {type(exc).__name__}: {exc}")
    agent_id = f"agent-{uuid.uuid4().hex}"
    good = [make_task(f"good-{i}") for i in range(6)]
    bad = make_task("bad", context_id="ctx\x00nul")
    try:
        results = await asyncio.gather(
            *(store.save_task(agent_id, t, [snapshot_event(1, t)]) for t in good[:3]),
            store.save_task(agent_id, bad, [snapshot_event(1, bad)]),
            *(store.save_task(agent_id, t, [snapshot_event(1, t)]) for t in good[3:]),
            return_exceptions=True,
        )
        assert results[:3] == [None] * 3 and results[4:] == [None] * 3
        assert isinstance(results[3], Exception)
        assert not isinstance(results[3], LogConflictError)
        assert await store.get_task(agent_id, bad.id) is None
        for task in good:
            assert await store.get_task_record(agent_id, task.id) == StoredTask(task, 1, None)
    finally:
        for task in good:
            await store.delete_task(agent_id, task.id)
        await store.close()


@pytest.mark.parametrize(
    ("where", "index"),
    [
        ("state = 'TASK_STATE_COMPLETED'", "ix_a2a_tasks_state"),
        ("context_id = 'ctx-1'", "ix_a2a_tasks_context"),
    ],
)
async def test_filtered_lists_read_their_index(database: Database, where: str, index: str) -> None:
    """ListTasks filtered by status or context, and its count, read that filter's index in
    page order (v8), not the agent's tasks in order (issue 18 item 11)."""
    store = database.store()
    await store.open()
    try:
        for i in range(30):
            state = TaskState.WORKING if i % 3 else TaskState.COMPLETED
            task = with_state(make_task(f"t{i:02d}", f"ctx-{i % 3}", state), state)
            await store.save_task("agent", task, [snapshot_event(1, task)])
        page = await store.list_tasks("agent", TaskQuery(state=TaskState.COMPLETED, page_size=4))
        assert page.total_size == 10 and len(page.tasks) == 4
    finally:
        await store.close()
    engine = database.engine()
    where = f"agent_id = 'agent' AND {where}"
    page_sql = (
        f"SELECT updated_at, task_id FROM a2a_tasks WHERE {where} "
        "ORDER BY updated_at DESC, task_id DESC LIMIT 5"
    )
    count_sql = f"SELECT count(*) FROM a2a_tasks WHERE {where}"
    try:
        async with engine.connect() as conn:
            plans = []
            for sql in (page_sql, count_sql):
                if conn.dialect.name == "sqlite":
                    rows = await conn.execute(text(f"EXPLAIN QUERY PLAN {sql}"))
                    plans.append(" ".join(str(r[-1]) for r in rows))
                else:  # the planner may scan a small table anyway: ask whether it can use it
                    await conn.execute(text("SET enable_seqscan = off"))
                    rows = await conn.execute(text(f"EXPLAIN {sql}"))
                    plans.append(" ".join(str(r[0]) for r in rows))
    finally:
        await engine.dispose()
    for plan in plans:
        assert index in plan, plan
    assert "TEMP B-TREE" not in plans[0] and "Sort" not in plans[0].split("Index")[0], plans[0]


async def test_later_pages_repeat_the_first_pages_total(database: Database) -> None:
    """totalSize is counted for the first page; the page token carries it to later pages,
    which do not count again (tasks saved meanwhile show in the next first page)."""
    store = database.store()
    await store.open()
    try:
        for i in range(7):
            task = make_task(f"t{i}")
            await store.save_task("agent", task, [snapshot_event(1, task)])
        first = await store.list_tasks("agent", TaskQuery(page_size=3))
        assert first.total_size == 7
        late = make_task("late")
        await store.save_task("agent", late, [snapshot_event(1, late)])
        token = first.next_page_token
        second = await store.list_tasks("agent", TaskQuery(page_size=3, page_token=token))
        assert second.total_size == 7
        assert (await store.list_tasks("agent", TaskQuery(page_size=3))).total_size == 8
    finally:
        await store.close()
