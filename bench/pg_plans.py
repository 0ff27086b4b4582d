"""What the PostgreSQL store's plan settings cost (issue 29).

The store's batch functions and connections run with ``enable_seqscan = off``, so that
the plans PostgreSQL caches stay index scans on tables analyzed while empty.  This
measures, in a schema of its own in ``BENCH_POSTGRES_URL`` (dropped afterwards), the time
of one batch of saves through ``a2a_save_tasks_v6`` and of one prepared read by key, with
no setting, with ``enable_seqscan = off`` and with ``plan_cache_mode = force_custom_plan``
(the alternative, which also holds), in alternated rounds on fresh connections:

    .venv/bin/python bench/pg_plans.py [ROUNDS] [BATCHES]

Figures are medians per mode; on a shared machine compare them within one run only.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
import uuid
from typing import Any

import asyncpg

from a2a_hub.stores.sql import SqlStore
from a2a_hub.stores.sql.pg_writer import _SAVE_SQL
from a2a_hub.stores.sql.schema import SAVE_TASKS_WITH_DELIVERIES

URL = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
MODES = {
    "none": None,
    "enable_seqscan = off": ("enable_seqscan", "off"),
    "force_custom_plan": ("plan_cache_mode", "force_custom_plan"),
}
BATCH = 16  # saves per batch: a new task's first event, then 1 and 2 more events
READ = "SELECT data FROM a2a_tasks WHERE agent_id = $1 AND task_id = $2"


def _save_args(agent: str, ids: list[str], first: int, count: int, state: str) -> list[Any]:
    n = len(ids)
    blob = b'{"kind":"status-update","status":{"state":"working"}}'
    return [
        [agent] * n,
        ids,
        ["ctx"] * n,
        [state] * n,
        [time.time()] * n,
        [blob * 4] * n,
        [None] * n,
        [first] * n,
        [count] * n,
        [blob] * (n * count),
        None,
        [0] * n,
        *([] for _ in range(8)),
    ]


async def _connect(schema: str, setting: tuple[str, str] | None) -> asyncpg.Connection:
    settings = {"search_path": schema, "synchronous_commit": "off"}
    if setting is not None:
        settings[setting[0]] = setting[1]
    return await asyncpg.connect(URL, server_settings=settings)


async def _round(schema: str, mode: str, batches: int) -> tuple[float, float]:
    """One round of ``mode``: µs per batch of saves, µs per read by key."""
    admin = await _connect(schema, None)
    try:
        await admin.execute(f"ALTER FUNCTION {SAVE_TASKS_WITH_DELIVERIES} RESET ALL")
        if MODES[mode] is not None:
            name, value = MODES[mode]  # type: ignore[misc]
            await admin.execute(f"ALTER FUNCTION {SAVE_TASKS_WITH_DELIVERIES} SET {name} = {value}")
    finally:
        await admin.close()
    conn = await _connect(schema, MODES[mode])  # fresh session: plans made anew
    try:
        agent = f"{mode}-{uuid.uuid4().hex[:8]}"
        began = time.perf_counter()
        for b in range(batches):
            ids = [f"t{b}-{i}" for i in range(BATCH)]
            await conn.fetchval(_SAVE_SQL, *_save_args(agent, ids, 1, 1, "submitted"))
            await conn.fetchval(_SAVE_SQL, *_save_args(agent, ids, 2, 1, "working"))
            await conn.fetchval(_SAVE_SQL, *_save_args(agent, ids, 3, 2, "completed"))
        per_batch = (time.perf_counter() - began) / (3 * batches) * 1e6
        read = await conn.prepare(READ)
        reads = batches * BATCH
        began = time.perf_counter()
        for i in range(reads):
            await read.fetchval(agent, f"t{i // BATCH}-{i % BATCH}")
        per_read = (time.perf_counter() - began) / reads * 1e6
    finally:
        await conn.close()
    return per_batch, per_read


async def main(rounds: int, batches: int) -> None:
    schema = f"a2a_bench_plans_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(URL)
    await admin.execute(f"CREATE SCHEMA {schema}")
    try:
        store = SqlStore(
            URL, engine_options={"connect_args": {"server_settings": {"search_path": schema}}}
        )
        await store.open()
        await store.close()
        for table in ("a2a_tasks", "a2a_task_events", "a2a_task_counts"):
            await admin.execute(f"ANALYZE {schema}.{table}")  # analyzed while empty
        found: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
        for r in range(rounds):
            order = list(MODES) if r % 2 == 0 else list(reversed(MODES))
            for mode in order:
                found[mode].append(await _round(schema, mode, batches))
        print(f"{rounds} rounds x {batches} x 3 batches of {BATCH} saves, tables analyzed empty")
        for mode, figures in found.items():
            batch = statistics.median(f[0] for f in figures)
            read = statistics.median(f[1] for f in figures)
            print(f"  {mode:22} {batch:8.0f} us per batch   {read:6.0f} us per read by key")
    finally:
        await admin.execute(f"DROP SCHEMA {schema} CASCADE")
        await admin.close()


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    asyncio.run(main(*(args + [4, 100][len(args) :])))
