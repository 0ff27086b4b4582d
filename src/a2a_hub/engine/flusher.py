"""Writing runs that keep working: one background task per engine, not a timer per run.

A run writes its events itself when its task settles; until then, each new event
marks the run dirty and the :class:`Flusher` writes it within ``delay`` seconds,
so that other instances and readers of the store see a long task progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

__all__ = ["Flushable", "Flusher"]

log = logging.getLogger("a2a_hub.engine")


class Flushable(Protocol):
    """What the flusher needs of a run."""

    @property
    def task_id(self) -> str: ...

    @property
    def dirty(self) -> bool: ...

    async def flush(self) -> None: ...


class Flusher:
    """Writes every dirty run each ``delay`` seconds (see the module docstring)."""

    def __init__(self, delay: float = 0.05) -> None:
        self.delay = delay
        self._dirty: set[Flushable] = set()
        self._loop: asyncio.Task[None] | None = None
        self._closed = False

    def mark_dirty(self, run: Flushable) -> None:
        """Note a run with unwritten events; it is written within ``delay``."""
        self._dirty.add(run)
        if self._loop is None and not self._closed:
            self._loop = asyncio.ensure_future(self._flush_loop())

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.delay)
            dirty, self._dirty = self._dirty, set()
            for run in dirty:
                if run.dirty:
                    try:
                        await run.flush()
                    except Exception as exc:  # kept queued; the next flush tries again
                        log.warning("writing task %s failed: %s", run.task_id, exc)
                        self._dirty.add(run)

    async def close(self) -> None:
        """Stop the background task (runs still write themselves when they settle)."""
        self._closed = True
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loop
