"""A pydantic-ai ``Agent`` and an OpenAI Agents SDK ``Agent`` hosted unchanged (issue 24).

Each test runs once per framework, through real HTTP with the official a2a-sdk client, on a
hub over SQLite.  The agents set no model: they run on the hub's own LLM endpoint
(``/llm/v1``) backed by the scripted provider, which picks its sentence by the number of
user turns it is sent (so a reply shows how much of the conversation the agent sent) and
calls the tools a message names.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from a2a.helpers import get_artifact_text
from a2a.types.a2a_pb2 import CancelTaskRequest, TaskState

from tests.frameworks._hosted import data_message, hosted, parts_data, text, user

pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")

#: Framework -> (the agent, the name its card takes from the object).
AGENTS = {
    "pydantic-ai": ("tests.frameworks.pyai_agents:agent", "pyai"),
    "openai-agents": ("tests.frameworks.oai_agents:agent", "oai"),
}
FIRST, SECOND, THIRD = "[scripted] You said", "[scripted] About", "[scripted] Consider"


@pytest.fixture(params=sorted(AGENTS))
def framework(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def agent(framework: str) -> str:
    return AGENTS[framework][0]


async def test_blocking_send_and_the_card(framework: str, agent: str, tmp_path: Path) -> None:
    async with hosted(agent, tmp_path) as hub:
        card = (await hub.http.get(f"{hub.url}/.well-known/agent-card.json")).json()
        assert card["name"] == AGENTS[framework][1]
        assert {"add", "delete_file"} <= {s["id"] for s in card["skills"]}
        task = await hub.send(user("hello there"))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        reply = text(task.status.message)
        assert reply.startswith(f'{FIRST} "hello there"')
        assert get_artifact_text(task.artifacts[0]) == reply


async def test_streamed_send_in_chunks_replayable(agent: str, tmp_path: Path) -> None:
    async with hosted(agent, tmp_path) as hub:
        events = await hub.stream(user("stream this please"))
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds[0] == "task" and kinds[-1] == "status_update"
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        chunks = [e.artifact_update for e in events if e.WhichOneof("payload") == "artifact_update"]
        assert len(chunks) > 3
        assert not chunks[0].append and all(c.append for c in chunks[1:])
        assert chunks[-1].last_chunk and not any(c.last_chunk for c in chunks[:-1])
        streamed = "".join(get_artifact_text(c.artifact) for c in chunks)
        final = text(events[-1].status_update.status.message)
        assert streamed == final and final.startswith(f'{FIRST} "stream this please"')
        task_id = events[0].task.id
        every = await hub.events_of(task_id)
        assert [f.id for f in every] == list(range(1, len(every) + 1))
        assert len(every) == len(events)
        tail = await hub.replay(task_id, 2)
        assert [f.id for f in tail] == [f.id for f in every[2:]]
        assert [f.data for f in tail] == [f.data for f in every[2:]]


async def test_a_conversation_keeps_its_context_across_turns_and_a_restart(
    agent: str, tmp_path: Path
) -> None:
    async with hosted(agent, tmp_path) as hub:
        port = hub.live.port
        first = await hub.send(user("My name is Ada."))
        assert text(first.status.message).startswith(FIRST)
        second = await hub.send(user("What is my name?", context_id=first.context_id))
        assert text(second.status.message).startswith(SECOND)
    async with hosted(agent, tmp_path, port=port) as hub:  # the same SQLite file
        third = await hub.send(user("And now?", context_id=first.context_id))
        assert third.context_id == first.context_id
        assert text(third.status.message).startswith(THIRD)
        other = await hub.send(user("A new conversation."))
        assert text(other.status.message).startswith(FIRST)


async def test_tool_calls_are_tool_parts(agent: str, tmp_path: Path) -> None:
    async with hosted(agent, tmp_path) as hub:
        events = await hub.stream(user('add {"a": 2, "b": 3}'))
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        assert "add → 5" in text(events[-1].status_update.status.message)
        shown = [
            d
            for e in events
            if e.WhichOneof("payload") == "status_update"
            for d in parts_data(e.status_update.status.message)
        ]
        assert [d["kind"] for d in shown] == ["tool_call", "tool_response"]
        call, answer = shown
        assert call["tool_id"] == "add" and call["params"] == {"a": 2, "b": 3}
        assert answer["tool_call_id"] == call["tool_call_id"]
        assert answer["result"]["status"] == "success"
        assert answer["result"]["data"] in (5, "5")
        # the next turn's history holds the first (its call and result included)
        later = await hub.send(user("thanks", context_id=events[0].task.context_id))
        assert text(later.status.message).startswith(SECOND)


async def test_approval_is_input_required_resumed_by_the_next_message(
    agent: str, tmp_path: Path
) -> None:
    async with hosted(agent, tmp_path) as hub:
        port = hub.live.port
        asked = await hub.send(user('delete_file {"path": "a.txt"}'))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        question = asked.status.message
        assert "delete_file(path='a.txt')" in text(question) and "yes or no" in text(question)
        [call] = parts_data(question)
        assert call["kind"] == "tool_call" and call["tool_id"] == "delete_file"
        again = await hub.send(user("hmm, what?", asked))
        assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    async with hosted(agent, tmp_path, port=port) as hub:  # resumed after a restart
        done = await hub.send(user("yes", asked))
        assert done.id == asked.id and done.status.state == TaskState.TASK_STATE_COMPLETED
        assert "delete_file → deleted a.txt" in text(done.status.message)
        # denied, through a tool_response part (what a WebSocket client sends)
        asked = await hub.send(user('delete_file {"path": "b.txt"}', context_id=asked.context_id))
        [call] = parts_data(asked.status.message)
        refusal = {"status": "error", "error_message": "not that one"}
        done = await hub.send(
            data_message(
                {"kind": "tool_response", "tool_call_id": call["tool_call_id"], "result": refusal},
                asked,
            )
        )
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert "not that one" in text(done.status.message)
        assert "deleted b.txt" not in text(done.status.message)


async def test_cancel_of_a_running_task(agent: str, tmp_path: Path) -> None:
    async with hosted(agent, tmp_path) as hub:
        task = await hub.send(user("stall"), immediately=True)
        await hub.wait_for_tool_call(task.id, "stall")
        canceled = await hub.client.cancel_task(CancelTaskRequest(id=task.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED


async def test_an_agent_that_raises_fails_the_task_with_the_reason(
    agent: str, tmp_path: Path
) -> None:
    async with hosted(agent, tmp_path) as hub:
        task = await hub.send(user("explode"))
        assert task.status.state == TaskState.TASK_STATE_FAILED
        assert "the explode tool blew up" in text(task.status.message)


@pytest.mark.parametrize(
    "agent", ["tests.frameworks.pyai_agents:local_agent", "tests.frameworks.oai_agents:local_agent"]
)
async def test_an_agent_with_its_own_model_keeps_it(agent: str, tmp_path: Path) -> None:
    async with hosted(agent, tmp_path) as hub:
        task = await hub.send(user("hello"))
        assert text(task.status.message).startswith("[local] turn 1")


async def test_the_history_comes_from_the_stored_conversation(agent: str, tmp_path: Path) -> None:
    registry = f"sqlite:///{tmp_path}/registry.db"
    async with hosted(agent, tmp_path, registry=registry) as hub:
        first = await hub.send(user("My name is Ada."))
        hosted_hub = hub.live.hub
        assert hosted_hub.registry is not None

        async def recorded() -> None:
            while True:
                found = await hosted_hub.registry.conversation_tail("agent", first.context_id, 10)
                if found is not None and len(found[1]) >= 2:
                    return
                await asyncio.sleep(0.05)

        await asyncio.wait_for(recorded(), 30)  # a hang guard, not a timing check
        # the task is gone from the task store (retention): the conversation store has the turn
        assert await hosted_hub.store.delete_task("agent", first.id)
        second = await hub.send(user("What is my name?", context_id=first.context_id))
        assert text(second.status.message).startswith(SECOND)
