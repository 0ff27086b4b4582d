"""Agents for the operations tests (real processes load them by import path)."""

from __future__ import annotations

import asyncio

from a2a_hub import AgentExecutor, RequestContext, TaskUpdater


class Ticker(AgentExecutor):
    """Writes ``ticks`` artifact chunks ``interval`` seconds apart, then completes."""

    def __init__(self, ticks: int = 40, interval: float = 0.1) -> None:
        self.ticks = int(ticks)
        self.interval = float(interval)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        for i in range(self.ticks):
            await asyncio.sleep(self.interval)
            last = i == self.ticks - 1
            await updater.artifact(f"{i};", artifact_id="t", append=i > 0, last_chunk=last)
        await updater.complete("done")
