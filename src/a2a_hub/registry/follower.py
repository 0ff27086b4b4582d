"""Hosting what the registry says: the agents it lists, and forgetting old conversations.

The agents of a hub with a registry live in the registry, shared by every instance:
an agent created, changed or removed there (admin API, ``a2a-hub agents``, another
instance) is hosted here, replaced or removed within :attr:`RegistryFollower.interval`
(the registry's agent version is polled; the list is read only when it moved).  The
follower also deletes conversations older than ``conversation_retention`` days, once a
minute.

A service (``async with``): on entry the agents the hub was configured with are put in
the registry, the registry's agents are hosted, and polling starts; on exit it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from types import TracebackType
from typing import Protocol

from a2a_hub.registry import Registry
from a2a_hub.settings import AgentSpec, SettingsError

__all__ = ["AgentTable", "RegistryFollower"]

log = logging.getLogger("a2a_hub.registry")

#: Seconds between two deletions of old conversations.
CLEANUP_EVERY = 60.0


class _Hosted(Protocol):
    @property
    def spec(self) -> AgentSpec: ...


class AgentTable(Protocol):
    """What the follower changes: the hub's table of hosted agents."""

    @property
    def agents(self) -> Mapping[str, _Hosted]: ...

    def add(self, spec: AgentSpec) -> object: ...

    async def remove(self, agent_id: str) -> object: ...


class RegistryFollower:
    """Keeps a hub's agents as the registry lists them (see the module docstring)."""

    def __init__(
        self, table: AgentTable, registry: Registry, *, conversation_retention: float = 0
    ) -> None:
        self.table = table
        self.registry = registry
        #: Days after which a conversation is deleted (0: kept for ever).
        self.conversation_retention = conversation_retention
        #: How often (seconds) the registry's agent version is polled.
        self.interval = 0.5
        self._version = -1
        self._last_cleanup = 0.0
        self._task: asyncio.Task[None] | None = None

    async def sync(self) -> bool:
        """Host the registry's agents as they are now (added, changed, removed); True if
        its agent version moved since the last call."""
        version = await self.registry.agents_version()
        if version == self._version:
            return False
        self._version = version
        wanted = {spec.id: spec for spec in await self.registry.list_agents()}
        agents = self.table.agents
        for agent_id, spec in wanted.items():
            hosted = agents.get(agent_id)
            if hosted is not None and hosted.spec == spec:
                continue
            try:
                self.table.add(spec)
            except (SettingsError, ValueError, ImportError) as exc:
                log.error("registry agent %r cannot be hosted here: %s", agent_id, exc)
        for agent_id in [a for a in agents if a not in wanted]:
            await self.table.remove(agent_id)
        return True

    async def forget_old_conversations(self) -> None:
        """Delete the conversations older than the retention (at most once a minute)."""
        days = self.conversation_retention
        loop = asyncio.get_running_loop()
        if not days or loop.time() - self._last_cleanup < CLEANUP_EVERY:
            return
        self._last_cleanup = loop.time()
        gone = await self.registry.forget_conversations(days * 86400)
        if gone:
            log.info("deleted %d conversations older than %g days", gone, days)

    async def _follow(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.sync()
                await self.forget_old_conversations()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("reading the registry's agents failed; retrying", exc_info=True)

    async def __aenter__(self) -> RegistryFollower:
        for hosted in list(self.table.agents.values()):
            await self.registry.put_agent(hosted.spec)
        await self.sync()
        self._task = asyncio.ensure_future(self._follow())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
