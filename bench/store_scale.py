"""GetTask and a ListTasks page with 1,000 and with 200,000 tasks in a store (issue 15).

    python bench/store_scale.py sqlite:///tmp/scale.db [postgresql://…] [redis://…]

Fills each store through ``save_task`` (agent ``scale-bench``), then times GetTask of
random ids and the first and a later ListTasks page (50 tasks, newest first; also by
context), each the median of repeated calls.  Point it at a throwaway database (or
key prefix): it leaves its 200,000 tasks there.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time

from a2a_hub.protocol.types import Message, Part, Role, StreamResponse, Task, TaskState, TaskStatus
from a2a_hub.stores import TaskQuery, open_store
from a2a_hub.stores.base import Store, TaskEvent

AGENT = "scale-bench"


def task(i: int) -> Task:
    tid = f"t{i:07d}"
    ctx = f"c{i % 1000:04d}"
    msg = Message(
        message_id=f"m{i}", role=Role.USER, parts=[Part(text="hi")], task_id=tid, context_id=ctx
    )
    state = TaskState.COMPLETED if i % 10 else TaskState.WORKING
    return Task(id=tid, context_id=ctx, status=TaskStatus(state=state), history=[msg])


async def fill(store: Store, start: int, stop: int) -> None:
    for lo in range(start, stop, 500):
        batch = [task(i) for i in range(lo, min(stop, lo + 500))]
        await asyncio.gather(
            *(store.save_task(AGENT, t, [TaskEvent(1, StreamResponse(task=t))]) for t in batch)
        )


async def timed(call, n: int = 50) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1000


async def measure(store: Store, count: int) -> str:
    ids = [f"t{random.randrange(count):07d}" for _ in range(50)]
    it = iter(ids * 2)
    get = await timed(lambda: store.get_task(AGENT, next(it)))
    first = await timed(lambda: store.list_tasks(AGENT, TaskQuery(page_size=50)))
    page = await store.list_tasks(AGENT, TaskQuery(page_size=50))
    token = page.next_page_token
    later = await timed(lambda: store.list_tasks(AGENT, TaskQuery(page_size=50, page_token=token)))
    ctx = await timed(lambda: store.list_tasks(AGENT, TaskQuery(page_size=50, context_id="c0007")))
    working = TaskQuery(page_size=50, state=TaskState.WORKING)
    status = await timed(lambda: store.list_tasks(AGENT, working))
    page = await store.list_tasks(AGENT, working)
    status_token = page.next_page_token
    status_later = await timed(
        lambda: store.list_tasks(
            AGENT, TaskQuery(page_size=50, state=TaskState.WORKING, page_token=status_token)
        )
    )
    return (
        f"{count:>7} tasks: GetTask {get:6.2f} ms | ListTasks first page {first:7.2f} ms, "
        f"2nd page {later:7.2f} ms, by context {ctx:7.2f} ms, by status {status:7.2f} ms "
        f"(2nd page {status_later:7.2f} ms)"
    )


async def main(urls: list[str]) -> None:
    for url in urls:
        store = open_store(url)
        await store.open()
        try:
            print(url)
            t = time.perf_counter()
            await fill(store, 0, 1000)
            print(" ", await measure(store, 1000))
            await fill(store, 1000, 200_000)
            print(f"  (filled 199,000 more in {time.perf_counter() - t:.0f} s)")
            print(" ", await measure(store, 200_000))
        finally:
            await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
