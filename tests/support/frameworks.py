"""What the tests of hosted framework agents share: the official a2a-sdk client on a live hub,
a replay of a task's events with ``Last-Event-ID``, and a scripted LangChain chat model."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import new_text_message
from a2a.types.a2a_pb2 import GetTaskRequest, Role, SendMessageRequest, TaskState

from tests.support.sse import frames


def user(text: str, task_id: str | None = None, context_id: str | None = None) -> Any:
    return new_text_message(text, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)


async def sdk_client(http: httpx.AsyncClient, url: str, *, streaming: bool = False) -> Any:
    """The official a2a-sdk client of the agent at ``url`` (JSON-RPC 1.0), from its card."""
    card = await A2ACardResolver(http, url).get_agent_card()
    config = ClientConfig(
        httpx_client=http, streaming=streaming, supported_protocol_bindings=["JSONRPC"]
    )
    return ClientFactory(config).create(card)


async def send(client: Any, text: str, task: Any = None, **config: Any) -> Any:
    """One blocking send; the stream response (``task`` or ``message``)."""
    message = user(text, task.id if task else None, task.context_id if task else None)
    request = SendMessageRequest(message=message)
    if config:
        request.configuration.MergeFrom(type(request.configuration)(**config))
    events = [e async for e in client.send_message(request)]
    assert len(events) == 1, events
    return events[0]


async def stream(client: Any, text: str, task: Any = None) -> list[Any]:
    """A streamed send: every event, in order."""
    message = user(text, task.id if task else None, task.context_id if task else None)
    return [e async for e in client.send_message(SendMessageRequest(message=message))]


async def wait_state(client: Any, task_id: str, state: int) -> Any:
    """Poll GetTask until the task is in ``state`` (60 s at most)."""
    async with asyncio.timeout(60):
        while True:
            task = await client.get_task(GetTaskRequest(id=task_id))
            if task.status.state == state:
                return task
            assert task.status.state != TaskState.TASK_STATE_FAILED, task
            await asyncio.sleep(0.05)


async def replay(base: str, agent: str, task_id: str, after: int) -> list[tuple[int, Any]]:
    """The events of a task after event ``after``, read again over SSE with
    ``Last-Event-ID`` (REST subscribe): (id, event) pairs."""
    got: list[tuple[int, Any]] = []
    headers = {"A2A-Version": "1.0", "Last-Event-ID": str(after)}
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream("GET", f"{base}/a2a/{agent}/tasks/{task_id}:subscribe", headers=headers) as r,
    ):
        assert r.status_code == 200, await r.aread()
        async for frame in frames(r):
            if not frame.comment:
                assert frame.id is not None
                got.append((frame.id, frame.data))
    return got


def kinds(events: list[Any]) -> list[str]:
    return [e.WhichOneof("payload") for e in events]


def data_parts(task: Any) -> list[dict[str, Any]]:
    """The data parts of a task's history (status messages included), as dicts."""
    from google.protobuf import json_format

    return [
        json_format.MessageToDict(p.data)
        for m in task.history
        for p in m.parts
        if p.HasField("data")
    ]


# --- a scripted chat model -----------------------------------------------------------------


def scripted_model(script: Callable[[list[Any]], Any], *, slow_word: str | None = None) -> Any:
    """A LangChain chat model whose answer to each call is ``script(messages)`` (an
    ``AIMessage``), streamed word by word (tool calls in the last chunk); ``bind_tools``
    keeps it as it is (the script decides).  When the last human message holds ``slow_word``
    it thinks for a minute first (a task to cancel)."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

    async def think(messages: list[Any]) -> None:
        human = [m for m in messages if isinstance(m, HumanMessage)]
        if slow_word and human and slow_word in str(human[-1].content):
            await asyncio.sleep(60)

    def chunks(answer: AIMessage) -> Iterator[ChatGenerationChunk]:
        words = re.split(r"(?<= )", str(answer.content)) if answer.content else []
        for word in words:
            yield ChatGenerationChunk(message=AIMessageChunk(content=word, id=answer.id))
        if answer.tool_calls:
            calls = [
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
                for i, c in enumerate(answer.tool_calls)
            ]
            yield ChatGenerationChunk(
                message=AIMessageChunk(content="", id=answer.id, tool_call_chunks=calls)
            )

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:  # fmt: skip
            return ChatResult(generations=[ChatGeneration(message=script(messages))])

        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                             **kwargs: Any) -> ChatResult:  # fmt: skip
            await think(messages)
            return ChatResult(generations=[ChatGeneration(message=script(messages))])

        async def _astream(self, messages: Any, stop: Any = None, run_manager: Any = None,
                           **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:  # fmt: skip
            await think(messages)
            answer = script(messages)
            if answer.id is None:
                answer.id = f"ai-{len(messages)}"
            for chunk in chunks(answer):
                if run_manager:
                    await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk

    return Scripted()
