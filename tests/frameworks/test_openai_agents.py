"""A OpenAI Agents SDK ``Agent`` hosted unchanged (issue 24): through real HTTP with the official
a2a-sdk client, on a hub over SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
from a2a.helpers import get_artifact_text
from a2a.types.a2a_pb2 import CancelTaskRequest, TaskState

from tests.frameworks._hosted import (
    data_message,
    hosted,
    parts_data,
    text,
    user,
)

pytest.importorskip("agents")

AGENT = "tests.frameworks.oai_agents:local_agent"


async def test_blocking_send_and_the_card(tmp_path: Path) -> None:
    async with hosted(AGENT, tmp_path) as hub:
        card = (await hub.http.get(f"{hub.url}/.well-known/agent-card.json")).json()
        assert card["name"] == "oai-local"
        assert {"add", "delete_file"} <= {s["id"] for s in card["skills"]}
        task = await hub.send(user("hello there"))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        reply = text(task.status.message)
        assert "turn 1" in reply and "hello there" in reply
        assert get_artifact_text(task.artifacts[0]) == reply


async def test_streamed_send_in_chunks_replayable(tmp_path: Path) -> None:
    async with hosted(AGENT, tmp_path) as hub:
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
        assert streamed.strip() == final.strip() and "stream this please" in final
        task_id = events[0].task.id
        every = await hub.events_of(task_id)
        assert [f.id for f in every] == list(range(1, len(every) + 1))
        tail = await hub.replay(task_id, 2)
        assert [f.id for f in tail] == [f.id for f in every[2:]]
        assert [f.data for f in tail] == [f.data for f in every[2:]]


async def test_a_conversation_keeps_its_context_across_turns_and_a_restart(
    tmp_path: Path,
) -> None:
    async with hosted(AGENT, tmp_path) as hub:
        port = hub.live.port
        first = await hub.send(user("My name is Ada."))
        second = await hub.send(user("What is my name?", context_id=first.context_id))
        assert "turn 2" in text(second.status.message)
    async with hosted(AGENT, tmp_path, port=port) as hub:  # the same SQLite file
        third = await hub.send(user("And now?", context_id=first.context_id))
        assert third.context_id == first.context_id
        assert "turn 3" in text(third.status.message)
        other = await hub.send(user("A new conversation."))
        assert "turn 1" in text(other.status.message)


async def test_tool_calls_are_tool_parts(tmp_path: Path) -> None:
    async with hosted(AGENT, tmp_path) as hub:
        events = await hub.stream(user('add {"a": 2, "b": 3}'))
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        assert "add → 5" in text(events[-1].status_update.status.message)
        shown = [
            d
            for e in events
            if e.WhichOneof("payload") == "status_update"
            for d in parts_data(e.status_update.status.message)
        ]
        call = next(d for d in shown if d["kind"] == "tool_call")
        assert call["tool_id"] == "add" and call["params"] == {"a": 2, "b": 3}
        answer = next(d for d in shown if d["kind"] == "tool_response")
        assert answer["tool_call_id"] == call["tool_call_id"]
        assert answer["result"] == {"status": "success", "data": 5}
        # the next turn's history holds the call and its result (the model is sent them)
        later = await hub.send(user("thanks", context_id=events[0].task.context_id))
        assert "turn 2" in text(later.status.message)


async def test_approval_is_input_required_resumed_by_the_next_message(tmp_path: Path) -> None:
    async with hosted(AGENT, tmp_path) as hub:
        asked = await hub.send(user('delete_file {"path": "a.txt"}'))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        question = asked.status.message
        assert "delete_file(path='a.txt')" in text(question) and "yes or no" in text(question)
        [call] = parts_data(question)
        assert call["kind"] == "tool_call" and call["tool_id"] == "delete_file"
        again = await hub.send(user("hmm, what?", asked))
        assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
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


async def test_cancel_of_a_running_task(tmp_path: Path) -> None:
    async with hosted(AGENT, tmp_path) as hub:
        task = await hub.send(user("stall"), immediately=True)

        await hub.wait_for_tool_call(task.id, "stall")
        canceled = await hub.client.cancel_task(CancelTaskRequest(id=task.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED


async def test_an_agent_that_raises_fails_the_task_with_the_reason(tmp_path: Path) -> None:
    async with hosted(AGENT, tmp_path) as hub:
        task = await hub.send(user("explode"))
        assert task.status.state == TaskState.TASK_STATE_FAILED
        assert "the explode tool blew up" in text(task.status.message)
