"""Tool calling in the provider interface: scripted rules, the openai wire format, embedded."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from a2a_hub.llm import ChatMessage, LLMError, ToolCall, function_tool
from a2a_hub.llm.openai import OpenAIProvider
from a2a_hub.llm.scripted import ScriptedProvider

ADD = function_tool(
    "add",
    "Add two integers.",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
SHOUT = function_tool(
    "shout",
    "Upper-case a text.",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)


def user(text: str) -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content="Use tools."),
        ChatMessage(role="user", content=text),
    ]


async def test_scripted_calls_the_tools_the_message_names_with_their_arguments() -> None:
    llm = ScriptedProvider()
    reply = await llm.chat(
        user('shout {"text": "hi"} then add {"a": 2, "b": 3}'), tools=[ADD, SHOUT]
    )
    assert reply.text == ""
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("shout", {"text": "hi"}),
        ("add", {"a": 2, "b": 3}),
    ]
    assert len({c.id for c in reply.tool_calls}) == 2


async def test_scripted_makes_up_valid_arguments_when_none_are_written() -> None:
    reply = await ScriptedProvider().chat(user("please add these"), tools=[ADD, SHOUT])
    [call] = reply.tool_calls
    assert call.name == "add" and call.arguments == {"a": 0, "b": 0}


async def test_scripted_answers_with_the_results_once_tools_have_answered() -> None:
    call = ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})
    messages = [
        *user("add {}"),
        ChatMessage(role="assistant", content="", tool_calls=[call]),
        ChatMessage(role="tool", content="5", tool_call_id="c1"),
    ]
    reply = await ScriptedProvider().chat(messages, tools=[ADD])
    assert reply.tool_calls == []
    assert reply.text == "[scripted] Tool results: add → 5"


async def test_scripted_without_a_named_tool_answers_plainly() -> None:
    reply = await ScriptedProvider().chat(user("hello there"), tools=[ADD])
    assert reply.tool_calls == []
    assert reply.text.startswith("[scripted]") and "hello there" in reply.text


async def test_scripted_chat_stream_is_the_chat_reply_in_words_then_its_calls() -> None:
    provider = ScriptedProvider()
    plain = user("just talk")
    items = [i async for i in provider.chat_stream(plain, tools=[ADD])]
    assert len(items) > 3 and all(isinstance(i, str) for i in items)
    assert "".join(items) == (await provider.chat(plain, tools=[ADD])).text  # type: ignore[arg-type]
    calling = user('add {"a": 1, "b": 2}')
    (only,) = [i async for i in provider.chat_stream(calling, tools=[ADD])]
    assert not isinstance(only, str)
    assert only.tool_calls == (await provider.chat(calling, tools=[ADD])).tool_calls


async def test_a_provider_without_tool_calling_refuses_tools_by_default() -> None:
    class Plain(ScriptedProvider):
        name = "plain"
        supports_tools = False

        async def chat(self, *args: Any, **kwargs: Any) -> Any:
            return await super(ScriptedProvider, self).chat(*args, **kwargs)

    with pytest.raises(LLMError, match="cannot call tools"):
        await Plain().chat(user("add"), tools=[ADD])
    assert (await Plain().chat(user("hi"))).text.startswith("[scripted]")


def test_embedded_refuses_tools_saying_why() -> None:
    pytest.importorskip("xllamacpp")
    from a2a_hub.llm import get_provider

    try:
        llm = get_provider("embedded")
    except LLMError as exc:  # the model wheel is missing
        pytest.skip(str(exc))
    with pytest.raises(LLMError, match="cannot call tools") as caught:
        asyncio.run(llm.chat(user("add"), tools=[ADD]))
    assert "SmolLM2" in str(caught.value) and "scripted" in str(caught.value)


def test_an_llm_agent_with_tools_on_the_embedded_provider_is_refused_at_start() -> None:
    from a2a_hub.agents.loader import build_executor
    from a2a_hub.settings import AgentSpec, SettingsError

    spec = AgentSpec(
        id="calc",
        kind="llm",
        options={"provider": "embedded", "mcp_servers": "http://127.0.0.1:1/mcp"},
    )
    with pytest.raises(SettingsError, match="embedded cannot call tools"):
        build_executor(spec)


# --------------------------------------------------------------------------- openai


class FakeToolModel:
    """Asks for ``add`` when offered tools and no tool has answered; then answers."""

    def __init__(self, arguments: str = '{"a": 2, "b": 3}') -> None:
        self.bodies: list[dict[str, Any]] = []
        self.arguments = arguments
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.bodies.append(body)
        answered = [m for m in body["messages"] if m["role"] == "tool"]
        if body.get("tools") and not answered:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "add", "arguments": self.arguments},
                    }
                ],
            }
        else:
            message = {"role": "assistant", "content": f"The sum is {answered[-1]['content']}."}
        return JSONResponse({"choices": [{"index": 0, "message": message}]})


@pytest.fixture
async def fake_model() -> AsyncIterator[tuple[FakeToolModel, str]]:
    model = FakeToolModel()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(model.app, log_level="warning", lifespan="off"))
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield model, f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        server.should_exit = True
        await task
        sock.close()


async def test_openai_sends_tools_and_reads_tool_calls(
    fake_model: tuple[FakeToolModel, str],
) -> None:
    model, url = fake_model
    async with OpenAIProvider(model="m", base_url=url, tries=1) as llm:
        first = await llm.chat(user("what is 2 + 3?"), tools=[ADD])
        assert first.text == ""
        assert first.tool_calls == [ToolCall(id="call_abc", name="add", arguments={"a": 2, "b": 3})]
        assert model.bodies[0]["tools"] == [ADD]
        follow = [
            *user("what is 2 + 3?"),
            ChatMessage(role="assistant", content="", tool_calls=first.tool_calls),
            ChatMessage(role="tool", content="5", tool_call_id="call_abc"),
        ]
        second = await llm.chat(follow, tools=[ADD])
    assert second.text == "The sum is 5." and second.tool_calls == []
    sent = model.bodies[1]["messages"]
    assert sent[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_abc",
                "type": "function",
                "function": {"name": "add", "arguments": json.dumps({"a": 2, "b": 3})},
            }
        ],
    }
    assert sent[3] == {"role": "tool", "tool_call_id": "call_abc", "content": "5"}


async def test_openai_tool_call_with_arguments_that_are_not_json_is_an_error(
    fake_model: tuple[FakeToolModel, str],
) -> None:
    model, url = fake_model
    model.arguments = "{not json"
    async with OpenAIProvider(model="m", base_url=url, tries=1) as llm:
        with pytest.raises(LLMError, match="arguments of tool call 'add' are not JSON"):
            await llm.chat(user("2 + 3?"), tools=[ADD])
