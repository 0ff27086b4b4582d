"""The engines of replaced or removed agents, closed once their running tasks have ended.

An agent that leaves the hub's table (:meth:`a2a_hub.server.hub.Hub.remove`, or replaced
by :meth:`~a2a_hub.server.hub.Hub.add`) serves no new request at once, while the tasks
running on its engine finish there; the engine and its executor close when the last one
ends, and the engine leaves the cluster.  At the hub's shutdown what still runs on them
is stopped like the hosted agents' tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from a2a_hub.engine.cluster import Cluster
from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.run import TaskRun
from a2a_hub.protocol.errors import TaskNotCancelableError, TaskNotFoundError

__all__ = ["Retiring"]

log = logging.getLogger("a2a_hub.server")


class Retiring:
    """The engines on their way out, each closed by a background task once its runs end."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._draining: dict[asyncio.Task[None], TaskEngine] = {}

    def retire(self, engine: TaskEngine) -> None:
        """Close ``engine`` once its running tasks have ended (it serves no new requests)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no event loop: nothing ever ran on this engine
            self._leave_cluster(engine)
            return
        drain = asyncio.ensure_future(self._drain(engine))
        self._draining[drain] = engine
        drain.add_done_callback(self._retired)

    async def cancel(self, engine: TaskEngine) -> None:
        """Cancel every task running on ``engine``, wait until all its runs have ended, and
        close it."""
        for run in _running(engine):
            with contextlib.suppress(TaskNotFoundError, TaskNotCancelableError):
                await engine.cancel_task(run.task_id)  # ends canceled (no task yet: no-op)
        while runs := _running(engine):
            await asyncio.wait([run.finished for run in runs])
        await self._close(engine)

    async def close(self) -> None:
        """Stop waiting and close every engine on its way out now (what runs fails)."""
        draining = list(self._draining.items())
        for drain, _ in draining:
            drain.cancel()
        for drain, engine in draining:
            with contextlib.suppress(asyncio.CancelledError):
                await drain
            await engine.close()
            await engine.executor.close()

    async def _drain(self, engine: TaskEngine) -> None:
        while runs := _running(engine):
            await asyncio.wait([run.finished for run in runs])
        await self._close(engine)

    def _retired(self, drain: asyncio.Task[None]) -> None:
        self._draining.pop(drain, None)
        if not drain.cancelled() and drain.exception() is not None:
            log.error("closing engine of a removed agent failed", exc_info=drain.exception())

    async def _close(self, engine: TaskEngine) -> None:
        await engine.close()
        await engine.executor.close()
        self._leave_cluster(engine)

    def _leave_cluster(self, engine: TaskEngine) -> None:
        if self.cluster.engines.get(engine.agent_id) is engine:
            del self.cluster.engines[engine.agent_id]


def _running(engine: TaskEngine) -> list[TaskRun]:
    """The runs executing on ``engine`` in this process.

    Reads the engine's private run table: the engine has no public list of its
    runs yet (only ``live(task_id)``).
    """
    return list(engine.runs.values())
