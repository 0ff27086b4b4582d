"""OpenAI Agents SDK agents the framework tests host (``tests.frameworks.oai_agents:NAME``)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
from agents import Agent, OpenAIChatCompletionsModel, function_tool
from openai import AsyncOpenAI


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (asks a person first)."""
    return f"deleted {path}"


@function_tool(failure_error_function=None)
def explode() -> str:
    """Fail."""
    raise RuntimeError("the explode tool blew up")


@function_tool
async def stall() -> str:
    """Wait forever."""
    await asyncio.Event().wait()
    return "never"


TOOLS = [add, delete_file, explode, stall]


def _chat(request: httpx.Request) -> httpx.Response:
    """A stand-in chat-completions endpoint: calls the tools the last user message names
    (with the JSON object after the name), else quotes it, streamed word by word."""
    body = json.loads(request.content)
    messages: list[dict[str, Any]] = body["messages"]
    tools = [t["function"]["name"] for t in body.get("tools", [])]
    last = messages[-1]
    users = [m for m in messages if m["role"] == "user"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        data = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "local",
                "choices": [choice]}  # fmt: skip
        return f"data: {json.dumps(data)}\n\n"

    out: list[str] = []
    said = str(users[-1]["content"]) if users else ""
    named = sorted((m.start(), n) for n in tools for m in re.finditer(rf"\b{n}\b", said))
    if last["role"] == "tool":
        turn = messages[messages.index(users[-1]) :]
        names = {c["id"]: c["function"]["name"] for m in turn for c in m.get("tool_calls") or []}
        results = [
            f"{names.get(m['tool_call_id'])} → {m['content']}" for m in turn if m["role"] == "tool"
        ]
        words = ("[local] Tool results: " + "; ".join(results)).split(" ")
    elif named:
        for i, (_, name) in enumerate(named):
            after = said.split(name, 1)[1].strip()
            args = after[: after.index("}") + 1] if after.startswith("{") else "{}"
            call = {"index": i, "id": f"call-{len(messages)}-{i}", "type": "function",
                    "function": {"name": name, "arguments": args}}  # fmt: skip
            out.append(chunk({"role": "assistant", "tool_calls": [call]}))
        out.append(chunk({}, "tool_calls"))
        words = []
    else:
        words = f"[local] turn {len(users)}: you said {said!r}".split(" ")
    for word in words:
        out.append(chunk({"role": "assistant", "content": word + " "}))
    if words:
        out.append(chunk({}, "stop"))
    out.append("data: [DONE]\n\n")
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content="".join(out).encode()
    )


_local_client = AsyncOpenAI(
    base_url="http://local.test/v1",
    api_key="unused",
    http_client=httpx.AsyncClient(transport=httpx.MockTransport(_chat)),
)

agent = Agent(name="oai", handoff_description="An OpenAI Agents SDK agent on the hub's model.",
              instructions="You are terse.", tools=TOOLS)  # fmt: skip

local_agent = Agent(
    name="oai-local", instructions="You are terse.", tools=TOOLS,
    model=OpenAIChatCompletionsModel(model="local", openai_client=_local_client),
)  # fmt: skip
