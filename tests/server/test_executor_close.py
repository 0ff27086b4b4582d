"""A hub closes the executors it stops serving (their ``close`` hook), once each.

(That the remote kind closes its connections there is checked by the remote agent tests:
an unclosed connection is a ResourceWarning, and warnings fail the suite.)"""

from __future__ import annotations

import asyncio

from a2a_hub import AgentExecutor, RequestContext, TaskUpdater
from tests.support.hub import make_hub


class Holder(AgentExecutor):
    """Echoes; counts how often it was closed."""

    def __init__(self) -> None:
        self.closed = 0

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.complete(ctx.text)

    async def close(self) -> None:
        self.closed += 1


async def test_closing_the_hub_closes_every_executor_once() -> None:
    a, b = Holder(), Holder()
    hub = make_hub({"a": a, "b": b})
    await hub.start()
    assert (a.closed, b.closed) == (0, 0)
    await hub.close()
    assert (a.closed, b.closed) == (1, 1)


async def test_a_removed_agent_s_executor_is_closed() -> None:
    kept, canceled, drained = Holder(), Holder(), Holder()
    hub = make_hub({"kept": kept, "canceled": canceled, "drained": drained})
    await hub.start()
    try:
        await hub.remove("canceled", cancel_running=True)
        assert canceled.closed == 1
        await hub.remove("drained")  # nothing runs: its engine closes in the background
        for _ in range(200):
            if drained.closed:
                break
            await asyncio.sleep(0.01)
        assert drained.closed == 1
        assert kept.closed == 0
    finally:
        await hub.close()
    assert (kept.closed, canceled.closed, drained.closed) == (1, 1, 1)
