"""Redis-only behaviour: TTLs, key prefixes, URL options, expiry of indexes, ties.

The store contract itself runs against Redis through ``tests.support.stores.BACKENDS``.
These tests need a Redis server (``A2A_HUB_TEST_REDIS_URL``, default
``redis://127.0.0.1:6379/0``); without it they skip, or fail when ``CI=true``.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from a2a_hub.protocol.errors import StoreUnavailableError, TaskNotFoundError
from a2a_hub.protocol.types import TaskState
from a2a_hub.stores import LogConflictError, StoredTask, TaskQuery, open_store
from tests.support.stores import IN_CI, missing_service, redis_test_url

from .test_contract import make_task, push_config, snapshot_event, status_event, with_state

try:
    from a2a_hub.stores.redis import RedisOptions, RedisStore
    from a2a_hub.stores.redis.scripts import LuaScript
except ImportError as exc:  # pragma: no cover - depends on the environment
    if IN_CI:
        raise
    pytest.skip(f"redis store unavailable: {exc}", allow_module_level=True)

OpenRedis = Callable[..., Awaitable[RedisStore]]


@pytest.fixture
async def open_redis() -> AsyncIterator[OpenRedis]:
    """Opens Redis stores, each under a fresh prefix; purges and closes them afterwards."""
    opened: list[RedisStore] = []

    async def factory(url: str | None = None, **options: object) -> RedisStore:
        store = RedisStore(url or redis_test_url(**options))
        try:
            await store.open()
        except (StoreUnavailableError, OSError) as exc:
            missing_service(f"redis store unavailable: {type(exc).__name__}: {exc}")
        opened.append(store)
        return store

    try:
        yield factory
    finally:
        for store in opened:
            await store.purge()
            await store.close()


async def keys_of(store: RedisStore) -> set[str]:
    return {k.decode() async for k in store.client.scan_iter(match=f"{store.prefix}:*")}


# --- URL options -----------------------------------------------------------------------


def test_url_options_are_parsed() -> None:
    store = RedisStore(
        "rediss://hub:s3cret@redis.example.com:6380/2"
        "?prefix=prod:a2a&task_ttl=60&history_ttl=120.5&push_ttl=30&socket_timeout=2"
    )
    options = store.options
    assert (options.prefix, options.task_ttl, options.history_ttl, options.push_ttl) == (
        "prod:a2a",
        60.0,
        120.5,
        30.0,
    )
    # The store's own options are not passed on to redis-py; the others are.
    assert options.connect_url == "rediss://hub:s3cret@redis.example.com:6380/2?socket_timeout=2"
    assert "s3cret" not in options.safe_url
    assert "s3cret" not in repr(store)
    assert options.safe_url.startswith("rediss://hub:***@redis.example.com:6380/2?")

    defaults = RedisOptions.from_url("redis://localhost")
    assert (defaults.prefix, defaults.task_ttl, defaults.history_ttl, defaults.push_ttl) == (
        "a2a",
        3600.0,
        86400.0,
        3600.0,
    )
    forever = RedisOptions.from_url("redis://localhost?task_ttl=0&history_ttl=0&push_ttl=0")
    assert (forever.task_ttl, forever.history_ttl, forever.push_ttl) == (0, 0, 0)
    hidden = RedisOptions.from_url("redis://localhost/0?password=hunter2")
    assert "hunter2" not in hidden.safe_url
    assert "hunter2" in hidden.connect_url


@pytest.mark.parametrize(
    ("query", "match"),
    [
        ("task_ttl=-1", "task_ttl"),
        ("task_ttl=soon", "task_ttl"),
        ("push_ttl=nan", "push_ttl"),
        ("prefix=", "prefix"),
        ("prefix=a{b}", "prefix"),
        ("task_ttl=100&history_ttl=50", "history_ttl"),  # the log would go before the task
        ("task_ttl=0&history_ttl=50", "history_ttl"),
        ("task_ttl=100&push_ttl=200", "push_ttl"),  # configs would outlive their task
        ("task_ttl=100&push_ttl=0", "push_ttl"),
    ],
)
def test_bad_url_options_are_explained(query: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        RedisStore(f"redis://localhost/0?{query}")


def test_open_store_serves_redis_urls() -> None:
    assert isinstance(open_store("redis://localhost:6379/0"), RedisStore)
    assert isinstance(open_store("rediss://u:p@localhost:6380/1?prefix=x"), RedisStore)


def test_missing_redis_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("redis", "redis.asyncio", "redis.exceptions"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "a2a_hub.stores.redis")
    with pytest.raises(ImportError, match=re.escape("pip install 'a2a-hub[redis]'")):
        open_store("redis://localhost:6379/0")


async def test_unreachable_server_is_store_unavailable() -> None:
    store = RedisStore("redis://:s3cret-pw@127.0.0.1:1/0?prefix=nowhere")
    with pytest.raises(StoreUnavailableError) as info:
        await store.open()
    assert "127.0.0.1:1" in info.value.message
    assert "s3cret-pw" not in info.value.message
    await store.close()


# --- TTLs ------------------------------------------------------------------------------


async def test_ended_tasks_get_their_ttls(open_redis: OpenRedis) -> None:
    store = await open_redis(task_ttl=100, history_ttl=200, push_ttl=50)
    k = store.keys("agent")
    task = make_task(state=TaskState.WORKING)
    await store.save_task("agent", task, [snapshot_event(1, task)])
    await store.set_push_config("agent", task.id, push_config("c1"))

    async def pttl() -> tuple[int, int, int]:
        c = store.client
        return (
            await c.pttl(k.task(task.id)),
            await c.pttl(k.events(task.id)),
            await c.pttl(k.push(task.id)),
        )

    assert await pttl() == (-1, -1, -1)  # running tasks never expire

    done = with_state(task, TaskState.COMPLETED)
    await store.save_task("agent", done, [status_event(2, task, TaskState.COMPLETED)])
    task_ms, log_ms, push_ms = await pttl()
    assert 99_000 < task_ms <= 100_000
    assert 199_000 < log_ms <= 200_000
    assert 49_000 < push_ms <= 50_000
    assert await store.client.zscore(k.expiring, task.id) is not None

    # The clock starts when the task ends: later saves and configs do not extend it.
    await asyncio.sleep(0.05)
    await store.save_task("agent", done)
    await store.set_push_config("agent", task.id, push_config("c2"))
    later = await pttl()
    assert later[0] <= task_ms - 40 and later[1] <= log_ms - 40 and later[2] <= push_ms - 40
    assert later[0] > 0 and later[2] > 0

    # A snapshot that is not terminal any more (the store allows it) is kept forever again.
    await store.save_task("agent", with_state(task, TaskState.WORKING))
    assert await pttl() == (-1, -1, -1)
    assert await store.client.zscore(k.expiring, task.id) is None
    assert not await store.client.exists(k.ended)


async def test_expired_tasks_leave_the_indexes(open_redis: OpenRedis) -> None:
    store = await open_redis(task_ttl=0.3, history_ttl=0.8, push_ttl=0.3)
    agent = "agent"
    k = store.keys(agent)
    gone, kept = make_task("gone", "ctx"), make_task("kept", "ctx", TaskState.WORKING)
    await store.save_task(agent, gone, [snapshot_event(1, gone)])
    await store.set_push_config(agent, gone.id, push_config("c1"))
    await store.save_task(
        agent, with_state(gone, TaskState.FAILED), [status_event(2, gone, TaskState.FAILED)]
    )
    await store.save_task(agent, kept, [snapshot_event(1, kept)])
    assert (await store.list_tasks(agent, TaskQuery())).total_size == 2

    await asyncio.sleep(0.45)
    assert await store.get_task(agent, gone.id) is None
    assert await store.get_task_at(agent, gone.id) is None
    assert await store.list_push_configs(agent, gone.id) == []
    for query in (TaskQuery(), TaskQuery(context_id="ctx"), TaskQuery(state=TaskState.WORKING)):
        page = await store.list_tasks(agent, query)
        assert [t.id for t in page.tasks] == ["kept"]
        assert page.total_size == 1
    failed = await store.list_tasks(agent, TaskQuery(state=TaskState.FAILED))
    assert (failed.tasks, failed.total_size) == ([], 0)
    # No index still mentions the expired task; its bookkeeping is gone too.
    for index in (k.tasks, k.context("ctx"), k.state(TaskState.FAILED.value)):
        assert await store.client.zscore(index, gone.id) is None
    assert not await store.client.exists(k.expiring, k.ended)

    # The log outlives the snapshot (history_ttl) ...
    assert [e.seq for e in await store.read_events(agent, gone.id)] == [1, 2]
    assert await store.last_seq(agent, gone.id) == 2
    # ... until the id is used again: a new task starts a new log.
    again = make_task("gone", "ctx-2")
    await store.save_task(agent, again, [snapshot_event(1, again)])
    assert await store.read_events(agent, gone.id) == [snapshot_event(1, again)]
    assert await store.get_task_at(agent, gone.id) == (again, 1)
    assert (await store.list_tasks(agent, TaskQuery(context_id="ctx"))).total_size == 1


async def test_expired_and_deleted_tasks_leave_the_owner_index(open_redis: OpenRedis) -> None:
    store = await open_redis(task_ttl=0.3, history_ttl=0.3, push_ttl=0.3)
    agent = "agent"
    k = store.keys(agent)
    gone, kept, deleted = make_task("gone"), make_task("kept"), make_task("deleted")
    for task in (gone, kept, deleted):
        await store.save_task(agent, task, [snapshot_event(1, task)], owner="alice")
    await store.save_task(
        agent, with_state(gone, TaskState.COMPLETED), [status_event(2, gone, TaskState.COMPLETED)]
    )
    assert await store.client.hget(k.ended_owner, gone.id) == b"alice"
    assert (await store.list_tasks(agent, TaskQuery(owner="alice"))).total_size == 3

    assert await store.delete_task(agent, deleted.id) is True
    await asyncio.sleep(0.45)
    page = await store.list_tasks(agent, TaskQuery(owner="alice"))
    assert ([t.id for t in page.tasks], page.total_size) == (["kept"], 1)
    assert await store.client.zrange(k.owner("alice"), 0, -1) == [b"kept"]
    assert not await store.client.exists(k.ended_owner)

    # The id of the expired task, used again, is a new task with its new creator.
    again = make_task("gone")
    await store.save_task(agent, again, [snapshot_event(1, again)], owner="bob")
    assert await store.get_task_record(agent, "gone") == StoredTask(again, 1, "bob")
    assert (await store.list_tasks(agent, TaskQuery(owner="alice"))).total_size == 1
    assert [t.id for t in (await store.list_tasks(agent, TaskQuery(owner="bob"))).tasks] == ["gone"]


async def test_logs_expire_after_history_ttl(open_redis: OpenRedis) -> None:
    store = await open_redis(task_ttl=0.2, history_ttl=0.3, push_ttl=0.1)
    task = make_task(state=TaskState.COMPLETED)
    await store.save_task("agent", task, [snapshot_event(1, task)])
    await asyncio.sleep(0.45)
    assert await store.read_events("agent", task.id) == []
    assert await store.last_seq("agent", task.id) == 0
    await store.list_tasks("agent", TaskQuery())  # sweeps what is due
    assert await keys_of(store) == set()


async def test_ttl_zero_keeps_ended_tasks(open_redis: OpenRedis) -> None:
    store = await open_redis(task_ttl=0, history_ttl=0, push_ttl=0)
    task = make_task(state=TaskState.COMPLETED)
    await store.save_task("agent", task, [snapshot_event(1, task)])
    await store.set_push_config("agent", task.id, push_config("c1"))
    k = store.keys("agent")
    for key in (k.task(task.id), k.events(task.id), k.push(task.id)):
        assert await store.client.pttl(key) == -1
    assert not await store.client.exists(k.expiring, k.ended)


# --- keys ------------------------------------------------------------------------------


async def test_prefixes_isolate_stores(open_redis: OpenRedis) -> None:
    one, two = await open_redis(), await open_redis()
    assert one.prefix != two.prefix
    task = make_task()
    await one.save_task("agent", task, [snapshot_event(1, task)])
    await one.set_push_config("agent", task.id, push_config("c1"))
    assert await two.get_task("agent", task.id) is None
    assert (await two.list_tasks("agent", TaskQuery())).total_size == 0
    with pytest.raises(TaskNotFoundError):
        await two.set_push_config("agent", task.id, push_config("c1"))

    other = with_state(task, TaskState.WORKING)
    await two.save_task("agent", other, [snapshot_event(1, other), snapshot_event(2, other)])
    assert await one.get_task_at("agent", task.id) == (task, 1)
    assert await two.get_task_at("agent", task.id) == (other, 2)
    assert all(key.startswith(f"{one.prefix}:") for key in await keys_of(one))
    assert await keys_of(one) and await keys_of(two)
    assert await two.purge() > 0
    assert await keys_of(two) == set()
    assert await one.get_task("agent", task.id) == task


async def test_ids_with_separators_never_share_keys(open_redis: OpenRedis) -> None:
    store = await open_redis()
    pairs = [("a", "b:c"), ("a:b", "c"), ("a}", "x"), ("a%7D", "x"), ("{a", "task:x")]
    for agent, task_id in pairs:
        task = make_task(task_id, context_id=f"ctx:{agent}")
        await store.save_task(agent, task, [snapshot_event(1, task)])
    for agent, task_id in pairs:
        page = await store.list_tasks(agent, TaskQuery())
        assert [(t.id, t.context_id) for t in page.tasks] == [(task_id, f"ctx:{agent}")]
        assert await store.last_seq(agent, task_id) == 1


async def test_delete_leaves_no_keys(open_redis: OpenRedis) -> None:
    store = await open_redis()
    task = make_task()
    await store.save_task("agent", task, [snapshot_event(1, task)], owner="alice")
    await store.set_push_config("agent", task.id, push_config("c1"))
    done = with_state(task, TaskState.COMPLETED)
    await store.save_task("agent", done, [status_event(2, task, TaskState.COMPLETED)])
    assert await keys_of(store)
    assert await store.delete_task("agent", task.id) is True
    assert await keys_of(store) == set()


# --- listing and saving ----------------------------------------------------------------


async def test_equal_updated_at_pages_by_task_id(
    open_redis: OpenRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await open_redis()
    monkeypatch.setattr("a2a_hub.stores.redis.tasks.now", lambda: 1_700_000_000.25)
    for i in range(7):
        state = TaskState.WORKING if i % 2 else TaskState.SUBMITTED
        await store.save_task("agent", make_task(f"t{i}", context_id="ctx", state=state))
    monkeypatch.setattr("a2a_hub.stores.redis.tasks.now", lambda: 1_600_000_000.5)
    await store.save_task("agent", make_task("older", context_id="ctx", state=TaskState.WORKING))

    async def walk(query: TaskQuery) -> list[str]:
        ids: list[str] = []
        while True:
            page = await store.list_tasks("agent", query)
            ids += [t.id for t in page.tasks]
            if not page.next_page_token:
                return ids
            query = TaskQuery(
                context_id=query.context_id,
                state=query.state,
                page_size=query.page_size,
                page_token=page.next_page_token,
            )

    newest = ["t6", "t5", "t4", "t3", "t2", "t1", "t0"]  # equal updated_at: id descending
    assert await walk(TaskQuery(page_size=3)) == [*newest, "older"]
    assert await walk(TaskQuery(page_size=1)) == [*newest, "older"]
    working = ["t5", "t3", "t1", "older"]
    assert await walk(TaskQuery(state=TaskState.WORKING, page_size=2)) == working
    assert await walk(TaskQuery(context_id="ctx", state=TaskState.WORKING, page_size=3)) == working
    # The scratch key of the intersection does not stay behind.
    assert not [key for key in await keys_of(store) if ":tmp:" in key]


async def test_instances_race_for_the_same_seq(open_redis: OpenRedis) -> None:
    first = await open_redis()
    second = await open_redis(first.url)
    task = make_task(state=TaskState.WORKING)
    await first.save_task("agent", task, [snapshot_event(1, task)])
    attempts = [
        store.save_task(
            "agent",
            with_state(task, TaskState.COMPLETED),
            [status_event(2, task, TaskState.COMPLETED)],
        )
        for store in (first, second) * 5
    ]
    results = await asyncio.gather(*attempts, return_exceptions=True)
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, LogConflictError) for r in results if r is not None)
    assert await second.last_seq("agent", task.id) == 2


async def test_scripts_are_loaded_again_when_the_server_forgot_them(
    open_redis: OpenRedis,
) -> None:
    store = await open_redis()
    script = LuaScript(f"return '{store.prefix}'")  # never loaded: NOSCRIPT, then loaded
    assert await script(store.client, (), ()) == store.prefix.encode()
    assert await script(store.client, (), ()) == store.prefix.encode()
