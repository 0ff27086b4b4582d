"""Executors of the worker-tier tests (``tests.support.worker_agents:Name``), run by
``a2a-hub worker`` processes.

Each turn first says which process runs it (a ``working`` status ``pid=<pid>``), so a test
knows which worker to kill, and, with ``A2A_TEST_RUNS_DIR`` set, leaves one file per
execution there (``<task id>.<pid>.<n>``), so a test counts executions across processes.
"""

from __future__ import annotations

import asyncio
import itertools
import os

from a2a_hub import AgentExecutor, RequestContext, TaskUpdater

_runs = itertools.count(1)


def _record(task_id: str) -> None:
    folder = os.environ.get("A2A_TEST_RUNS_DIR")
    if folder:
        with open(os.path.join(folder, f"{task_id}.{os.getpid()}.{next(_runs)}"), "w") as f:
            f.write(task_id)


class Paced(AgentExecutor):
    """Says its pid, writes ``ticks`` artifact chunks ``interval`` seconds apart, then asks
    for input when the message says ``ask``, else completes naming its pid."""

    def __init__(self, ticks: int | str = 0, interval: float | str = 0.2) -> None:
        self.ticks = int(ticks)
        self.interval = float(interval)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await asyncio.to_thread(_record, ctx.task_id)
        await updater.start()
        await updater.working(f"pid={os.getpid()}")
        for i in range(self.ticks):
            await asyncio.sleep(self.interval)
            await updater.artifact(
                f"tick {i} pid={os.getpid()} ",
                name="ticks",
                artifact_id="ticks",
                append=i > 0,
                last_chunk=False,
            )
        if ctx.text == "ask":
            await updater.require_input(f"pid={os.getpid()}: what next?")
            return
        await updater.complete(f"done by pid={os.getpid()}: {ctx.text}")


class Sleeper(AgentExecutor):
    """Waits ``seconds`` (I/O, no CPU), then completes: the benchmark's agent."""

    def __init__(self, seconds: float | str = 2.0) -> None:
        self.seconds = float(seconds)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await asyncio.to_thread(_record, ctx.task_id)
        await updater.start()
        await asyncio.sleep(self.seconds)
        await updater.complete("slept")
