"""Google ADK agents for the tests, written as their authors would (no a2a-hub in them but
the LLM endpoint's address): served with ``--agent ID=tests.support.adk_agents:NAME``.

The model is the hub's own, reached through LiteLLM; the tests run the hub on the scripted
provider, which calls a tool when the message names it (``add {"a": 2, "b": 3}``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from google.adk.agents import BaseAgent, LlmAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.models.lite_llm import LiteLlm
from google.adk.tools import LongRunningFunctionTool

from a2a_hub import llm_api_key, llm_base_url


def add(a: int, b: int) -> dict[str, int]:
    """Adds two whole numbers."""
    return {"sum": a + b}


def ask_manager(amount: int) -> dict[str, str]:
    """Asks a manager to approve a refund of the amount; the answer comes later."""
    return {"status": "waiting for the manager"}


async def wait_long(seconds: int) -> dict[str, str]:
    """Waits that many seconds."""
    await asyncio.sleep(seconds)
    return {"status": "waited"}


def model() -> LiteLlm:
    return LiteLlm(model="openai/default", api_base=llm_base_url(), api_key=llm_api_key())


root_agent = LlmAgent(
    name="calculator",
    description="Adds numbers and asks a manager for refunds.",
    instruction="You add numbers with the add tool; refunds need ask_manager.",
    model=model(),
    tools=[add, LongRunningFunctionTool(ask_manager), wait_long],
)


class BrokenAgent(BaseAgent):
    """An agent whose every run raises."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        raise RuntimeError("the oven is on fire")
        yield  # pragma: no cover - makes this an async generator


broken_agent = BrokenAgent(name="broken", description="Always fails.")

#: Not an agent: an ADK object a2a-hub cannot host.
not_an_agent = LongRunningFunctionTool(ask_manager)
