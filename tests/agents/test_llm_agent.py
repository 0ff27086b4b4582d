"""The llm agent kind and the judge's request checks, in process."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec

from a2a_hub.agents.llm import LLMExecutor
from a2a_hub.engine import TaskEngine
from a2a_hub.llm import ChatMessage
from a2a_hub.protocol.types import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a_hub.scenarios.debate import DebateJudge
from a2a_hub.stores.memory import MemoryStore


def req(
    text: str | None = None,
    *,
    data: Any = None,
    context_id: str | None = None,
    task_id: str | None = None,
) -> SendMessageRequest:
    part = Part(text=text) if data is None else Part(data=data)
    return SendMessageRequest(
        message=Message(
            message_id=uuid.uuid4().hex,
            role=Role.USER,
            parts=[part],
            context_id=context_id,
            task_id=task_id,
        )
    )


class Recording(LLMExecutor):
    """Remembers what the model was sent."""

    def __init__(self, **options: Any) -> None:
        super().__init__(provider="scripted", **options)
        self.seen: list[list[ChatMessage]] = []

    def messages_for(self, history: list[Message]) -> list[ChatMessage]:
        messages = super().messages_for(history)
        self.seen.append(messages)
        return messages


async def test_llm_agent_remembers_the_context_across_tasks() -> None:
    agent = Recording(instruction="Be brief.")
    engine = TaskEngine("llm", agent, MemoryStore())
    first = await engine.send(req("My name is Ada."))
    assert isinstance(first, Task) and first.status.state is TaskState.COMPLETED
    answer = first.status.message
    assert answer is not None and (answer.parts[0].text or "").startswith("[scripted]")
    second = await engine.send(req("What is my name?", context_id=first.context_id))
    assert isinstance(second, Task) and second.id != first.id
    sent = agent.seen[-1]
    assert [m.role for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[0].content == "Be brief." and sent[1].content == "My name is Ada."
    assert sent[-1].content == "What is my name?"


async def test_llm_agent_streams_its_reply_as_artifact_chunks() -> None:
    engine = TaskEngine("llm", LLMExecutor(provider="scripted"), MemoryStore())
    stream = await engine.send_stream(req("Tell me something"))
    events = [e.event async for e in stream]
    chunks = [e.artifact_update for e in events if e.artifact_update is not None]
    assert len(chunks) > 1, "streamed in several chunks"
    assert not chunks[0].append and all(c.append for c in chunks[1:])
    assert chunks[-1].last_chunk and not any(c.last_chunk for c in chunks[:-1])
    final = events[-1].status_update
    assert final is not None and final.status.state is TaskState.COMPLETED
    streamed = "".join(c.artifact.parts[0].text or "" for c in chunks)
    assert final.status.message is not None
    assert final.status.message.parts[0].text == streamed.strip()
    task = await engine.get_task(final.task_id)
    assert task.artifacts is not None and len(task.artifacts) == 1
    assert "".join(p.text or "" for p in task.artifacts[0].parts) == streamed


async def test_a_failing_provider_fails_the_task_clearly() -> None:
    agent = LLMExecutor(
        provider="openai",
        base_url="http://127.0.0.1:9/v1",
        api_key="k",
        model="m",
        tries=2,
        base_delay=0.01,
    )
    task = await TaskEngine("llm", agent, MemoryStore()).send(req("hi"))
    assert isinstance(task, Task) and task.status.state is TaskState.FAILED
    text = task.status.message.parts[0].text if task.status.message else ""
    assert text and text.startswith("the language model failed") and "2 tries" in text


async def test_the_judge_rejects_bad_requests_naming_the_problem() -> None:
    engine = TaskEngine("judge", DebateJudge(provider="scripted"), MemoryStore())
    good_people = {"pro_debater": "http://127.0.0.1:1", "con_debater": "http://127.0.0.1:2"}
    cases = [
        (
            {
                "participants": {"pro_debater": "http://x"},
                "config": {"topic": "t", "num_rounds": 1},
            },
            "missing participant role(s): con_debater",
        ),
        ({"participants": good_people, "config": {"topic": "t"}}, "config.num_rounds is missing"),
        (
            {"participants": good_people, "config": {"topic": "t", "num_rounds": "2"}},
            "config.num_rounds must be an integer",
        ),
        ({"participants": good_people, "config": {"num_rounds": 2}}, "config.topic is missing"),
        ("not json at all", "must be an EvalRequest"),
    ]
    for payload, words in cases:
        message = req(payload) if isinstance(payload, str) else req(data=payload)
        task = await engine.send(message)
        assert isinstance(task, Task) and task.status.state is TaskState.REJECTED, payload
        assert task.status.message is not None
        assert words in (task.status.message.parts[0].text or ""), task.status.message
    # the request may also come as JSON text
    text = msgspec.json.encode({"participants": good_people, "config": {}}).decode()
    task = await engine.send(req(text))
    assert isinstance(task, Task) and task.status.state is TaskState.REJECTED
