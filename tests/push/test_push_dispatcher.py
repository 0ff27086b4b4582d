"""The dispatcher's loop stops when closed, however busy it is."""

from __future__ import annotations

import asyncio

import pytest

from a2a_hub.push.dispatcher import Dispatcher
from a2a_hub.push.keys import SigningKeys
from a2a_hub.push.sender import WebhookSender
from a2a_hub.push.urls import WebhookPolicy
from a2a_hub.stores.memory import MemoryStore


async def test_close_ends_the_loop_even_when_woken_as_it_is_cancelled() -> None:
    # Every finished send and every queued delivery wakes the loop; a close that lands
    # just as a wake-up does must still end it (asyncio.wait_for on 3.11 could swallow
    # that cancellation, and close() then waited forever).
    store = MemoryStore()
    for i in range(300):
        dispatcher = Dispatcher(
            store, WebhookSender(WebhookPolicy()), SigningKeys(), lambda a: "x", poll=5
        )
        dispatcher.start()
        loop_task = dispatcher._loop
        assert loop_task is not None

        async def waker(d: Dispatcher = dispatcher) -> None:
            while True:
                d.wake()
                await asyncio.sleep(0)

        wakes = asyncio.ensure_future(waker())
        for _ in range(i % 7):
            await asyncio.sleep(0)
        closing = asyncio.ensure_future(dispatcher.close())
        done, _ = await asyncio.wait({closing}, timeout=5)
        wakes.cancel()
        if not done:  # stop the loop for good (no more wake-ups now), then fail
            loop_task.cancel()
            await asyncio.wait({closing}, timeout=10)
            pytest.fail(f"close() did not end the dispatcher's loop (attempt {i + 1})")
        assert loop_task.done()
