"""Shared fixtures: an in-process hub and an HTTP client bound to it; and the order the
tests run in (the slow ones first)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest
from hypothesis import HealthCheck, settings

from a2a_hub import Hub, create_app
from tests.support import leftovers, orphans
from tests.support.agents import ChattyExecutor, PizzaExecutor, SlowExecutor
from tests.support.hub import LiveServer, make_hub
from tests.support.stores import (
    PURGE_AT_EXIT,
    create_worker_database,
    drop_worker_database,
    purge_redis,
)

# Property tests check behaviour, not speed: no per-example deadline and no "too slow"
# health check, which fail on a loaded machine (CI runs the suite on 4 workers, 2 cores).
settings.register_profile("a2a-hub", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("a2a-hub")

# whatever ends a test process, the hubs, workers and servers it started end with it
orphans.install()

#: Tests that start real processes or wait on purpose (seconds each), slowest first.  They
#: run before the rest: ``make test`` runs the suite on several workers (pytest-xdist),
#: which take tests in this order, so the long ones overlap the many short ones instead
#: of keeping one worker busy at the end.  Where a test lives is unchanged.
RUN_FIRST = (
    "tests/system/test_durable_process.py",
    "tests/system/test_workers_process.py",  # one xdist_group: one worker runs it all
    "tests/agents/test_framework_langgraph.py",
    "tests/agents/test_framework_a2a_sdk.py",
    "tests/push/test_push_process.py",
    "tests/system/test_idempotent_process.py",
    "tests/scenarios/test_scenario.py",
    "tests/agents/test_adk.py",
    "tests/scenarios/test_debate_adk.py",
    "tests/system/test_shutdown_process.py",
    "tests/system/test_multiprocess.py",
    "tests/server/test_websocket_drops.py",
    "tests/system/test_serve_process.py",
    "tests/cli/test_cli_startup.py",
    "tests/cli/test_cli_client.py",
    "tests/push/test_push_cli.py",
    "tests/scenarios/test_pipeline_scenario.py",
    "tests/test_logging.py",
    "tests/system/test_memory_process.py",
    "tests/system/test_sqlite_restart.py",
    "tests/test_readme.py",
    "tests/cli/",
    "tests/server/test_chat_page.py",
    "tests/tools/",
    "tests/system/",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests of :data:`RUN_FIRST` first, in its order (a stable sort: the order
    within a module, and of every other test, is the collection's)."""

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        for n, prefix in enumerate(RUN_FIRST):
            if path.startswith(prefix):
                return n
        return len(RUN_FIRST)

    items.sort(key=rank)


def pytest_sessionstart(session: pytest.Session) -> None:
    """In the process that started the session (not an xdist worker): a snapshot of what
    the shared servers hold, for :func:`pytest_sessionfinish`."""
    if not hasattr(session.config, "workerinput"):
        session.config.stash[_BEFORE] = asyncio.run(leftovers.snapshot())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The session's last check, once every worker is done: the tests left no row, key or
    agent in the machine's PostgreSQL database they are named and in its Redis
    (``tests/support/leftovers.py``); otherwise the session fails, saying what is left."""
    before = session.config.stash.get(_BEFORE, None)
    if before is None:
        return
    found = asyncio.run(leftovers.differences(before))
    stray = asyncio.run(leftovers.stray_session_keys())
    asyncio.run(leftovers.purge_session_keys())
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for line in stray:
            reporter.write_line(line, yellow=True)
    if found:
        for line in ["the tests left this behind on the machine's servers:", *found]:
            if reporter is not None:
                reporter.write_line(line, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_BEFORE = pytest.StashKey["leftovers.Snapshot"]()


@pytest.fixture(scope="session", autouse=True)
def _purge_shared_redis() -> Iterator[None]:
    """Delete, at the end of the session, the keys that server processes left in the
    machine's Redis under the prefixes tests gave them."""
    yield

    async def purge() -> None:
        for url in PURGE_AT_EXIT:
            with contextlib.suppress(Exception):  # Redis gone meanwhile: nothing to tidy
                await purge_redis(url)

    if PURGE_AT_EXIT:
        asyncio.run(purge())


@pytest.fixture(scope="session", autouse=True)
def _worker_database() -> Iterator[None]:
    """Under pytest-xdist, this worker's PostgreSQL database (``POSTGRES_URL``), made
    before the first test and dropped after the last."""
    with contextlib.suppress(Exception):  # no server, no driver: the tests say so
        asyncio.run(create_worker_database())
    yield
    with contextlib.suppress(Exception):
        asyncio.run(drop_worker_database())


@pytest.fixture
def hub_factory() -> Callable[..., Hub]:
    return make_hub


@pytest.fixture
async def hub() -> AsyncIterator[Hub]:
    h = make_hub(
        {
            "echo": "echo",
            "echo-msg": "echo?reply=message",
            "pizza": PizzaExecutor(),
            "slow": SlowExecutor(),
        }
    )
    await h.start()
    yield h
    await h.close()


@pytest.fixture
async def client(hub: Hub) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://hub.test") as c:
        yield c


@pytest.fixture
async def live(hub_factory: Callable[..., Hub]) -> AsyncIterator[LiveServer]:
    hub = hub_factory(
        {
            "echo": "echo",
            "pizza": PizzaExecutor(),
            "slow": SlowExecutor(),
            "chatty": ChattyExecutor(chunks=20, pause_every=2, delay=0.3),
        },
        default_agent="echo",
    )
    async with LiveServer(hub) as server:
        yield server
