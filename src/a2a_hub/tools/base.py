"""Tools an agent's model may call, and how a call and its result show in a task.

A :class:`Tool` has a name, a description and a JSON schema of its arguments (what the
model is offered, in OpenAI format through :meth:`Tool.definition`) and runs with
:meth:`Tool.call`, which never raises for a failure of the tool itself: it returns a
:class:`ToolResult` with ``ok=False`` and a message the model (and the user) can read.

Every call and every result is shown as a data part on a ``working`` status of the task,
so it is stored with the task, streamed to followers and visible in ``GetTask`` history,
over every binding.  The shapes follow the ``tool_call`` / ``tool_response`` events of the
WebSocket catalogue (seed 003)::

    {"kind": "tool_call", "tool_call_id": "…", "tool_id": "add", "params": {"a": 2, "b": 3}}
    {"kind": "tool_response", "tool_call_id": "…", "tool_id": "add",
     "result": {"status": "success", "data": 5}}
    {"kind": "tool_response", …, "result": {"status": "error", "error_message": "…"}}

the same shapes as a client-side tool call (:func:`a2a_hub.engine.executor.tool_call_part`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import msgspec

from a2a_hub.engine.executor import tool_call_part, tool_response_part
from a2a_hub.llm.base import ToolCall, function_tool

__all__ = [
    "EXIT_TOOL",
    "ExitTool",
    "Tool",
    "ToolResult",
    "tool_call_data",
    "tool_response_data",
]

#: Name of the built-in tool an agent calls to end the loop it runs in.
EXIT_TOOL = "exit"


class ToolResult(msgspec.Struct):
    """The outcome of one tool call: ``text`` is what the model reads next.

    ``data`` is the structured result when the tool gave one; ``ok`` is False when the
    tool failed, timed out or could not be reached (``text`` then says why).
    """

    ok: bool
    text: str
    data: Any = None


class Tool(ABC):
    """One callable tool (see the module docstring)."""

    name: str
    description: str = ""
    parameters: dict[str, Any]

    def definition(self) -> dict[str, Any]:
        """The tool as offered to a model (OpenAI ``tools`` format)."""
        return function_tool(self.name, self.description, self.parameters)

    @abstractmethod
    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        """Run the tool; failures come back as ``ToolResult(ok=False, …)``, never raised."""


class ExitTool(Tool):
    """The built-in ``exit`` tool: calling it says the work is done (ends a ``loop``)."""

    name = EXIT_TOOL
    description = (
        "Call this when the work is finished and no further iteration is needed; "
        "it ends the loop this agent runs in."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"reason": {"type": "string", "description": "why the work is done"}},
    }

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        reason = arguments.get("reason")
        return ToolResult(ok=True, text=f"done: {reason}" if reason else "done", data=True)


def tool_call_data(call: ToolCall) -> dict[str, Any]:
    """The data part content showing a tool call."""
    return tool_call_part(call.id, call.name, call.arguments)


def tool_response_data(call: ToolCall, result: ToolResult) -> dict[str, Any]:
    """The data part content showing a tool's result (or its failure)."""
    if result.ok:
        outcome: dict[str, Any] = {
            "status": "success",
            "data": result.data if result.data is not None else result.text,
        }
    else:
        outcome = {"status": "error", "error_message": result.text}
    return tool_response_part(call.id, outcome, call.name)
