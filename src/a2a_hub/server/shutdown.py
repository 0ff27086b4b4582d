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

A second Ctrl+C (SIGINT) during the drain ends the grace period at once, as it
makes uvicorn stop waiting for requests: step 3 is skipped and step 4 follows.

A Ctrl+C before the server watches signals (while it starts) stops it too.  Python
raises it as ``KeyboardInterrupt`` wherever the main thread is, and drops it when that is
a finalizer or a weakref callback (seen: ``serve`` went on serving).  So
:func:`catch_early_interrupts` counts each one; once nothing left to start can block
(:func:`hold_early_interrupts`) they are only counted, and :meth:`Drain.watch_signals`
raises a counted one again once the server watches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import AsyncIterator
from types import FrameType
from typing import Any

from a2a_hub.server.hub import Hub
from a2a_hub.server.sse import end_streams

__all__ = ["Drain", "catch_early_interrupts", "early_interrupts", "hold_early_interrupts"]

log = logging.getLogger("a2a_hub.server")

#: Ctrl+Cs received while the server started (see :func:`catch_early_interrupts`).
_early = 0
#: Whether such a Ctrl+C is raised too (until :func:`hold_early_interrupts`).
_raising = True


def catch_early_interrupts() -> None:
    """Until the server watches signals: count each SIGINT, and raise it as usual
    (``KeyboardInterrupt``) until :func:`hold_early_interrupts`.  Call first thing, from
    the main thread."""

    def handler(sig: int, frame: FrameType | None) -> None:
        global _early
        _early += 1
        if _raising:
            signal.default_int_handler(sig, frame)

    signal.signal(signal.SIGINT, handler)


def hold_early_interrupts() -> None:
    """From now on a Ctrl+C while starting is only counted, not raised: call once nothing
    left to start can block (so Python prints no "Exception ignored" traceback for one
    landing in a finalizer); :meth:`Drain.watch_signals` acts on it."""
    global _raising
    _raising = False


def early_interrupts() -> int:
    """How many Ctrl+Cs :func:`catch_early_interrupts` counted."""
    return _early


class Drain:
    """The shutdown of one process: when it began and how long tasks may still run."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.began: float | None = None
        #: Set by a second SIGINT: nothing more is waited for.
        self._hurry = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    @contextlib.asynccontextmanager
    async def serving(self, hub: Hub) -> AsyncIterator[Drain]:
        """The drain as a service of ``hub``'s app: signals are watched while it serves;
        on the way out draining begins (:meth:`begin`) and the tasks running in this
        process get what is left of the grace period (:meth:`wait_for_runs`) before the
        hub's own services stop."""
        self.watch_signals()
        try:
            yield self
        finally:
            self.begin()
            await self.wait_for_runs(hub)

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
        if _early:  # a Ctrl+C while starting, perhaps dropped: stop now that it is heard
            signal.raise_signal(signal.SIGINT)

    def _chain(self, previous: Any) -> Any:
        def handler(sig: int, frame: FrameType | None) -> None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self.begin, sig)
            if callable(previous):
                previous(sig, frame)
            elif previous == signal.SIG_DFL:  # nobody else handles it: the default action
                signal.signal(sig, signal.SIG_DFL)
                signal.raise_signal(sig)

        return handler

    def begin(self, sig: int | None = None) -> None:
        """Start draining now: end the open streams.  Again with SIGINT (a second
        Ctrl+C): end the grace period now."""
        if self.began is None:
            self.began = time.monotonic()
            log.info("shutting down: open streams ended, running tasks get up to %g s", self.grace)
        elif sig == signal.SIGINT and not self.hurried:
            self._hurry.set()
            log.info("second Ctrl+C: not waiting for running tasks")
        end_streams()

    @property
    def hurried(self) -> bool:
        """Whether a second Ctrl+C ended the grace period."""
        return self._hurry.is_set()

    def remaining(self) -> float:
        """Seconds left of the grace period (all of it if draining has not begun)."""
        if self.hurried:
            return 0.0
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
                    why = "second Ctrl+C" if self.hurried else "graceful timeout"
                    log.warning("%s: failing %d task(s) still running", why, len(runs))
                return
            hurry: asyncio.Future[Any] = asyncio.ensure_future(self._hurry.wait())
            waits: list[asyncio.Future[Any]] = [hurry, *(run.finished for run in runs)]
            try:
                await asyncio.wait(waits, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            finally:
                hurry.cancel()
