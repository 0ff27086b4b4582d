"""Executors used by the tests (importable as ``tests.support.agents:Name`` for the python kind)."""

from __future__ import annotations

import asyncio
import os

from a2a_hub import AgentExecutor, RequestContext, TaskUpdater


class PizzaExecutor(AgentExecutor):
    """Seed 002's pizza order: asks which kind, then completes with the whole history."""

    name = "Pizza"
    description = "Takes a pizza order in two turns."

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        if ctx.task is None:
            await updater.require_input("What kind of pizza?")
            return
        said = [m.parts[0].text for m in ctx.history if m.parts and m.parts[0].text]
        await updater.artifact(f"order: {ctx.text}", name="order")
        await updater.complete(f"Ordered {ctx.text} after {len(said)} messages: {' | '.join(said)}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class SlowExecutor(AgentExecutor):
    """Works until canceled; records what happened (and, with ``marker``, leaves a file).

    ``started`` is set once a task is working; ``canceled_calls`` counts ``cancel`` calls.
    """

    def __init__(self, marker: str = "") -> None:
        self.marker = marker
        self.started = asyncio.Event()
        self.canceled_calls = 0

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        await updater.working("thinking")
        self.started.set()
        await asyncio.sleep(60)
        await updater.complete("done")

    async def cancel(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        self.canceled_calls += 1
        if self.marker:
            path = os.path.join(self.marker, f"{ctx.task_id}.canceled")
            await asyncio.to_thread(_write, path, str(os.getpid()))


class CrashExecutor(AgentExecutor):
    """Raises in the middle of a task."""

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        raise RuntimeError("the model exploded")


class RejectExecutor(AgentExecutor):
    """Rejects every task."""

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.reject("not today")


class LazyExecutor(AgentExecutor):
    """Returns without answering at all."""

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        return None


class RuleBreaker(AgentExecutor):
    """Keeps writing after completing."""

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.complete("done")
        await updater.working("still here")


class ChattyExecutor(AgentExecutor):
    """Streams ``chunks`` chunks of ``size`` bytes into one artifact, then completes.

    With the task snapshot, ``working`` and ``completed`` a run has ``chunks + 3`` events.
    """

    def __init__(
        self,
        chunks: int = 997,
        size: int = 8,
        pause_every: int = 25,
        delay: float = 0.0,
        pause: float | None = None,
    ) -> None:
        self.chunks = int(chunks)
        self.size = int(size)
        self.pause_every = int(pause_every)
        self.delay = float(delay)
        #: Seconds of each pause (default: 2 ms, or none when it pauses after every chunk).
        self.pause = float(pause) if pause is not None else None

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        await asyncio.sleep(self.delay)
        for i in range(self.chunks):
            text = f"{i:06d}".ljust(self.size, ".")
            await updater.artifact(
                text, artifact_id="out", name="out", append=i > 0, last_chunk=i == self.chunks - 1
            )
            if self.pause_every and i % self.pause_every == 0:
                pause = self.pause
                if pause is None:
                    pause = 0.002 if self.pause_every > 1 else 0
                await asyncio.sleep(pause)
        await updater.complete()


class Stepper(AgentExecutor):
    """Emits one artifact chunk per :meth:`step` (the test decides when), completes on
    :meth:`finish`.  A run's events: the task (1), ``working`` (2), one per step, then
    ``completed``.  ``started`` is set once the task is working."""

    def __init__(self) -> None:
        self.steps: asyncio.Queue[str | None] = asyncio.Queue()
        self.started = asyncio.Event()

    def step(self, *texts: str) -> None:
        for text in texts:
            self.steps.put_nowait(text)

    def finish(self) -> None:
        self.steps.put_nowait(None)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.working("stepping")
        self.started.set()
        count = 0
        while (text := await self.steps.get()) is not None:
            await updater.artifact(text, artifact_id="out", name="out", append=count > 0)
            count += 1
        await updater.complete()


class SilentEcho(AgentExecutor):
    """An agent whose card says it does not stream."""

    streaming = False

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.reply(ctx.text)


class ExtensionAware(AgentExecutor):
    """Declares two extensions and answers with the ones the request activated."""

    name = "Extensions"
    extensions = [
        {"uri": "https://example.com/ext/shout/v1", "description": "Answers in capitals"},
        {"uri": "https://example.com/ext/trace/v1", "params": {"level": 2}},
    ]

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.reply("active: " + (",".join(sorted(ctx.extensions)) or "none"))


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


class ToolAgent(AgentExecutor):
    """Asks the client for its time zone (a client-side tool), then answers with it."""

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        result = ctx.tool_response()
        if result is None:
            await updater.call_client_tool("time_zone", {"why": "greeting"}, text="need tz")
            return
        await updater.artifact(f"your zone is {result['data']['zone']}", name="reply")
        await updater.complete()


class ProgressAgent(AgentExecutor):
    """Reports progress, shows a server-side tool run, cites sources, completes."""

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        from a2a_hub.protocol.types import Part

        await updater.start()
        await updater.working("reading documents", progress=0.5)
        call = {"kind": "tool_call", "tool_call_id": "c1", "tool_id": "search",
                "params": {"q": "x"}}  # fmt: skip
        await updater.working([Part(data=call)])
        done = {"kind": "tool_response", "tool_call_id": "c1",
                "result": {"status": "success", "data": {"hits": 1}}}  # fmt: skip
        await updater.working([Part(data=done)])
        sources = [{"title": "Doc A", "url": "https://a.example", "snippet": "alpha"}]
        await updater.artifact("the answer", name="a", metadata={"sources": sources})
        await updater.complete()


class Drip(AgentExecutor):
    """Streams ``chunks`` chunks (``000000..``, ``000001..``), one every ``interval`` seconds."""

    def __init__(self, chunks: int = 30, interval: float = 0.1) -> None:
        self.chunks = int(chunks)
        self.interval = float(interval)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        for i in range(self.chunks):
            await updater.artifact(f"{i:06d}".ljust(8, "."), artifact_id="a", append=i > 0)
            await asyncio.sleep(self.interval)
        await updater.complete()


class Tap(AgentExecutor):
    """Streams numbered chunks, one every ``interval`` seconds, until ``stop`` is set.

    The task lasts as long as the test needs it (not as long as a machine takes to get
    somewhere), then completes; ``chunks`` is how many it wrote.
    """

    def __init__(self, interval: float = 0.002, limit: int = 200_000) -> None:
        self.interval = float(interval)
        self.limit = int(limit)
        self.stop = asyncio.Event()
        self.chunks = 0

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        self.chunks = 0
        while not self.stop.is_set() and self.chunks < self.limit:
            first = self.chunks == 0
            await updater.artifact(f"{self.chunks:06d}.", artifact_id="t", append=not first)
            self.chunks += 1
            await asyncio.sleep(self.interval)
        await updater.complete()


class Counted(AgentExecutor):
    """Counts its executions (``runs``; with ``A2A_TEST_RUNS_DIR`` set, also one file per
    execution there, for counting across processes), works ``delay`` seconds, completes."""

    reply = False

    def __init__(self, delay: float | str = 0.3) -> None:
        self.delay = float(delay)  # a query option of the python kind comes as text
        self.runs = 0

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        self.runs += 1
        folder = os.environ.get("A2A_TEST_RUNS_DIR")
        if folder:
            path = os.path.join(folder, f"{os.getpid()}-{ctx.task_id}-{self.runs}")
            await asyncio.to_thread(_write, path, ctx.message.message_id)
        if self.reply:
            await asyncio.sleep(self.delay)
            await updater.reply(f"counted: {ctx.text}")
            return
        await updater.start()
        await asyncio.sleep(self.delay)
        await updater.artifact(f"counted: {ctx.text}")
        await updater.complete()


class CountedReply(Counted):
    """:class:`Counted` answering with a direct message (no task)."""

    reply = True
