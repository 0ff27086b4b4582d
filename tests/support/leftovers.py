"""What a test session leaves on the machine's shared servers (issue 30, item 8).

The tests write into databases of their own (``POSTGRES_URL``: made and dropped by the
session) and under Redis key prefixes of their own (``SESSION_PREFIX…``). The session's
last step (``tests/conftest.py``, ``pytest_sessionfinish`` of the process that started it)
compares the database the tests are named (``A2A_HUB_TEST_POSTGRES_URL``, by default
``test``) with a snapshot taken at its start, row counts of every table, and looks for keys
under this session's prefixes and new keys under the hub's default prefix (``a2a:``). A
changed table or a new ``a2a:`` key fails the session, naming it. Keys left under this
session's own random prefixes are named (a warning, so the test that left them can be
found) and deleted: they are this session's alone, so deleting them leaves the machine as
found whichever test wrote them last (a killed process's lease, a limiter's window).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from tests.support.stores import POSTGRES_BASE_URL, REDIS_URL, SESSION_PREFIX

__all__ = ["Snapshot", "differences", "purge_session_keys", "snapshot", "stray_session_keys"]

#: The key prefix of a hub on Redis given no ``prefix=`` (stores/redis/options.py).
DEFAULT_PATTERN = "a2a:*"


@dataclass
class Snapshot:
    """Row counts of the named database's tables (None: PostgreSQL was not reachable) and
    the keys under the default prefix (None: Redis was not reachable)."""

    rows: dict[str, int] | None = None
    default_keys: set[str] | None = field(default=None)


async def _rows() -> dict[str, int] | None:
    try:
        import asyncpg

        conn = await asyncpg.connect(POSTGRES_BASE_URL, timeout=10)
    except Exception:
        return None
    try:
        names = await conn.fetch(
            "SELECT schemaname, tablename FROM pg_tables "
            "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        )
        counts: dict[str, int] = {}
        for row in names:
            table = f'"{row["schemaname"]}"."{row["tablename"]}"'
            counts[table] = int(await conn.fetchval(f"SELECT count(*) FROM {table}"))
        return counts
    finally:
        await conn.close()


async def _keys(pattern: str) -> set[str] | None:
    try:
        import redis.asyncio as aioredis

        client = aioredis.from_url(REDIS_URL.partition("?")[0], socket_timeout=10)
        try:
            return {k.decode() async for k in client.scan_iter(match=pattern, count=1000)}
        finally:
            await client.aclose()
    except Exception:
        return None


async def snapshot() -> Snapshot:
    return Snapshot(rows=await _rows(), default_keys=await _keys(DEFAULT_PATTERN))


async def stray_session_keys() -> list[str]:
    """Keys left under this session's own prefixes (deleted next by
    :func:`purge_session_keys`), one line naming a few of them; empty if none."""
    left = await _keys(SESSION_PREFIX + "*")
    if not left:
        return []
    return [
        f"Redis {REDIS_URL}: {len(left)} keys left under this session's prefixes, deleted "
        f"now: {sorted(left)[:5]}"
    ]


async def differences(before: Snapshot) -> list[str]:
    """What changed since ``before`` on the shared servers, one line each."""
    found: list[str] = []
    after = await _rows()
    if before.rows is not None and after is not None:
        for table in sorted(set(before.rows) | set(after)):
            was, now = before.rows.get(table, 0), after.get(table, 0)
            if was != now:
                found.append(f"PostgreSQL {POSTGRES_BASE_URL}: {table} had {was} rows, now {now}")
    default_now = await _keys(DEFAULT_PATTERN)
    if before.default_keys is not None and default_now is not None:
        new = sorted(default_now - before.default_keys)
        if new:
            found.append(f"Redis {REDIS_URL}: {len(new)} new keys under a2a: ({new[:3]}…)")
    return found


async def purge_session_keys() -> None:
    """Delete every key under this session's prefixes (after :func:`differences` named them)."""
    with contextlib.suppress(Exception):
        import redis.asyncio as aioredis

        client = aioredis.from_url(REDIS_URL.partition("?")[0], socket_timeout=10)
        try:
            async for key in client.scan_iter(match=SESSION_PREFIX + "*", count=1000):
                await client.delete(key)
        finally:
            await client.aclose()
