"""The dispatcher's loop stops when closed, however busy it is."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from a2a_hub.push.dispatcher import Dispatcher
from a2a_hub.push.sender import WebhookSender
from a2a_hub.push.signing import SigningKeys
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


@pytest.mark.parametrize("busy_concurrency", [2, 4])
async def test_a_busy_event_loop_gets_fewer_sends_in_flight_and_every_delivery_still_goes(
    busy_concurrency: int,
) -> None:
    # While something keeps the event loop busy (each pass through it far over 2 ms), the
    # dispatcher keeps at most busy_concurrency sends open; all still arrive.  It claims
    # once half its busy slots are free, not once per send that ends (rounds of at least
    # half the slots, but for the last).
    from a2a_hub.protocol.types import (
        StreamResponse,
        Task,
        TaskPushNotificationConfig,
        TaskState,
        TaskStatus,
        TaskStatusUpdateEvent,
    )
    from a2a_hub.stores.base import Delivery, TaskEvent

    open_now = most_open = arrived = 0
    count = 12
    all_arrived = asyncio.Event()

    writers: list[asyncio.StreamWriter] = []
    answering = asyncio.Lock()

    async def receiver(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal open_now, most_open, arrived
        writers.append(writer)
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            open_now += 1
            most_open = max(most_open, open_now)
            # answers one at a time, a pass of the (hogged) loop each: sends overlap if
            # allowed to, and end one by one
            async with answering:
                await asyncio.sleep(0)
            open_now -= 1
            arrived += 1
            if arrived == count:
                all_arrived.set()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(receiver, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    claims: list[int] = []

    class CountingStore(MemoryStore):
        async def claim_deliveries(
            self, limit: int, lease: float, now: float | None = None
        ) -> list[Delivery]:
            got = await super().claim_deliveries(limit, lease, now)
            if got:
                claims.append(len(got))
            return got

    store = CountingStore()
    for i in range(count):
        tid = f"t{i}"
        done = TaskStatus(state=TaskState.COMPLETED)
        task = Task(id=tid, context_id="c", status=done)
        hook = TaskPushNotificationConfig(url=f"http://127.0.0.1:{port}/h", id="p", task_id=tid)
        await store.save_task("a", task, [TaskEvent(1, StreamResponse(task=task))])
        await store.set_push_config("a", tid, hook)
        update = TaskStatusUpdateEvent(task_id=tid, context_id="c", status=done)
        await store.save_task(
            "a",
            task,
            [TaskEvent(2, StreamResponse(status_update=update))],
            deliveries=[Delivery(agent_id="a", task_id=tid, config_id="p", seq=2)],
        )

    hogging = True

    def block() -> None:  # what a busy process does to its loop: holds it 10 ms
        time.sleep(0.01)

    async def hog() -> None:
        while hogging:
            block()
            await asyncio.sleep(0)

    hog_task = asyncio.ensure_future(hog())
    await asyncio.sleep(0)
    dispatcher = Dispatcher(
        store,
        WebhookSender(WebhookPolicy(["127.0.0.1"])),
        SigningKeys(),
        lambda a: "x",
        poll=0.05,
        concurrency=16,
        busy_concurrency=busy_concurrency,
    )
    dispatcher.start()
    try:
        async with asyncio.timeout(60):
            await all_arrived.wait()
        assert most_open <= busy_concurrency
        assert sum(claims) == count
        assert all(size >= busy_concurrency // 2 for size in claims[:-1]), claims
    finally:
        hogging = False
        await hog_task
        await dispatcher.close()
        server.close()
        for writer in writers:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        await server.wait_closed()
    assert dispatcher.sent == count
