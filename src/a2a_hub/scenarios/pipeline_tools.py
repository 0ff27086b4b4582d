"""The MCP server of the pipeline scenario: ``add`` and ``shout``, over stdio.

``python -m a2a_hub.scenarios.pipeline_tools`` (needs ``pip install 'a2a-hub[mcp]'``).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("pipeline-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Say a text loudly: upper case and an exclamation mark."""
    return text.upper() + "!"


if __name__ == "__main__":
    server.run()
