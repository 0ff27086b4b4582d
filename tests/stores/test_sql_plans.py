"""PostgreSQL: the store's cached plans stay index scans on tables analyzed while empty.

A PostgreSQL without autovacuum never analyzes a table again on its own.  Statements are
planned once per connection (prepared statements, PL/pgSQL functions, the checks of
foreign keys), and after five runs PostgreSQL keeps a generic plan if it looks no dearer:
on a table whose statistics say "empty" that was a sequential scan, which every save and
read by key then repeated however large the table grew (bench/README.md, issue 29).  The
test makes exactly that database (a schema of its own, its tables analyzed while empty),
runs a few thousand saves, claims and reads through one store, and asks PostgreSQL how many
rows sequential scans of those tables read.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from a2a_hub.protocol.types import TaskState
from a2a_hub.stores.base import MessageClaim
from a2a_hub.stores.sql import SqlStore
from tests.support.stores import POSTGRES_URL, missing_service, until_backends_gone

from .test_contract import make_task, snapshot_event, status_event, with_state

#: The tables the store reads by key on its hot path.
HOT_TABLES = ("a2a_tasks", "a2a_task_events", "a2a_message_claims")
#: Tasks written: three saves (four events), one message claim and two reads each.
TASKS = 800
#: How many are in flight together (the writer batches them, as under load).
AT_ONCE = 16


def _engine(options: dict[str, Any] | None = None) -> AsyncEngine:
    return create_async_engine(
        POSTGRES_URL.replace("postgresql://", "postgresql+asyncpg://"), **(options or {})
    )


async def _one_send(store: SqlStore, agent_id: str, i: int) -> None:
    """What a blocking SendMessage asks of the store: a claim, three saves, then reads."""
    task = make_task(f"t{i}")
    claim = MessageClaim(task_id=task.id, instance="a", created=time.time())
    assert await store.claim_message(agent_id, "alice", f"m{i}", claim) is None
    await store.save_task(agent_id, task, [snapshot_event(1, task)], owner="alice")
    working = with_state(task, TaskState.WORKING)
    await store.save_task(agent_id, working, [status_event(2, working, TaskState.WORKING)])
    done = with_state(task, TaskState.COMPLETED)
    await store.save_task(
        agent_id,
        done,
        [status_event(3, done, TaskState.WORKING), status_event(4, done, TaskState.COMPLETED)],
    )
    assert await store.get_task(agent_id, task.id) == done
    assert [e.seq for e in await store.read_events(agent_id, task.id, after=2)] == [3, 4]


async def _sequential_scans(admin: AsyncEngine, schema: str) -> dict[str, tuple[int, int]]:
    """Per hot table of ``schema``: sequential scans, and the rows they read."""
    query = text(
        "SELECT relname, seq_scan, seq_tup_read FROM pg_stat_user_tables WHERE schemaname = :schema"
    )
    async with admin.connect() as conn:  # a fresh transaction: fresh statistics
        rows = (await conn.execute(query, {"schema": schema})).all()
    return {name: (int(n), int(read)) for name, n, read in rows if name in HOT_TABLES}


async def test_saves_and_reads_keep_index_plans_on_tables_analyzed_while_empty() -> None:
    schema = f"plans_{uuid.uuid4().hex[:12]}"
    name = f"a2a-plans-{uuid.uuid4().hex[:12]}"
    admin = _engine()
    try:
        async with admin.begin() as conn:
            await conn.execute(text(f"CREATE SCHEMA {schema}"))
    except (ImportError, OSError) as exc:
        await admin.dispose()
        missing_service(f"postgresql unavailable: {type(exc).__name__}: {exc}")
    settings = {"search_path": schema, "application_name": name}
    store = SqlStore(POSTGRES_URL, engine_options={"connect_args": {"server_settings": settings}})
    try:
        await store.open()
        async with admin.connect() as conn:
            for table in HOT_TABLES:
                await conn.execute(text(f"ANALYZE {schema}.{table}"))
            analyzed = await conn.execute(
                text(
                    "SELECT c.relname, c.reltuples FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = :schema AND c.relname = ANY(:tables)"
                ),
                {"schema": schema, "tables": list(HOT_TABLES)},
            )
            # analyzed, and empty (-1 would be "never analyzed", planned as 10 pages)
            assert dict(analyzed.all()) == dict.fromkeys(HOT_TABLES, 0.0)
        before = await _sequential_scans(admin, schema)
        for start in range(0, TASKS, AT_ONCE):
            sends = range(start, min(start + AT_ONCE, TASKS))
            await asyncio.gather(*(_one_send(store, "agent", i) for i in sends))
        await store.close()  # its backends report their counts as they exit
        await until_backends_gone(admin, name)
        after = await _sequential_scans(admin, schema)
    finally:
        await store.close()
        async with admin.begin() as conn:
            await conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        await admin.dispose()
    grown = {t: (after[t][0] - before[t][0], after[t][1] - before[t][1]) for t in HOT_TABLES}
    # Without the fix: thousands of scans reading millions of rows (each save and read
    # scanned the tasks or the events).  With it, none that grow with the saves (a few
    # of the empty tables, planned before the first rows, read nothing).
    for table, (scans, rows_read) in grown.items():
        assert scans <= 10 and rows_read <= TASKS, (
            f"{table}: {scans} sequential scans read {rows_read} rows during "
            f"{TASKS * 6} statements: {grown}"
        )
