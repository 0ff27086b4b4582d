"""The registry in the task store's database uses the store's engine (one engine, one set of
SQLite pragmas, per database); elsewhere, or without a store, it opens its own."""

from __future__ import annotations

from pathlib import Path

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.registry import Registry
from a2a_hub.stores import MemoryStore
from a2a_hub.stores.sql import SqlStore


async def test_same_database_shares_the_store_engine(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/hub.db"
    store = SqlStore(url)
    await store.open()
    registry = Registry(url, store=store)
    try:
        await registry.open()
        assert registry.engine is store.engine
        key, info = await registry.create_key(name="ci")
        found = await registry.lookup_key(key)
        assert found is not None and found.id == info.id
        await registry.close()
        # the engine is the store's: closing the registry leaves it working
        assert await store.get_task("agent", "none") is None
    finally:
        await registry.close()
        await store.close()
    # what it wrote is in the one file, read back by a registry of its own
    alone = Registry(url)
    await alone.open()
    try:
        assert (await alone.get_key(info.id)).principal == "ci"
    finally:
        await alone.close()


async def test_another_database_or_store_gets_its_own_engine(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path}/tasks.db")
    await store.open()
    elsewhere = Registry(f"sqlite:///{tmp_path}/registry.db", store=store)
    beside_memory = Registry(f"sqlite:///{tmp_path}/other.db", store=MemoryStore())
    try:
        for registry in (elsewhere, beside_memory):
            await registry.open()
            assert registry.engine is not store.engine
            assert await registry.list_agents() == []
    finally:
        await elsewhere.close()
        await beside_memory.close()
        await store.close()


async def test_the_hub_hands_its_sql_store_to_the_registry(tmp_path: Path) -> None:
    settings = Settings.from_flat(
        agents=[AgentSpec(id="plain", kind="echo")],
        store=f"sqlite:///{tmp_path}/hub.db",
        auth_require_keys=True,
    )
    hub = Hub(settings)
    await hub.start()
    try:
        assert hub.registry is not None
        assert isinstance(hub.store, SqlStore)
        assert hub.registry.engine is hub.store.engine
    finally:
        await hub.close()
