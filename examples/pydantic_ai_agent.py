"""A pydantic-ai agent, hosted by a2a-hub unchanged: a shop assistant with two tools.

    a2a-hub serve --agent shop=examples.pydantic_ai_agent:agent --llm-provider scripted
    a2a-hub chat http://127.0.0.1:8000/a2a/shop

The agent sets no model, so the hub runs it on its own LLM endpoint (``/llm/v1``): the
embedded model by default, an OpenAI-compatible upstream with ``--llm-provider openai``, or
the canned ``scripted`` provider above, which calls the tools a message names
(``order_status {"order_id": 42}``, ``refund {"order_id": 42}``).  ``refund`` needs a
person's approval: the task goes ``input-required`` and the next message (``yes``/``no``)
decides.  The conversation is kept by the hub (context id), across restarts.
"""

from __future__ import annotations

from pydantic_ai import Agent, DeferredToolRequests

agent: Agent[None, str | DeferredToolRequests] = Agent(
    name="Shop assistant",
    description="Answers questions about orders; refunds with a person's approval.",
    instructions="You help customers of a small shop. Be brief.",
    output_type=[str, DeferredToolRequests],
)

ORDERS = {42: "shipped on Monday", 43: "waiting for stock"}


@agent.tool_plain
def order_status(order_id: int) -> str:
    """Where an order is."""
    return ORDERS.get(order_id, "no such order")


@agent.tool_plain(requires_approval=True)
def refund(order_id: int) -> str:
    """Refund an order (a person approves it first)."""
    return f"order {order_id} refunded"
