"""Writing runs that keep working, as soon as they have something to write.

A run writes its events itself when its task settles; until then, each new event
marks the run dirty and the :class:`Flusher` writes it on the next turn of the
event loop (events are published only once written, so this is what a stream of
a long task waits for).  A run has at most one write in flight: events that come
during a write go into the next one (coalescing), and the stores' group commit
batches the writes of different tasks.  A write that fails is retried with
exponential backoff, without a log line per try: the store logs its outage
(:mod:`a2a_hub.stores.outage`), and any other failure is logged once per run
when it starts and once when the run is written again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from a2a_hub._backoff import Backoff
from a2a_hub.protocol.errors import StoreUnavailableError
from a2a_hub.stores.base import LogConflictError

__all__ = ["RETRY", "Flushable", "Flusher"]

log = logging.getLogger("a2a_hub.engine")

#: When a failed write is tried again: from 50 ms, doubling, at most 5 s apart, for ever
#: (the run keeps its events until the store takes them or the run ends).
RETRY = Backoff(initial=0.05, max_delay=5.0, max_tries=None)


class Flushable(Protocol):
    """What the flusher needs of a run."""

    @property
    def task_id(self) -> str: ...

    @property
    def dirty(self) -> bool: ...

    async def flush(self) -> None: ...


class Flusher:
    """Writes every dirty run on the next loop turn (see the module docstring)."""

    def __init__(self, retry: Backoff = RETRY) -> None:
        self.retry = retry
        #: Runs marked dirty since the last turn.
        self._marked: set[Flushable] = set()
        #: Runs with a write in flight (or waiting to retry), by their writer.
        self._writers: dict[Flushable, asyncio.Task[None]] = {}
        self._scheduled = False
        self._closed = False

    def mark_dirty(self, run: Flushable) -> None:
        """Note a run with unwritten events; it is written on the next loop turn."""
        if run in self._writers or self._closed:
            return  # its writer loops until the run is clean
        self._marked.add(run)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._turn)

    def _turn(self) -> None:
        self._scheduled = False
        marked, self._marked = self._marked, set()
        if self._closed:
            return
        for run in marked:
            # a run that settled meanwhile wrote itself: no writer for it
            if run.dirty and run not in self._writers:
                self._writers[run] = asyncio.ensure_future(self._write(run))

    async def _write(self, run: Flushable) -> None:
        try:
            await self.write_until_clean(run)
        finally:
            if self._writers.get(run) is asyncio.current_task():
                del self._writers[run]

    async def write_until_clean(self, run: Flushable) -> bool:
        """Write ``run`` until it has nothing left to write, retrying failures with
        backoff; False if its events can never be written (the log moved on)."""
        failures = 0
        while run.dirty:
            try:
                await run.flush()
            except LogConflictError as exc:
                # the log moved on without this run (another instance failed the task as
                # orphaned): its events can never be written, so trying again is futile;
                # the run's own end reports it to whoever waits for it
                log.warning("task %s: not written, %s", run.task_id, exc)
                return False
            except Exception as exc:  # kept queued: tried again after a while
                failures += 1
                if failures == 1 and not isinstance(exc, StoreUnavailableError):
                    log.warning(
                        "writing task %s failed (retrying): %s: %s",
                        run.task_id,
                        type(exc).__name__,
                        exc,
                    )
                await asyncio.sleep(self.retry.delay(failures))
                continue
            if failures:
                log.info("task %s written after %d failed tries", run.task_id, failures)
                failures = 0
        return True

    @property
    def writing(self) -> int:
        """How many runs have a write in flight or waiting to be retried."""
        return len(self._writers)

    async def close(self) -> None:
        """Stop writing (runs still write themselves when they settle)."""
        self._closed = True
        self._marked.clear()
        writers = list(self._writers.values())
        for writer in writers:
            writer.cancel()
        for writer in writers:
            with contextlib.suppress(asyncio.CancelledError):
                await writer
