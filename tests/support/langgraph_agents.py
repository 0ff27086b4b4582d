"""LangGraph graphs for the tests (importable by a hub process: ``tests.support.langgraph_agents:
graph``): examples/langgraph_agent.py's graph around a scripted chat model, and graphs a hub
must refuse."""

from __future__ import annotations

import re
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import START, StateGraph

from examples.langgraph_agent import build_graph
from tests.support.frameworks import scripted_model

SLOW_WORD = "slowly"


def _call(name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{name}"}])


def script(messages: list[Any]) -> AIMessage:
    """The model's answers: arithmetic through the tools, ask_human, and a memory of names."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        if last.name == "ask_human":
            return AIMessage(content=f"You said {last.content}")
        return AIMessage(content=f"The result is {last.content}")
    said = str(last.content) if isinstance(last, HumanMessage) else ""
    numbers = [float(n) for n in re.findall(r"\d+", said)]
    if said.startswith("add") and len(numbers) == 2:
        return _call("add", a=numbers[0], b=numbers[1])
    if said.startswith("ask me"):
        return _call("ask_human", question="Which number?")
    if said.startswith("what is my name"):
        for message in messages:
            found = re.match(r"my name is (\w+)", str(message.content))
            if isinstance(message, HumanMessage) and found:
                return AIMessage(content=f"Your name is {found.group(1)}")
        return AIMessage(content="I do not know your name")
    if said.startswith("my name is"):
        return AIMessage(content="Nice to meet you")
    return AIMessage(content="once upon a time there was a hub that kept every word")


#: examples/langgraph_agent.py's graph, its model scripted (no LLM needed)
graph = build_graph(scripted_model(script, slow_word=SLOW_WORD))


class Counter(TypedDict):
    count: int


def _count(state: Counter) -> Counter:
    return {"count": state.get("count", 0) + 1}


_builder = StateGraph(Counter)
_builder.add_node("count", _count)
_builder.add_edge(START, "count")
#: a graph whose state has no ``messages``: a hub refuses it at start-up
no_messages = _builder.compile()
