"""Backends of the store contract suite (its fixtures are in ``tests/stores/conftest.py``).

Every test that takes the ``store`` fixture runs once per entry of
:data:`BACKENDS`.  A new backend (Redis, say) joins the suite by adding one
:class:`Backend` line.  Backends that need a server are skipped with the reason
when it (or its driver) is missing, except when ``CI=true``: then they fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn
from urllib.parse import urlsplit, urlunsplit

from a2a_hub.stores import Store, TaskQuery, open_store

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

#: The database the tests name (``A2A_HUB_TEST_POSTGRES_URL``).
POSTGRES_BASE_URL = os.environ.get(
    "A2A_HUB_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
#: pytest-xdist's name of this worker (``gw0``, ``gw1`` …), or "" when not a worker.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
#: This test session's token, shared by its xdist workers (they inherit the environment
#: of the process that starts them): in every Redis key prefix and database name the
#: session makes, so that the session's end finds what it left (tests/conftest.py).
SESSION = os.environ.setdefault("A2A_HUB_TEST_SESSION", uuid.uuid4().hex[:8])


def _database_of_this_worker(url: str) -> str:
    """A database of this process's own beside ``url`` (``test_gw0_<session>`` …, or
    ``test_main_<session>`` without xdist; made by :func:`create_worker_database`, dropped
    by :func:`drop_worker_database`): the tests never write into the database they are
    named (``test``, which may hold what people keep there), and two sessions at once, or
    a test that reads what the whole database holds, see only their own."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{parts.path}_{XDIST_WORKER or 'main'}_{SESSION}"))


#: The PostgreSQL database of the tests.
POSTGRES_URL = _database_of_this_worker(POSTGRES_BASE_URL)


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(POSTGRES_BASE_URL, timeout=10)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def create_worker_database() -> None:
    """Make this process's database (see :data:`POSTGRES_URL`) if it is missing.  A missing
    server or driver is left to the tests that need it."""
    import asyncpg

    name = urlsplit(POSTGRES_URL).path.lstrip("/")
    with contextlib.suppress(asyncpg.DuplicateDatabaseError):
        await _admin(f'CREATE DATABASE "{name}"')


async def drop_worker_database() -> None:
    """Drop this process's database (see :data:`POSTGRES_URL`)."""
    name = urlsplit(POSTGRES_URL).path.lstrip("/")
    await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


REDIS_URL = os.environ.get("A2A_HUB_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
IN_CI = os.environ.get("CI", "").strip().lower() == "true"


def missing_service(message: str) -> NoReturn:
    """Skip the test because a service it needs is missing, or fail it under ``CI=true``
    (CI has every service: a missing one is a broken machine, not a reason to skip)."""
    import pytest

    if IN_CI:
        pytest.fail(f"{message} (CI=true: a missing service is a failure, not a skip)")
    pytest.skip(message)


def redis_test_url(**options: object) -> str:
    """:data:`REDIS_URL` with a fresh random key prefix (and more store options)."""
    query = "&".join(f"{k}={v}" for k, v in {"prefix": _random_prefix(), **options}.items())
    return f"{REDIS_URL}{'&' if '?' in REDIS_URL else '?'}{query}"


def _random_prefix() -> str:
    return f"{SESSION_PREFIX}{uuid.uuid4().hex[:12]}"


#: The start of every Redis key prefix this session's tests give (:func:`redis_test_url`).
SESSION_PREFIX = f"a2a-test-{SESSION}-"


#: Redis URLs (each with a key prefix of its own) given to server processes; the session's
#: last fixture (``tests/conftest.py``) purges them.
PURGE_AT_EXIT: list[str] = []


async def purge_redis(url: str) -> None:
    """Delete every key under the prefix of ``url`` (whatever the test left behind)."""
    from a2a_hub.stores.redis import RedisStore

    store = RedisStore(url)
    await store.open()
    try:
        await store.purge()
    finally:
        await store.close()


@dataclass(frozen=True)
class Backend:
    """One store backend under test."""

    name: str
    url: Callable[[Path], str]  # the store URL, given the test's tmp_path
    durable: bool  # data survives closing the store and opening it again
    shared: bool  # a server shared between tests (clean up what a test wrote)
    enforces_seq: bool = True  # rejects events that do not continue the log
    # Deletes everything stored under the test's URL, after the test (pass or fail).
    purge: Callable[[str], Awaitable[None]] | None = None


BACKENDS = [
    Backend("memory", lambda tmp: "memory://", durable=False, shared=False),
    Backend("sqlite", lambda tmp: f"sqlite:///{tmp}/data/hub.db", durable=True, shared=False),
    Backend("postgresql", lambda tmp: POSTGRES_URL, durable=True, shared=True),
    # A random key prefix per test, every key of it deleted afterwards.
    Backend("redis", lambda tmp: redis_test_url(), durable=True, shared=True, purge=purge_redis),
]

# Why a backend could not be used, so that later tests skip at once.
unavailable: dict[str, str] = {}


class StoreHarness:
    """Opens stores of one backend at one URL, and closes and cleans up after the test."""

    def __init__(self, backend: Backend, url: str) -> None:
        self.backend = backend
        self.url = url
        self.agent_ids: list[str] = []
        self._opened: list[Store] = []
        self.store: Store  # the first store, opened by the ``harness`` fixture

    def new_agent_id(self) -> str:
        """A fresh agent id: tests on a shared server never see each other's tasks."""
        agent_id = f"agent-{uuid.uuid4().hex}"
        self.agent_ids.append(agent_id)
        return agent_id

    async def open(self) -> Store:
        """A new, opened store on this backend's URL."""
        store = open_store(self.url)
        await store.open()
        self._opened.append(store)
        return store

    async def cleanup(self) -> None:
        """Delete every task the test wrote (on a shared server)."""
        if not self.backend.shared or not self.agent_ids:
            return
        store = await self.open()
        for agent_id in self.agent_ids:
            while tasks := (await store.list_tasks(agent_id, TaskQuery(page_size=500))).tasks:
                for task in tasks:
                    await store.delete_task(agent_id, task.id)
            while await store.purge_claims(agent_id, time.time() + 60, 500) == 500:
                pass

    async def aclose(self) -> None:
        """Close every store this harness opened, then purge what the test stored."""
        for store in self._opened:
            await store.close()
        if self.backend.purge is not None and self._opened:
            await self.backend.purge(self.url)


async def trim_log(store: Store, agent_id: str, task_id: str, upto: int) -> None:
    """Remove events ``1..upto`` of a task's log behind the store's back, as an operator's
    ``XTRIM``, Redis memory eviction or a clean-up job of the SQL table would (no store
    trims a log it still serves by itself; the memory store cannot be trimmed)."""
    from a2a_hub.stores.redis import RedisStore
    from a2a_hub.stores.sql import SqlStore

    if isinstance(store, RedisStore):
        key = store.keys(agent_id).events(task_id)
        await store.client.xtrim(key, minid=f"0-{upto + 1}", approximate=False)
    elif isinstance(store, SqlStore):
        from sqlalchemy import delete

        from a2a_hub.stores.sql.schema import events

        async with store.engine.begin() as conn:
            await conn.execute(
                delete(events).where(
                    events.c.agent_id == agent_id,
                    events.c.task_id == task_id,
                    events.c.seq <= upto,
                )
            )
    else:
        raise TypeError(f"{type(store).__name__} cannot be trimmed")


async def until_postgres_counts(
    engine: AsyncEngine,
    count_sql: str,
    params: Mapping[str, object],
    done: Callable[[int], bool],
    failure: str,
) -> None:
    """Until ``done`` holds for what ``count_sql`` counts (each time on a fresh connection:
    a fresh snapshot of ``pg_stat_activity``), polled every 10 ms; AssertionError with
    ``failure`` after 1000 polls."""
    from sqlalchemy import text

    query = text(count_sql)
    for _ in range(1000):
        async with engine.connect() as conn:
            if done((await conn.execute(query, dict(params))).scalar_one()):
                return
        await asyncio.sleep(0.01)
    raise AssertionError(failure)


async def until_backends_gone(engine: AsyncEngine, application_name: str) -> None:
    """Until no PostgreSQL backend of that ``application_name`` is left (terminated, or
    closed by its client: a backend reports its statistics as it exits)."""
    await until_postgres_counts(
        engine,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = :name",
        {"name": application_name},
        lambda n: n == 0,
        f"the backends of {application_name} did not exit",
    )


async def until_waiting_on_a_lock(engine: AsyncEngine) -> None:
    """Until a backend of the engine's database waits for a lock."""
    await until_postgres_counts(
        engine,
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'",
        {},
        lambda n: n > 0,
        "nobody waited for the lock",
    )
