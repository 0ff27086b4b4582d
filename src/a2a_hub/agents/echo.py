"""The built-in ``echo`` agent: answers ``echo: <text>``.

By default it runs a task (working → artifact ``echo`` → completed, seed 000's
second flow); with the option ``reply = "message"`` it answers with an
immediate message instead (the first flow).  A message whose text is exactly
``input?`` (configurable with ``ask``) makes it ask for input first, which makes
it a handy peer for multi-turn tests.
"""

from __future__ import annotations

from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater

__all__ = ["EchoExecutor"]


class EchoExecutor(AgentExecutor):
    """Echoes what it is sent."""

    name = "Echo"
    description = "Answers every message with 'echo: <your text>'."
    skills = [
        {
            "id": "echo",
            "name": "Echo",
            "description": "Repeats the text it receives.",
            "tags": ["echo", "test"],
            "examples": ["hello"],
        }
    ]

    def __init__(self, reply: str = "task", ask: str = "input?") -> None:
        if reply not in ("task", "message"):
            raise ValueError(f"echo option reply must be 'task' or 'message', not {reply!r}")
        self.reply_mode = reply
        self.ask = ask

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        text = ctx.text
        if self.reply_mode == "message" and ctx.task is None:
            await updater.reply(f"echo: {text}")
            return
        await updater.start()
        if text == self.ask and ctx.task is None:
            await updater.require_input("What should I echo?")
            return
        await updater.artifact(f"echo: {text}", name="echo")
        await updater.complete()
