"""An official a2a-sdk ``AgentExecutor`` hosted unchanged (examples/a2a_sdk_pizza.py, founding
note 002's pizza order), driven over real HTTP by the official a2a-sdk client."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers import get_artifact_text, get_message_text, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor as SdkAgentExecutor
from a2a.server.agent_execution import RequestContext as SdkRequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater as SdkTaskUpdater
from a2a.types.a2a_pb2 import CancelTaskRequest, TaskState

from a2a_hub.agents.loader import build_executor
from a2a_hub.settings import AgentSpec, SettingsError
from tests.support.frameworks import (
    data_parts,
    kinds,
    replay,
    sdk_client,
    send,
    stream,
    wait_state,
)
from tests.support.hub import LiveServer, make_hub
from tests.support.processes import hub_process

PIZZA = "examples.a2a_sdk_pizza:PizzaExecutor"
COMPLETED, INPUT_REQUIRED = TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_INPUT_REQUIRED


class ToolUser(SdkAgentExecutor):
    """Shows a tool call and its result as data parts, then answers."""

    async def execute(self, context: SdkRequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        updater = SdkTaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.submit()
        call = {"kind": "tool_call", "tool_call_id": "c1", "tool_id": "oven", "params": {"t": 220}}
        await updater.start_work(updater.new_agent_message([new_data_part(call)]))
        result = {"kind": "tool_response", "tool_call_id": "c1", "tool_id": "oven",
                  "result": {"status": "success", "data": "hot"}}  # fmt: skip
        await updater.start_work(updater.new_agent_message([new_data_part(result)]))
        who = context.call_context.user.user_name or "anonymous"
        await updater.complete(updater.new_agent_message([new_text_part(f"done for {who}")]))

    async def cancel(self, context: SdkRequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


class StateSetter(SdkAgentExecutor):
    """Ends its turn in the state the message names, through the SDK's TaskUpdater."""

    async def execute(self, context: SdkRequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        updater = SdkTaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.submit()
        said = context.get_user_input()
        end = {"auth": updater.requires_auth, "fail": updater.failed,
               "reject": updater.reject, "cancel": updater.cancel}[said]  # fmt: skip
        await end(updater.new_agent_message([new_text_part(f"state: {said}")]))

    async def cancel(self, context: SdkRequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def hosted(agent_id: str, executor: str, **options: Any) -> Any:
    spec = AgentSpec(id=agent_id, kind="python", executor=executor, options=options)
    return build_executor(spec)


@pytest.fixture
async def live() -> AsyncIterator[LiveServer]:
    hub = make_hub(
        {
            "pizza": hosted("pizza", PIZZA),
            "slow": hosted("slow", PIZZA, bake_seconds=60),
            "tools": hosted("tools", f"{__name__}:ToolUser"),
            "states": hosted("states", f"{__name__}:StateSetter"),
        }
    )
    async with LiveServer(hub) as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


async def test_blocking_send(live: LiveServer, http: httpx.AsyncClient) -> None:
    pizza = await sdk_client(http, f"{live.url}/a2a/pizza")
    task = (await send(pizza, "a large pepperoni please")).task
    assert task.status.state == COMPLETED
    assert get_message_text(task.status.message) == "Your large pepperoni is on its way."
    [order] = task.artifacts
    assert order.name == "order"
    assert get_artifact_text(order, "") == "1 x large pepperoni\nbaked: yes\ndelivery: 30 minutes"


async def test_a_direct_message_reply(live: LiveServer, http: httpx.AsyncClient) -> None:
    pizza = await sdk_client(http, f"{live.url}/a2a/pizza")
    answer = await send(pizza, "menu")
    assert answer.WhichOneof("payload") == "message"
    assert get_message_text(answer.message).startswith("Today: margherita")


async def test_streamed_send_in_order_and_replayed(
    live: LiveServer, http: httpx.AsyncClient
) -> None:
    pizza = await sdk_client(http, f"{live.url}/a2a/pizza", streaming=True)
    events = await stream(pizza, "one small funghi")
    assert kinds(events) == ["task", "status_update", *["artifact_update"] * 3, "status_update"]
    assert events[0].task.status.state == TaskState.TASK_STATE_SUBMITTED
    assert events[1].status_update.status.state == TaskState.TASK_STATE_WORKING
    chunks = [e.artifact_update for e in events[2:5]]
    assert [get_artifact_text(c.artifact) for c in chunks] == [
        "1 x small funghi\n", "baked: yes\n", "delivery: 30 minutes"
    ]  # fmt: skip
    assert [(c.append, c.last_chunk) for c in chunks] == [(False, False), (True, False),
                                                          (True, True)]  # fmt: skip
    assert events[-1].status_update.status.state == COMPLETED
    # the same events, read again after the first one (the task) with Last-Event-ID
    again = await replay(live.url, "pizza", events[0].task.id, after=1)
    assert [seq for seq, _ in again] == list(range(2, 2 + len(again)))
    shown = [next(iter(data)) for _, data in again]
    assert shown == ["statusUpdate", "artifactUpdate", "artifactUpdate", "artifactUpdate",
                     "statusUpdate"]  # fmt: skip
    assert again[2][1]["artifactUpdate"]["artifact"]["parts"][0]["text"] == "baked: yes\n"


async def test_multi_turn_input_required_and_resumed(
    live: LiveServer, http: httpx.AsyncClient
) -> None:
    pizza = await sdk_client(http, f"{live.url}/a2a/pizza")
    first = (await send(pizza, "I want pizza")).task
    assert first.status.state == INPUT_REQUIRED
    assert get_message_text(first.status.message).startswith("What kind of pizza?")
    second = (await send(pizza, "hawaiian", first)).task
    assert (second.id, second.status.state) == (first.id, INPUT_REQUIRED)
    assert get_message_text(second.status.message) == "What size: small, medium or large?"
    third = (await send(pizza, "medium", first)).task
    assert third.status.state == COMPLETED
    assert get_message_text(third.status.message) == "Your medium hawaiian is on its way."
    said = [get_message_text(m) for m in third.history]
    assert said[:5] == ["I want pizza", said[1], "hawaiian", said[3], "medium"]


async def test_cancel_of_a_running_task_calls_the_executors_cancel(
    live: LiveServer, http: httpx.AsyncClient
) -> None:
    slow = await sdk_client(http, f"{live.url}/a2a/slow")
    task = (await send(slow, "a large margherita", return_immediately=True)).task
    await wait_state(slow, task.id, TaskState.TASK_STATE_WORKING)  # baking
    canceled = await slow.cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    # the message the SDK executor's cancel() put on its canceled status
    assert get_message_text(canceled.status.message) == "Order canceled."


@pytest.mark.parametrize(
    ("said", "state"),
    [
        ("auth", TaskState.TASK_STATE_AUTH_REQUIRED),
        ("fail", TaskState.TASK_STATE_FAILED),
        ("reject", TaskState.TASK_STATE_REJECTED),
        ("cancel", TaskState.TASK_STATE_CANCELED),
    ],
)
async def test_every_end_of_a_turn_of_the_sdks_task_updater(
    live: LiveServer, http: httpx.AsyncClient, said: str, state: int
) -> None:
    states = await sdk_client(http, f"{live.url}/a2a/states")
    task = (await send(states, said)).task
    assert task.status.state == state
    assert get_message_text(task.status.message) == f"state: {said}"


async def test_tool_calls_shown_as_tool_parts_and_the_caller(
    live: LiveServer, http: httpx.AsyncClient
) -> None:
    tools = await sdk_client(http, f"{live.url}/a2a/tools")
    task = (await send(tools, "heat it")).task
    assert task.status.state == COMPLETED
    assert get_message_text(task.status.message) == "done for anonymous"
    parts = data_parts(task)
    assert [p["kind"] for p in parts] == ["tool_call", "tool_response"]
    assert parts[0]["tool_id"] == "oven" and parts[1]["result"]["data"] == "hot"


@pytest.mark.timeout(600)  # two hub processes that import the framework, on a loaded machine
def test_conversation_survives_a_restart_of_the_hub_on_sqlite(tmp_path: Path) -> None:
    import asyncio

    store = f"sqlite:///{tmp_path / 'hub.db'}"

    async def turn(url: str, text: str, task: Any = None) -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            return (await send(await sdk_client(http, f"{url}/a2a/pizza"), text, task)).task

    with hub_process(f"pizza={PIZZA}", cwd=tmp_path, store=store, start_timeout=180) as url:
        first = asyncio.run(turn(url, "I want a pepperoni"))
    assert first.status.state == INPUT_REQUIRED
    with hub_process(f"pizza={PIZZA}", cwd=tmp_path, store=store, start_timeout=180) as url:
        done = asyncio.run(turn(url, "small", first))
    assert done.status.state == COMPLETED
    assert get_message_text(done.status.message) == "Your small pepperoni is on its way."


# --- bad input ------------------------------------------------------------------------


def test_an_object_of_unknown_type_is_refused_in_one_line() -> None:
    with pytest.raises(SettingsError) as info:
        hosted("x", "json:dumps")
    text = str(info.value)
    assert "\n" not in text
    assert "cannot host" in text and "an a2a-sdk AgentExecutor" in text
    assert "a compiled LangGraph graph" in text


def test_an_sdk_instance_with_options_and_bad_options_are_refused() -> None:
    with pytest.raises(SettingsError, match="bake_time"):
        hosted("x", PIZZA, bake_time=3)


def test_a_missing_extra_names_the_pip_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_sdk_agent.py").write_text("from a2a.server.agent_execution import X\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "a2a.server.agent_execution", None)
    with pytest.raises(SettingsError) as info:
        hosted("x", "my_sdk_agent:X")
    assert "pip install 'a2a-hub[a2a-sdk]'" in str(info.value)
