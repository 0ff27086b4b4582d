"""Idle timeouts of streams share one timer wheel per loop: a quiet wait ends after its
timeout, a busy subscriber holds one entry, a closed one none."""

from __future__ import annotations

import asyncio

from a2a_hub.engine.pubsub import Subscription, wheel
from a2a_hub.protocol.types import StreamResponse
from a2a_hub.stores.base import TaskEvent


def entries() -> int:
    return sum(len(s) for s in wheel().slots.values())


async def test_a_quiet_wait_ends_after_its_timeout_and_an_event_ends_it_at_once() -> None:
    loop = asyncio.get_running_loop()
    sub = Subscription()
    began = loop.time()
    waiter = sub.waiter(0.05)
    await asyncio.wait_for(waiter, 5)
    sub.waited()
    assert loop.time() - began >= 0.05
    assert not sub.buffer

    waiter = sub.waiter(30)
    sub.push(TaskEvent(1, StreamResponse()))
    await asyncio.wait_for(waiter, 1)  # the event, not the 30 s timeout
    sub.waited()
    assert len(sub.buffer) == 1
    sub.close()


async def test_a_busy_subscriber_holds_one_entry_and_a_closed_one_none() -> None:
    subs = [Subscription() for _ in range(3)]
    before = entries()
    for _ in range(1000):  # a wait ended early by an event, a thousand times
        for sub in subs:
            waiter = sub.waiter(15)
            sub.push(TaskEvent(1, StreamResponse()))
            await waiter
            sub.waited()
            sub.buffer.clear()
    assert entries() - before == len(subs)
    for sub in subs:
        sub.close()
    assert entries() == before


async def test_a_wait_armed_shorter_than_its_slot_still_ends_in_time() -> None:
    sub = Subscription()
    waiter = sub.waiter(30)
    sub.push(TaskEvent(1, StreamResponse()))
    await waiter
    sub.waited()
    sub.buffer.clear()
    waiter = sub.waiter(0.05)  # due long before the 30 s slot the entry sits in
    await asyncio.wait_for(waiter, 5)
    sub.waited()
    sub.close()
