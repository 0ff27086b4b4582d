"""The event loop's watchdog: a blocking call in an agent does not freeze the hub unseen.

Every request, health checks included, is answered by one asyncio event loop; an agent
whose ``execute`` calls synchronous code (``time.sleep``, ``requests.get``, a synchronous
SDK) stops all of them while it runs.  :class:`LoopWatchdog`, a service of the app, keeps a
heartbeat on the loop (a callback every :data:`BEAT` seconds) and a thread of its own that
watches it: once the heartbeat is :data:`THRESHOLD` seconds late, the thread reads the
loop thread's stack and, when an agent's executor is on it, logs one warning naming the
agent (the hosted agent whose executor is on the stack), the call site (the innermost frame
outside the standard library, installed packages and a2a-hub) and what to do instead
(``await asyncio.to_thread(…)``);
when the loop runs again, one line says how long it was blocked in all.  A loop found
waiting in its selector (a busy machine gave its thread no CPU) is not reported, and a late
loop with no agent on its stack (the hub's own work) only at debug level.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import sysconfig
import threading
import time
import traceback
from types import FrameType, TracebackType
from typing import TYPE_CHECKING

from a2a_hub.engine.executor import AgentExecutor

if TYPE_CHECKING:
    from a2a_hub.server.hub import Hub

__all__ = ["BEAT", "THRESHOLD", "LoopWatchdog", "describe_block"]

log = logging.getLogger("a2a_hub.watchdog")

#: Seconds the loop may go without its heartbeat before the warning.
THRESHOLD = 0.5
#: Seconds between two heartbeats (and two looks of the watching thread).
BEAT = 0.1

#: Where code that is not the agent's lives: the standard library, installed packages,
#: a2a-hub itself.
_NOT_AGENT_CODE = tuple(
    {
        *(sysconfig.get_paths()[name] for name in ("stdlib", "platstdlib", "purelib", "platlib")),
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    }
)

HINT = (
    "every request waits meanwhile, /healthz too: run blocking code with "
    "'await asyncio.to_thread(func, ...)' (README: Write an agent)"
)


def idle(frame: FrameType | None) -> bool:
    """Whether the loop thread is only waiting for I/O (in its selector): then a late
    heartbeat is a busy machine's doing (the thread got no CPU), not a blocking call."""
    return frame is None or (
        frame.f_code.co_name in ("select", "poll", "_poll")
        and os.path.basename(frame.f_code.co_filename) == "selectors.py"
    )


def describe_block(frame: FrameType | None, hub: Hub | None) -> tuple[bool, str]:
    """Who blocks the loop, from the loop thread's innermost ``frame``: whether an agent's
    executor is on the stack, and the agent and the call site."""
    if frame is None:
        return False, "unknown code"
    stack = traceback.extract_stack(frame)
    agent = ""
    walk: FrameType | None = frame
    while walk is not None:  # innermost first: the executor nearest the blocking call
        inst = walk.f_locals.get("self")
        if isinstance(inst, AgentExecutor):
            cls = type(inst)
            ids = [] if hub is None else [a.id for a in hub.agents.values() if a.executor is inst]
            named = f"agent {ids[0]!r}" if ids else "an agent"
            agent = f"{named} ({cls.__module__}.{cls.__qualname__}) "
            break
        walk = walk.f_back
    site = next(
        (f for f in reversed(stack) if not f.filename.startswith(_NOT_AGENT_CODE)), stack[-1]
    )
    where = f"{site.filename}:{site.lineno} in {site.name}"
    return bool(agent), f"{agent}at {where}" + (f": {site.line}" if site.line else "")


class LoopWatchdog:
    """A service (async context manager) watching the running loop; see the module."""

    def __init__(self, hub: Hub | None = None, threshold: float = THRESHOLD) -> None:
        self.hub = hub
        self.threshold = threshold
        self._beat = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handle: asyncio.TimerHandle | asyncio.Handle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0

    async def __aenter__(self) -> LoopWatchdog:
        if self.threshold <= 0:
            return self
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._beat = time.monotonic()
        self._handle = self._loop.call_soon(self._tick)
        self._thread = threading.Thread(target=self._watch, name="a2a-hub-watchdog", daemon=True)
        self._thread.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._handle is not None:
            self._handle.cancel()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 5)

    def _tick(self) -> None:
        self._beat = time.monotonic()
        assert self._loop is not None
        self._handle = self._loop.call_later(BEAT, self._tick)

    def _watch(self) -> None:
        warned: float | None = None  # the heartbeat the last warning was about
        quiet: float | None = None  # a late heartbeat already found not to be an agent's
        while not self._stop.wait(BEAT):
            beat = self._beat
            late = time.monotonic() - beat
            if warned is not None and beat != warned:
                log.warning("the event loop ran again after %.1f s blocked", beat - warned)
                warned = None
            if late > self.threshold and warned is None and beat != quiet:
                frame = sys._current_frames().get(self._loop_thread)
                if idle(frame):
                    continue
                by_agent, who = describe_block(frame, self.hub)
                if not by_agent:  # the hub's own work, or a busy machine: not an agent's
                    quiet = beat
                    log.debug("the event loop is late (%.1f s) at %s", late, who)
                    continue
                warned = beat
                log.warning("the event loop is blocked (%.1f s so far) by %s; %s", late, who, HINT)
