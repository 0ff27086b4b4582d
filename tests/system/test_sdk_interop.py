"""The official a2a-sdk client against a real uvicorn server of ours.

Three transports: A2A 1.0 JSON-RPC, 1.0 HTTP+JSON (REST), and the SDK's 0.3
JSON-RPC compat transport (chosen from our card's 0.3 interface).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_message_text, new_text_message
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

from tests.support.hub import LiveServer

TRANSPORTS = ["jsonrpc-1.0", "rest-1.0", "jsonrpc-0.3"]


def user(text: str, task_id: str | None = None, context_id: str | None = None) -> Any:
    return new_text_message(text, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)


async def make_client(
    http: httpx.AsyncClient, base: str, transport: str, *, streaming: bool = False
) -> Any:
    card = await A2ACardResolver(http, base).get_agent_card()
    if transport == "jsonrpc-0.3":
        narrowed = AgentCard()
        narrowed.CopyFrom(card)
        keep = [i for i in card.supported_interfaces if i.protocol_version.startswith("0.3")]
        assert keep, "the card must offer a 0.3 interface"
        del narrowed.supported_interfaces[:]
        narrowed.supported_interfaces.extend(keep)
        card = narrowed
    binding = "HTTP+JSON" if transport.startswith("rest") else "JSONRPC"
    config = ClientConfig(
        httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding]
    )
    client = ClientFactory(config).create(card)
    if transport == "jsonrpc-0.3":
        assert type(client._transport).__name__ == "CompatJsonRpcTransport"
    return client


@pytest.fixture(params=TRANSPORTS)
async def sdk(
    request: pytest.FixtureRequest, live: LiveServer
) -> AsyncIterator[tuple[str, Any, Any]]:
    async with httpx.AsyncClient(timeout=30) as http:
        clients = {
            name: await make_client(http, f"{live.url}/a2a/{name}", request.param)
            for name in ("echo", "pizza", "slow", "chatty")
        }
        for name in ("echo", "chatty"):
            clients[f"{name}-stream"] = await make_client(
                http, f"{live.url}/a2a/{name}", request.param, streaming=True
            )
        yield request.param, clients, live


async def one(stream: Any) -> Any:
    events = [e async for e in stream]
    assert len(events) == 1
    return events[0]


async def test_send_and_get(sdk: tuple[str, Any, Any]) -> None:
    _, clients, _ = sdk
    ev = await one(clients["echo"].send_message(SendMessageRequest(message=user("hello"))))
    assert ev.WhichOneof("payload") == "task"
    task = ev.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(task.artifacts[0]) == "echo: hello"
    got = await clients["echo"].get_task(GetTaskRequest(id=task.id, history_length=10))
    assert got.id == task.id and got.status.state == TaskState.TASK_STATE_COMPLETED
    assert len(got.history) == 1
    with pytest.raises(TaskNotFoundError):
        await clients["echo"].get_task(GetTaskRequest(id="no-such-task"))


async def test_list(sdk: tuple[str, Any, Any]) -> None:
    transport, clients, _ = sdk
    ev = await one(clients["echo"].send_message(SendMessageRequest(message=user("listed"))))
    if transport == "jsonrpc-0.3":
        pytest.skip("A2A 0.3 has no tasks/list method; the SDK's 0.3 transport refuses it")
    page = await clients["echo"].list_tasks(
        ListTasksRequest(context_id=ev.task.context_id, page_size=10)
    )
    assert [t.id for t in page.tasks] == [ev.task.id] and page.total_size == 1


async def test_cancel(sdk: tuple[str, Any, Any]) -> None:
    _, clients, _ = sdk
    config = SendMessageConfiguration(return_immediately=True)
    ev = await one(
        clients["slow"].send_message(SendMessageRequest(message=user("work"), configuration=config))
    )
    assert ev.task.status.state == TaskState.TASK_STATE_SUBMITTED
    canceled = await clients["slow"].cancel_task(CancelTaskRequest(id=ev.task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    with pytest.raises(TaskNotCancelableError):
        await clients["slow"].cancel_task(CancelTaskRequest(id=ev.task.id))


async def test_two_turn_input_required(sdk: tuple[str, Any, Any]) -> None:
    _, clients, _ = sdk
    pizza = clients["pizza"]
    first = (await one(pizza.send_message(SendMessageRequest(message=user("I want pizza"))))).task
    assert first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert get_message_text(first.status.message) == "What kind of pizza?"
    second = (
        await one(
            pizza.send_message(
                SendMessageRequest(
                    message=user("pineapple", task_id=first.id, context_id=first.context_id)
                )
            )
        )
    ).task
    assert second.id == first.id
    assert second.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(second.artifacts[0]) == "order: pineapple"
    assert [get_message_text(m) for m in second.history][:3] == [
        "I want pizza",
        "What kind of pizza?",
        "pineapple",
    ]


async def test_client_pointed_at_the_root_url(live: LiveServer) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        client = await make_client(http, live.url, "jsonrpc-1.0")
        ev = await one(client.send_message(SendMessageRequest(message=user("root"))))
        assert get_artifact_text(ev.task.artifacts[0]) == "echo: root"


async def test_streaming_send(sdk: tuple[str, Any, Any]) -> None:
    _, clients, _ = sdk
    events = [
        e async for e in clients["echo-stream"].send_message(SendMessageRequest(message=user("s")))
    ]
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds == ["task", "status_update", "artifact_update", "status_update"]
    assert get_artifact_text(events[2].artifact_update.artifact) == "echo: s"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def test_resubscribe_to_a_running_task(sdk: tuple[str, Any, Any]) -> None:
    _, clients, _ = sdk
    chatty = clients["chatty-stream"]
    config = SendMessageConfiguration(return_immediately=True)
    first = [
        e
        async for e in clients["chatty"].send_message(
            SendMessageRequest(message=user("go"), configuration=config)
        )
    ]
    task_id = first[0].task.id
    events = [e async for e in chatty.subscribe(SubscribeToTaskRequest(id=task_id))]
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    chunks = [
        get_artifact_text(e.artifact_update.artifact)
        for e in events[1:]
        if e.WhichOneof("payload") == "artifact_update"
    ]
    assert chunks and chunks[-1] == "000019.."
