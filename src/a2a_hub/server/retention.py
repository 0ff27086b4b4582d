"""Removing finished tasks older than ``task_ttl``, in the background, in small batches.

Every :data:`INTERVAL` seconds, for each hosted agent, terminal tasks last updated
more than ``task_ttl`` seconds ago are removed with their event logs and push
configs (:meth:`~a2a_hub.stores.base.ExpiringTasks.purge_expired`), and the message claims
of idempotent sends made that long ago (:meth:`~a2a_hub.stores.base.MessageClaims.purge_claims`;
a retry older than ``task_ttl`` is a new message), :data:`BATCH` at a
time with a pause between batches, so that requests are never stalled behind a
long delete.  Several instances sharing a store may all do it: removing a task
twice is harmless.  A store that is down is skipped until the next round (its
outage is logged by the store itself).

A service of the app (``async with``: the rounds run inside the block).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from types import TracebackType

from a2a_hub.server.hub import Hub

__all__ = ["BATCH", "INTERVAL", "Retention"]

log = logging.getLogger("a2a_hub.server")

#: Seconds between two rounds.
INTERVAL = 60.0
#: Tasks removed per batch.
BATCH = 100
#: Seconds between two batches of one round.
PAUSE = 0.05


class Retention:
    """The background removal of one hub's old finished tasks."""

    def __init__(self, hub: Hub, ttl: float, *, interval: float = INTERVAL) -> None:
        self.hub = hub
        self.ttl = ttl
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the rounds (the first one at once); nothing happens with ``ttl`` 0."""
        if self.ttl > 0:
            self._task = asyncio.ensure_future(self._loop())

    async def close(self) -> None:
        """Stop the rounds."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def __aenter__(self) -> Retention:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def run_once(self) -> int:
        """One round over every hosted agent; returns how many tasks were removed."""
        before = time.time() - self.ttl
        removed = 0
        store = self.hub.store
        for agent_id in list(self.hub.agents):
            for purge in (store.purge_expired, store.purge_claims):
                while True:
                    batch = await purge(agent_id, before, BATCH)
                    if purge == store.purge_expired:
                        removed += batch
                    if batch < BATCH:
                        break
                    await asyncio.sleep(PAUSE)
        if removed:
            log.info("removed %d finished task(s) older than %g s", removed, self.ttl)
        return removed

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except Exception as exc:  # the store is down: try again next round
                log.debug("task retention skipped this round: %s", exc)
            await asyncio.sleep(self.interval)
