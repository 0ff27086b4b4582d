"""Tools for agents' models: the tool interface, call/result events, and MCP servers."""

from a2a_hub.tools.base import (
    EXIT_TOOL,
    ExitTool,
    Tool,
    ToolResult,
    tool_call_data,
    tool_response_data,
)

__all__ = [
    "EXIT_TOOL",
    "ExitTool",
    "Tool",
    "ToolResult",
    "tool_call_data",
    "tool_response_data",
]
