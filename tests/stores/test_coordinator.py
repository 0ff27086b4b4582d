"""The coordinator contract: leases, signals and wake-ups, on every backend.

On Redis and PostgreSQL two store objects stand for two instances; the local
coordinator of memory/SQLite works inside one process, so there both
"instances" share one store object.
"""

from __future__ import annotations

import asyncio

import pytest

from a2a_hub.protocol.types import StreamResponse, TaskState
from a2a_hub.stores import Store, TaskEvent
from a2a_hub.stores.coordinator import Coordinator, Signal
from tests.support.stores import StoreHarness

from .test_contract import make_task, push_config, status_event


async def pair(harness: StoreHarness) -> tuple[Coordinator, Coordinator]:
    first = harness.store.coordinator()
    if not first.shared:
        await first.start()
        return first, first
    second = (await harness.open()).coordinator()
    await first.start()
    await second.start()
    return first, second


async def stop(*coordinators: Coordinator) -> None:
    for c in set(coordinators):
        await c.close()


def mine(claimed: list[tuple[str, str, str]], agent_id: str) -> list[tuple[str, str, str]]:
    return [c for c in claimed if c[0] == agent_id]


async def test_leases(harness: StoreHarness, agent_id: str) -> None:
    a, b = await pair(harness)
    try:
        assert await a.lease_owner(agent_id, "t1") is None
        await a.acquire_lease(agent_id, "t1", "inst-a", ttl=30)
        assert await b.lease_owner(agent_id, "t1") == "inst-a"
        await b.release_lease(agent_id, "t1", "inst-b")  # not the holder: nothing happens
        assert await a.lease_owner(agent_id, "t1") == "inst-a"
        await a.release_lease(agent_id, "t1", "inst-a")
        assert await b.lease_owner(agent_id, "t1") is None
        assert mine(await b.claim_expired("inst-b"), agent_id) == []
    finally:
        await stop(a, b)


async def test_lapsed_leases_are_claimed_once_and_renewal_keeps_them(
    harness: StoreHarness, agent_id: str
) -> None:
    a, b = await pair(harness)
    try:
        await a.acquire_lease(agent_id, "dies", "inst-a", ttl=0.3)
        await a.acquire_lease(agent_id, "lives", "inst-a", ttl=0.3)
        await b.acquire_lease(agent_id, "other", "inst-b", ttl=30)
        await asyncio.sleep(0.15)
        await a.renew_leases("inst-a", ttl=30)  # both of a's leases are renewed …
        await a.release_lease(agent_id, "lives", "inst-a")
        await a.acquire_lease(agent_id, "dies", "inst-a", ttl=0.2)  # … then one lapses
        await asyncio.sleep(0.4)
        claims = await asyncio.gather(b.claim_expired("inst-b"), a.claim_expired("inst-a"))
        taken = mine(claims[0], agent_id) + mine(claims[1], agent_id)
        assert taken == [(agent_id, "dies", "inst-a")]
        assert await b.lease_owner(agent_id, "dies") is None
        assert await a.lease_owner(agent_id, "other") == "inst-b"
    finally:
        await b.release_lease(agent_id, "other", "inst-b")
        await stop(a, b)


async def test_signals_reach_every_instance(harness: StoreHarness, agent_id: str) -> None:
    a, b = await pair(harness)
    received: list[Signal] = []

    async def listen(c: Coordinator) -> None:
        async for signal in c.signals():
            if signal.agent_id == agent_id:
                received.append(signal)
                return

    listener = asyncio.ensure_future(listen(b))
    try:
        await asyncio.sleep(0.3)  # let the subscription settle
        await a.publish(Signal("cancel", agent_id, "t9", sender="inst-a"))
        await asyncio.wait_for(listener, 5)
        assert received == [Signal("cancel", agent_id, "t9", sender="inst-a")]
    finally:
        listener.cancel()
        await stop(a, b)


@pytest.mark.parametrize("with_config", [False, True], ids=["save", "save-with-push-config"])
async def test_wait_events_wakes_up_for_new_events(
    harness: StoreHarness, agent_id: str, with_config: bool
) -> None:
    """A save wakes the instances following the task; so does one that carries a push
    config (on PostgreSQL it is written outside the group commit, and says so itself)."""
    a, b = await pair(harness)
    store: Store = harness.store
    task = make_task()
    await store.save_task(agent_id, task, [TaskEvent(1, StreamResponse(task=task))])
    try:
        await asyncio.sleep(0.3)  # the listening connection, where there is one, is up
        loop = asyncio.get_running_loop()
        started = loop.time()
        waiter = asyncio.ensure_future(b.wait_events(agent_id, task.id, after=1, wait=5))
        await asyncio.sleep(0.05)
        configs = [push_config("c1")] if with_config else []
        await store.save_task(
            agent_id, task, [status_event(2, task, TaskState.WORKING)], push_configs=configs
        )
        await asyncio.wait_for(waiter, 6)
        # a real wake-up (or the local coordinator's short poll), never the full timeout
        assert loop.time() - started < 4
    finally:
        await stop(a, b)


async def test_many_waiters_never_starve_the_store_or_the_leases(
    harness: StoreHarness, agent_id: str
) -> None:
    """More followers than the store has pooled connections (Redis: 100) wait at once:
    the store and lease renewal keep answering, and every follower wakes for its task."""
    a, b = await pair(harness)
    store: Store = harness.store
    tasks = [make_task(f"task-{n}") for n in range(250)]
    for task in tasks:
        await store.save_task(agent_id, task, [TaskEvent(1, StreamResponse(task=task))])
    try:
        await asyncio.sleep(0.3)  # the listening connection, where there is one, is up
        waiters = [
            asyncio.ensure_future(b.wait_events(agent_id, task.id, after=1, wait=30))
            for task in tasks
        ]
        await asyncio.sleep(0.3)  # all of them blocked (the local coordinator polls)
        assert not b.shared or not any(w.done() for w in waiters)
        await a.acquire_lease(agent_id, tasks[0].id, "instance-a", 5.0)
        await b.renew_leases("instance-b", 5.0)
        await a.renew_leases("instance-a", 5.0)
        assert await b.lease_owner(agent_id, tasks[0].id) == "instance-a"
        for task in tasks:
            await store.save_task(agent_id, task, [status_event(2, task, TaskState.WORKING)])
        await asyncio.wait_for(asyncio.gather(*waiters), 25)
    finally:
        await a.release_lease(agent_id, tasks[0].id, "instance-a")
        await stop(a, b)
