"""Executors for the scale part of the bench (bench/scale.py), served by a2a-hub with

    PYTHONPATH=bench a2a-hub serve --agent waiter=bench_agents:Waiter \
        --agent trigger=bench_agents:Trigger --store memory://

* ``Waiter`` starts its task (``working``) and then waits, so the task stays open and can be
  subscribed to.  Each command it gets through ``Trigger`` is one of:
  ``fire``: publish an artifact whose text is ``bench-ts=<time.time()>`` taken just before
  the call (the subscribers subtract it from their arrival time), then wait again;
  ``stop``: complete the task.  With no command for ``max_wait`` seconds (default 600) it
  completes by itself, so a run that dies leaves nothing running for long.
* ``Trigger`` answers immediately with a message (no task).  Its text is
  ``<task id> <command>``; it hands the command to that task's ``Waiter`` (both agents live in
  one process and share this module) and replies ``ok`` or ``unknown task``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from a2a_hub import AgentExecutor, RequestContext, TaskUpdater

__all__ = ["Trigger", "Waiter"]

_CHANNELS: dict[str, asyncio.Queue[str]] = {}


class Waiter(AgentExecutor):
    """Keeps its task open; publishes a timestamped artifact per ``fire`` command."""

    name = "Waiter"
    description = "Keeps a task open until told to publish an event or to finish (bench)."

    def __init__(self, max_wait: str | float = 600.0, **_: Any) -> None:
        self.max_wait = float(max_wait)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        queue: asyncio.Queue[str] = asyncio.Queue()
        _CHANNELS[ctx.task_id] = queue
        try:
            while True:
                try:
                    command = await asyncio.wait_for(queue.get(), self.max_wait)
                except TimeoutError:
                    command = "stop"
                if command == "fire":
                    await updater.artifact(f"bench-ts={time.time():.6f}", name="tick")
                    continue
                await updater.complete()
                return
        finally:
            _CHANNELS.pop(ctx.task_id, None)


class Trigger(AgentExecutor):
    """Hands ``<task id> fire|stop`` to the waiting task; answers with a message."""

    name = "Trigger"
    description = "Sends commands to Waiter tasks in the same process (bench)."

    def __init__(self, **_: Any) -> None:
        pass

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        task_id, _, command = ctx.text.partition(" ")
        queue = _CHANNELS.get(task_id)
        if queue is None:
            await updater.reply("unknown task")
            return
        queue.put_nowait(command.strip() or "fire")
        await updater.reply("ok")


class Sleeper(AgentExecutor):
    """Works ``seconds`` of I/O (a sleep: no CPU), then completes: ``bench/workers.py``'s
    agent, run by ``a2a-hub worker`` processes."""

    def __init__(self, seconds: float | str = 2.0) -> None:
        self.seconds = float(seconds)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        await asyncio.sleep(self.seconds)
        await updater.complete("slept")
