"""Executors the tests of the remote kind and the composites run (``tests.support.peers:Name``)."""

from __future__ import annotations

import asyncio
import os

from a2a_hub import AgentExecutor, RequestContext, TaskUpdater
from a2a_hub.protocol.types import Part


class Interviewer(AgentExecutor):
    """Asks for input twice (name, then quest), then completes with both answers.

    Every message says which task and context it belongs to (``[task=… context=…]``).
    """

    name = "Interviewer"
    description = "Asks two questions, then sums the answers up."

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        where = f"[task={ctx.task_id} context={ctx.context_id}]"
        await updater.start()
        answers = [m.parts[0].text for m in ctx.history[1:] if m.role.value == "ROLE_USER"]
        if len(answers) == 0:
            await updater.require_input(f"What is your name? {where}")
            return
        if len(answers) == 1:
            await updater.working(f"noted the name {answers[0]}")
            await updater.require_input(f"What is your quest? {where}")
            return
        await updater.artifact(f"name={answers[0]} quest={answers[1]}", name="summary")
        await updater.complete(f"Thank you, {answers[0]}. {where}")


class Marker(AgentExecutor):
    """Works until canceled (writes ``<task>.canceled`` into ``marker`` when canceled);
    with ``after`` > 0 it completes after that many seconds instead."""

    def __init__(self, marker: str = "", after: float | str = 0) -> None:
        self.marker = marker
        self.after = float(after)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        await updater.working("working on it")
        await asyncio.sleep(self.after or 120)
        await updater.complete(f"finished {ctx.text}")

    async def cancel(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        if self.marker:
            path = os.path.join(self.marker, f"{ctx.task_id}.canceled")
            await asyncio.to_thread(_touch, path)


def _touch(path: str) -> None:
    with open(path, "w") as f:
        f.write("canceled")


class Failing(AgentExecutor):
    """Fails every task with a reason."""

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        await updater.fail(f"cannot handle {ctx.text!r}")


class Finisher(AgentExecutor):
    """Says it is done (data part ``{"done": true}``) once its input mentions ``ready``;
    otherwise appends `` +1`` to what it got."""

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        text = ctx.text
        if "ready" in text:
            await updater.artifact([Part(text=f"{text} (done)"), Part(data={"done": True})])
        else:
            await updater.artifact(f"{text} +1")
        await updater.complete()
