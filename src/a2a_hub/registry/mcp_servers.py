"""MCP server definitions in the registry (the servers agent tools may reach)."""

from __future__ import annotations

import json
import time
from typing import Any, Literal

import msgspec
from sqlalchemy import delete, insert, select, update

from a2a_hub.registry.base import RegistryBase, RegistryError
from a2a_hub.registry.schema import mcp_servers

__all__ = ["McpServer", "RegistryMcpServers"]


class McpServer(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An MCP server definition (used by agent tools): stdio ``command`` or HTTP ``url``."""

    name: str
    transport: Literal["stdio", "streamable-http"]
    command: list[str] | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    #: Listed in the hub's AI catalog (``/.well-known/ai-catalog.json``).
    public: bool = False


def _mcp(row: Any) -> McpServer:
    return McpServer(
        name=row.name,
        transport=row.transport,
        command=None if row.command is None else json.loads(row.command),
        url=row.url,
        headers=None if row.headers is None else json.loads(row.headers),
        public=bool(row.public),
    )


class RegistryMcpServers(RegistryBase):
    """MCP server definitions: list, get, put, delete."""

    async def list_mcp_servers(self) -> list[McpServer]:
        """Every MCP server definition, by name."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(select(mcp_servers).order_by(mcp_servers.c.name))
            return [_mcp(row) for row in rows]

    async def get_mcp_server(self, name: str) -> McpServer | None:
        """The MCP server definition with that name, if any."""
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(select(mcp_servers).where(mcp_servers.c.name == name))
            ).first()
        return None if row is None else _mcp(row)

    async def put_mcp_server(self, server: McpServer) -> None:
        """Create or replace an MCP server definition."""
        if server.transport == "stdio" and not server.command:
            raise RegistryError(f"MCP server {server.name!r}: stdio needs a command")
        if server.transport == "streamable-http" and not server.url:
            raise RegistryError(f"MCP server {server.name!r}: streamable-http needs a url")
        values = {
            "transport": server.transport,
            "command": None if server.command is None else json.dumps(server.command),
            "url": server.url,
            "headers": None if server.headers is None else json.dumps(server.headers),
            "updated_at": time.time(),
            "public": 1 if server.public else 0,
        }
        async with self.engine.begin() as conn:
            done = (
                await conn.execute(
                    update(mcp_servers).where(mcp_servers.c.name == server.name).values(**values)
                )
            ).rowcount
            if not done:
                await conn.execute(insert(mcp_servers).values(name=server.name, **values))

    async def delete_mcp_server(self, name: str) -> bool:
        """Remove an MCP server definition; True if it existed."""
        async with self.engine.begin() as conn:
            return bool(
                (await conn.execute(delete(mcp_servers).where(mcp_servers.c.name == name))).rowcount
            )
