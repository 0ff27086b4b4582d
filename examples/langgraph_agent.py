"""A LangGraph agent with tools, hosted unchanged by a2a-hub:

    a2a-hub serve --agent calc=examples.langgraph_agent:graph
    a2a-hub chat http://127.0.0.1:8000/a2a/calc

A ``MessagesState`` graph in the usual ReAct shape: an ``agent`` node asks the chat model,
which may call tools; a ``ToolNode`` runs them and hands the results back to the model.
Its tools: ``add`` and ``multiply``, and ``ask_human``, which stops the graph in
``interrupt()`` until the person answers (the task is ``input-required`` meanwhile; the next
message of the conversation resumes it).

The model is an OpenAI-compatible chat model (``langchain-openai``) pointed at the hub's own
LLM endpoint, ``A2A_HUB_LLM_URL`` (``http://127.0.0.1:8000/llm/v1`` when unset): the hub's
configured provider answers, the embedded model offline.  a2a-hub keeps each conversation's
checkpoints beside its tasks (SQLite file or PostgreSQL), so a conversation survives a
restart.  :func:`build_graph` takes any LangChain chat model that can bind tools.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@tool
def ask_human(question: str) -> str:
    """Ask the person a question and wait for the answer."""
    return str(interrupt(question))


TOOLS = [add, multiply, ask_human]

SYSTEM = (
    "You are a careful calculator. Use the tools for arithmetic; ask the person with "
    "ask_human when a number is missing."
)


def build_graph(model: BaseChatModel) -> Any:
    """The compiled graph around ``model`` (a2a-hub gives it its checkpointer)."""
    bound = model.bind_tools(TOOLS)

    async def agent(state: MessagesState) -> dict[str, Any]:
        reply = await bound.ainvoke([("system", SYSTEM), *state["messages"]])
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(name="Calculator")


def hub_model() -> BaseChatModel:
    """A chat model served by the hub's LLM endpoint (OpenAI-compatible)."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        base_url=os.environ.get("A2A_HUB_LLM_URL", "http://127.0.0.1:8000/llm/v1"),
        api_key=os.environ.get("A2A_HUB_LLM_KEY", "not-needed"),  # type: ignore[arg-type]
        model=os.environ.get("A2A_HUB_LLM_MODEL", "default"),
        temperature=0,
    )


graph = build_graph(hub_model())
