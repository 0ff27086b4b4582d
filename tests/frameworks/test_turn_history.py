"""How the pydantic-ai and OpenAI Agents SDK adapters read a context's stored messages back
as their framework's history, and what they refuse at start-up (issue 24)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from a2a_hub import AgentSpec
from a2a_hub.agents.frameworks import adapt
from a2a_hub.agents.frameworks._turns import decision, hub_model_name
from a2a_hub.agents.links import HubLinks
from a2a_hub.protocol.types import Message, Part, Role
from a2a_hub.settings import SettingsError

pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")


def said(role: Role, text: str = "", metadata: dict[str, Any] | None = None) -> Message:
    parts = [Part(text=text)] if text else [Part(data={"kind": "tool_call"})]
    return Message(message_id=uuid.uuid4().hex, role=role, parts=parts, metadata=metadata)


def test_answers_in_words() -> None:
    assert decision("Yes, go ahead") is True
    assert decision("ok") is True
    assert decision("No! too risky") is False
    assert decision("what does it do?") is None
    assert decision("") is None


def test_hub_model_names() -> None:
    assert hub_model_name("a2a-hub") == "a2a-hub"
    assert hub_model_name("a2a-hub:smollm2") == "smollm2"
    assert hub_model_name("a2a-hub/gpt-x") == "gpt-x"
    assert hub_model_name("openai:gpt-4o") is None
    assert hub_model_name(None) is None


def test_pydantic_ai_history_keeps_turns_and_drops_unanswered_calls() -> None:
    from pydantic_ai import ModelMessagesTypeAdapter
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from a2a_hub.agents.frameworks.pydantic_ai import KEY, model_history

    def record(*messages: Any) -> dict[str, Any]:
        return {
            KEY: {"messages": ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")}
        }

    turn1 = record(
        ModelRequest(parts=[SystemPromptPart("Be terse."), UserPromptPart("add 2 and 3")]),
        ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("add", 5, tool_call_id="c1")]),
        ModelResponse(parts=[TextPart("5")]),
    )
    asked = record(
        ModelRequest(parts=[UserPromptPart("delete a.txt")]),
        ModelResponse(parts=[ToolCallPart("delete_file", {"path": "a.txt"}, tool_call_id="c2")]),
    )
    stored = [
        said(Role.USER, "add 2 and 3"),
        said(Role.AGENT),  # a tool part on a working status: not a turn
        said(Role.AGENT, "5", turn1),
        said(Role.USER, "delete a.txt"),
        said(Role.AGENT, "Approve?", asked),
    ]
    # resuming: the calls the incoming answer is about stay, last
    resumed = model_history(stored, resuming=True)
    assert isinstance(resumed[0].parts[0], SystemPromptPart)
    assert [type(m).__name__ for m in resumed] == [
        "ModelRequest", "ModelResponse", "ModelRequest", "ModelResponse", "ModelRequest",
        "ModelResponse",
    ]  # fmt: skip
    assert isinstance(resumed[-1].parts[0], ToolCallPart)
    # a later turn (the question was canceled): the unanswered call is gone, and the
    # response holding only it too; a message without the record counts by its text
    later = model_history([*stored, said(Role.USER, "never mind"), said(Role.AGENT, "ok")])
    assert not any(
        isinstance(p, ToolCallPart) and p.tool_call_id == "c2" for m in later for p in m.parts
    )
    assert isinstance(later[-1], ModelResponse) and later[-1].parts == [TextPart("ok")]
    prompts = [p.content for m in later for p in m.parts if isinstance(p, UserPromptPart)]
    assert prompts == ["add 2 and 3", "delete a.txt", "never mind"]


def test_openai_agents_items_skip_answers_and_unanswered_calls() -> None:
    from a2a_hub.agents.frameworks.openai_agents import KEY, input_items

    call = {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "5"}
    answer = {"role": "assistant", "content": "5"}
    stored = [
        said(Role.USER, "add"),
        said(Role.AGENT, "Approve?", {KEY: {"state": {}, "pending": [{"call_id": "c1"}]}}),
        said(Role.USER, "yes"),  # the answer: the resumed run's items stand for it
        said(Role.AGENT),
        said(Role.AGENT, "5", {KEY: {"items": [call, output, answer]}}),
        said(Role.USER, "again"),
        said(Role.AGENT, "Approve?", {KEY: {"state": {}, "pending": [{"call_id": "c2"}]}}),
        said(Role.USER, "no"),
        said(Role.AGENT, "I did not.", {KEY: {"items": [{**call, "call_id": "c2"}]}}),
    ]
    assert input_items(stored) == [
        {"role": "user", "content": "add"},
        call,
        output,
        answer,
        {"role": "user", "content": "again"},
    ]


def test_objects_that_are_not_agents_are_refused_in_one_line() -> None:
    from agents import function_tool
    from pydantic_ai import Tool

    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    for obj, framework in ((Tool(shout), "pydantic-ai"), (function_tool(shout), "OpenAI Agents")):
        spec = AgentSpec(id="x", kind="python", executor="mod:thing")
        with pytest.raises(SettingsError) as info:
            adapt(obj, spec=spec, links=HubLinks())
        message = str(info.value)
        assert framework in message and "not an Agent instance" in message
        assert "\n" not in message
