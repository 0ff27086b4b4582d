"""The llm agent builds its prompt from the hub's conversation store (issue 11, item 6).

The scripted provider picks its sentence by the number of user turns it is sent, so its
reply shows how much of the conversation the prompt held.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.engine.caller import Caller
from a2a_hub.protocol.types import Message, Part, Role, SendMessageRequest, Task, TaskState
from a2a_hub.stores.memory import MemoryStore

FIRST = "[scripted] You said"  # one user turn in the prompt
SECOND = "[scripted] About"  # two

ALICE = Caller(principal="alice", key_id="k1", scopes=frozenset({"invoke"}))
BOB = Caller(principal="bob", key_id="k2", scopes=frozenset({"invoke"}))


def req(text: str, context_id: str | None = None) -> SendMessageRequest:
    message = Message(
        message_id=uuid.uuid4().hex, role=Role.USER, parts=[Part(text=text)], context_id=context_id
    )
    return SendMessageRequest(message=message)


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    settings = Settings.from_flat(
        agents=[AgentSpec(id="llm", kind="llm", options={"provider": "scripted"})],
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
    )
    h = Hub(settings, store=MemoryStore())
    await h.start()
    yield h
    await h.close()


async def say(hub: Hub, text: str, caller: Caller, context_id: str | None = None) -> Task:
    task = await hub.agents["llm"].engine.send(req(text, context_id), caller=caller)
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    return task


def reply(task: Task) -> str:
    assert task.status.message is not None
    return task.status.message.parts[0].text or ""


async def recorded(hub: Hub, context_id: str, count: int) -> None:
    assert hub.registry is not None
    for _ in range(400):  # a hang guard of 20 s, not a timing check
        found = await hub.registry.conversation_tail("llm", context_id, 100)
        if found is not None and len(found[1]) >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the conversation was not recorded")


async def test_the_prompt_holds_the_recorded_conversation(hub: Hub) -> None:
    first = await say(hub, "My name is Ada.", ALICE)
    assert reply(first).startswith(FIRST)
    await recorded(hub, first.context_id, 2)
    # the earlier task is gone from the task store (retention, a TTL): the conversation
    # store still has the turn, and the model is sent it
    assert await hub.store.delete_task("llm", first.id)
    second = await say(hub, "What is my name?", ALICE, first.context_id)
    assert reply(second).startswith(SECOND), reply(second)


async def test_not_yet_recorded_turns_come_from_the_tasks(hub: Hub) -> None:
    first = await say(hub, "one", ALICE)
    second = await say(hub, "two", ALICE, first.context_id)  # maybe not recorded yet
    assert reply(second).startswith(SECOND)
    await recorded(hub, first.context_id, 4)
    third = await say(hub, "three", ALICE, first.context_id)
    assert "Consider" in reply(third)  # three user turns, each once


async def test_another_callers_conversation_is_never_in_the_prompt(hub: Hub) -> None:
    first = await say(hub, "My secret is 42.", ALICE)
    await recorded(hub, first.context_id, 2)
    theirs = await say(hub, "What is the secret?", BOB, first.context_id)
    assert reply(theirs).startswith(FIRST)  # only bob's own message
