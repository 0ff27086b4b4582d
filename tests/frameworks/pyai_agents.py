"""pydantic-ai agents the framework tests host (``tests.frameworks.pyai_agents:NAME``)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, RetryPromptPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

#: Set by the stalling tool once it runs (the cancel test waits for it).
STALLED = asyncio.Event()


def _tools(agent: Agent[None, str | DeferredToolRequests]) -> None:
    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file (asks a person first)."""
        return f"deleted {path}"

    @agent.tool_plain
    def explode() -> str:
        """Fail."""
        raise RuntimeError("the explode tool blew up")

    @agent.tool_plain
    async def stall() -> str:
        """Wait forever."""
        STALLED.set()
        await asyncio.Event().wait()
        return "never"


async def _local(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
    prompts = [p.content for m in messages for p in m.parts if isinstance(p, UserPromptPart)]
    last = messages[-1]
    returns = [p for p in last.parts if isinstance(p, ToolReturnPart | RetryPromptPart)]
    if returns:
        yield "[local] Tool results: " + "; ".join(f"{p.tool_name} → {p.content}" for p in returns)
        return
    said = str(prompts[-1]) if prompts else ""
    names = {t.name for t in info.function_tools}
    calls = [(m.start(), m.group(0)) for n in names for m in re.finditer(rf"\b{n}\b", said)]
    if calls:
        for i, (_, name) in enumerate(sorted(calls)):
            after = said.split(name, 1)[1].strip()
            args = after[: after.index("}") + 1] if after.startswith("{") else "{}"
            yield {
                i: DeltaToolCall(
                    name=name, json_args=args, tool_call_id=f"call-{len(messages)}-{i}"
                )
            }
        return
    for word in f"[local] turn {len(prompts)}: you said {said!r}".split(" "):
        yield word + " "


agent: Agent[None, str | DeferredToolRequests] = Agent(
    name="pyai",
    description="A pydantic-ai agent on the hub's model.",
    output_type=[str, DeferredToolRequests],
    system_prompt="You are terse.",
)
_tools(agent)

local_agent: Agent[None, str | DeferredToolRequests] = Agent(
    FunctionModel(stream_function=_local),
    name="pyai-local",
    output_type=[str, DeferredToolRequests],
    system_prompt="You are terse.",
)
_tools(local_agent)
