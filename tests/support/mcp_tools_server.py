"""An MCP server for the tests: ``add``, ``shout`` and ``hang`` (never answers in time).

Run ``python mcp_tools_server.py`` for stdio, ``python mcp_tools_server.py http PORT`` for
streamable HTTP on 127.0.0.1:PORT (path ``/mcp``).  With ``http``, requests without the
header ``x-token: secret`` are refused when ``MCP_REQUIRE_TOKEN`` is set.
"""

from __future__ import annotations

import asyncio
import sys

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("test-tools")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def shout(text: str) -> str:
    """Upper-case a text and add an exclamation mark."""
    return text.upper() + "!"


@mcp.tool()
async def hang(seconds: float = 120) -> str:
    """Sleep far longer than any caller waits."""
    await asyncio.sleep(seconds)
    return "woke up"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run()
