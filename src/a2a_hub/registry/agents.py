"""Agents registered in the registry (their :class:`~a2a_hub.settings.AgentSpec`), and
the counter every change bumps, which each hub instance polls to follow them."""

from __future__ import annotations

import time

import msgspec
from sqlalchemy import delete, insert, select, update

from a2a_hub.registry.base import RegistryBase, bump
from a2a_hub.registry.schema import agents, meta
from a2a_hub.settings import AgentSpec

__all__ = ["RegistryAgents"]


class RegistryAgents(RegistryBase):
    """Registered agents: version, list, get, put, delete."""

    async def agents_version(self) -> int:
        """A counter bumped by every agent change (cheap to poll)."""
        async with self.engine.connect() as conn:
            return int(
                (
                    await conn.execute(select(meta.c.number).where(meta.c.name == "agents"))
                ).scalar_one()
            )

    async def list_agents(self) -> list[AgentSpec]:
        """Every registered agent, by id."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(select(agents.c.spec).order_by(agents.c.agent_id))
            return [msgspec.json.decode(row.spec, type=AgentSpec) for row in rows]

    async def get_agent(self, agent_id: str) -> AgentSpec | None:
        """The registered agent with that id, if any."""
        async with self.engine.connect() as conn:
            data = (
                await conn.execute(select(agents.c.spec).where(agents.c.agent_id == agent_id))
            ).scalar_one_or_none()
        return None if data is None else msgspec.json.decode(data, type=AgentSpec)

    async def put_agent(self, spec: AgentSpec) -> bool:
        """Register or replace an agent; True if anything changed."""
        data = msgspec.json.encode(spec)
        async with self.engine.begin() as conn:
            old = (
                await conn.execute(select(agents.c.spec).where(agents.c.agent_id == spec.id))
            ).scalar_one_or_none()
            if old == data:
                return False
            if old is None:
                await conn.execute(
                    insert(agents).values(agent_id=spec.id, spec=data, updated_at=time.time())
                )
            else:
                await conn.execute(
                    update(agents)
                    .where(agents.c.agent_id == spec.id)
                    .values(spec=data, updated_at=time.time())
                )
            await bump(conn, "agents")
        return True

    async def delete_agent(self, agent_id: str) -> bool:
        """Unregister an agent; True if it was registered."""
        async with self.engine.begin() as conn:
            gone = (
                await conn.execute(delete(agents).where(agents.c.agent_id == agent_id))
            ).rowcount
            if gone:
                await bump(conn, "agents")
        return bool(gone)
