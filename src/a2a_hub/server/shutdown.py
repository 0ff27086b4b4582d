"""Graceful shutdown of a serving process (``a2a-hub serve``, SIGTERM or SIGINT).

What happens, in order:

1. The signal arrives: uvicorn stops accepting connections, and every open SSE
   stream ends at once with a clean end of response (:func:`end_streams`), so its
   client reconnects to another instance with ``Last-Event-ID`` and misses nothing.
2. Requests in flight (blocking sends) get up to ``graceful_timeout`` seconds to
   answer (uvicorn's ``timeout_graceful_shutdown``); then they are cut.
3. Tasks still running (non-blocking sends, tasks whose request was cut) get
   what is left of ``graceful_timeout`` to finish (:meth:`Drain.wait_for_runs`).
4. The hub closes: what still runs is failed with a message saying that the
   server shut down, leases are released, the store is closed.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from types import FrameType
from typing import Any

from a2a_hub.server.hub import Hub
from a2a_hub.server.sse import end_streams

__all__ = ["Drain"]

log = logging.getLogger("a2a_hub.server")


class Drain:
    """The shutdown of one process: when it began and how long tasks may still run."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.began: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def watch_signals(self) -> None:
        """Begin draining on SIGTERM/SIGINT, then let the server's own handler run too.

        Call from the event loop, after the server installed its handlers (the app's
        lifespan startup under uvicorn).  Only from the main thread (signals).
        """
        if threading.current_thread() is not threading.main_thread():
            return
        self._loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)
            signal.signal(sig, self._chain(previous))

    def _chain(self, previous: Any) -> Any:
        def handler(sig: int, frame: FrameType | None) -> None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self.begin)
            if callable(previous):
                previous(sig, frame)
            elif previous == signal.SIG_DFL:  # nobody else handles it: the default action
                signal.signal(sig, signal.SIG_DFL)
                signal.raise_signal(sig)

        return handler

    def begin(self) -> None:
        """Start draining now (idempotent): end the open streams."""
        if self.began is None:
            self.began = time.monotonic()
            log.info("shutting down: open streams ended, running tasks get up to %g s", self.grace)
        end_streams()

    def remaining(self) -> float:
        """Seconds left of the grace period (all of it if draining has not begun)."""
        if self.began is None:
            return self.grace
        return max(0.0, self.began + self.grace - time.monotonic())

    async def wait_for_runs(self, hub: Hub) -> None:
        """Wait, within the grace period, for the tasks running in this process to end."""
        while True:
            runs = [run for agent in hub.agents.values() for run in agent.engine.runs.values()]
            left = self.remaining()
            if not runs or left <= 0:
                if runs:
                    log.warning("graceful timeout: failing %d task(s) still running", len(runs))
                return
            await asyncio.wait([run.finished for run in runs], timeout=left)
