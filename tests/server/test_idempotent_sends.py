"""Safe retries on every binding: an ``Idempotency-Key`` (or the ``messageId``) sent 50 times
at once runs the agent once, and reused for another message is refused.

One real server (HTTP and gRPC on loopback ports); each binding is driven as its clients
do: JSON-RPC 1.0, 1.1 (preview) and 0.3 and REST with httpx (header ``Idempotency-Key``),
gRPC with the official SDK's stub (metadata ``idempotency-key``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import GetTaskRequest, Message, Part, Role, SendMessageRequest
from google.rpc import error_details_pb2, status_pb2

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import Counted
from tests.support.hub import LiveServer

#: jsonrpc-1.1: the 1.0 method under ``A2A-Version: 1.1`` (the preview's own send path).
BINDINGS = ["jsonrpc-1.0", "jsonrpc-1.1", "jsonrpc-0.3", "rest", "grpc"]
REASON = "IDEMPOTENCY_KEY_REUSED"


@dataclass
class Refused:
    """How a binding refused a send: its code (JSON-RPC code, HTTP status or gRPC status
    name), the reason it gave, and its message."""

    code: int | str
    reason: str
    message: str


@dataclass
class Server:
    live: LiveServer
    http: httpx.AsyncClient
    stub: Any
    agent: Counted


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    agent = Counted(delay=0.2)
    config = Settings.from_flat(
        agents=[AgentSpec(id="counted", kind="python", executor="x:y")],
        store="memory://",
        grpc_port=0,
    )
    hub = Hub(config, store=MemoryStore(), executors={"counted": agent})
    async with LiveServer(hub) as live, httpx.AsyncClient(base_url=live.url, timeout=30) as http:
        assert hub.grpc is not None
        async with grpc.aio.insecure_channel(f"127.0.0.1:{hub.grpc.port}") as channel:
            yield Server(live, http, a2a_pb2_grpc.A2AServiceStub(channel), agent)


async def send(
    server: Server,
    binding: str,
    message_id: str,
    text: str,
    key: str | None = None,
    context_id: str | None = None,
) -> str | Refused:
    """Send one message on ``binding``: the id of the task answered, or the refusal."""
    headers = {} if key is None else {"Idempotency-Key": key}
    if binding == "grpc":
        message = Message(message_id=message_id, role=Role.ROLE_USER, parts=[Part(text=text)])
        if context_id is not None:
            message.context_id = context_id
        metadata = [] if key is None else [("idempotency-key", key)]
        try:
            sent = await server.stub.SendMessage(
                SendMessageRequest(tenant="counted", message=message), metadata=metadata
            )
        except grpc.aio.AioRpcError as exc:
            details = dict(exc.trailing_metadata() or ())["grpc-status-details-bin"]
            info = error_details_pb2.ErrorInfo()
            assert status_pb2.Status.FromString(details).details[0].Unpack(info)
            return Refused(exc.code().name, info.reason, exc.details() or "")
        return str(sent.task.id)
    if binding == "jsonrpc-0.3":
        message03: dict[str, Any] = {
            "kind": "message",
            "messageId": message_id,
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
        }
        if context_id is not None:
            message03["contextId"] = context_id
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {"message": message03},
        }
        r = await server.http.post("/a2a/counted", json=body, headers=headers)
        assert r.status_code == 200
        if "error" in r.json():
            error = r.json()["error"]
            reason = (error.get("data") or {}).get("reason", "")
            return Refused(error["code"], reason, error["message"])
        return str(r.json()["result"]["id"])
    message10: dict[str, Any] = {
        "messageId": message_id,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if context_id is not None:
        message10["contextId"] = context_id
    headers["A2A-Version"] = "1.1" if binding == "jsonrpc-1.1" else "1.0"
    if binding == "rest":
        r = await server.http.post(
            "/a2a/counted/message:send", json={"message": message10}, headers=headers
        )
        if r.status_code != 200:
            error = r.json()["error"]
            return Refused(r.status_code, error["details"][0]["reason"], error["message"])
        return str(r.json()["task"]["id"])
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message10}}
    r = await server.http.post("/a2a/counted", json=body, headers=headers)
    assert r.status_code == 200
    if "error" in r.json():
        error = r.json()["error"]
        return Refused(error["code"], error["data"][0]["reason"], error["message"])
    return str(r.json()["result"]["task"]["id"])


#: The refusal each binding answers for a key used for another message.
EXPECTED_CODE: dict[str, int | str] = {
    "jsonrpc-1.0": -32602,
    "jsonrpc-1.1": -32602,
    "jsonrpc-0.3": -32602,
    "rest": 422,
    "grpc": "INVALID_ARGUMENT",
}


async def history_of(server: Server, task_id: str) -> list[str]:
    """The texts of the stored task's history (read over gRPC: the same engine)."""
    task = await server.stub.GetTask(GetTaskRequest(tenant="counted", id=task_id))
    return [part.text for message in task.history for part in message.parts]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_message_id_sent_50_times_runs_once_and_reused_for_another_is_refused(
    server: Server, binding: str
) -> None:
    mid = str(uuid.uuid4())
    answers = await asyncio.gather(*(send(server, binding, mid, "hi") for _ in range(50)))
    assert server.agent.runs == 1
    assert len(set(answers)) == 1 and isinstance(answers[0], str)
    task_id = answers[0]
    # identical again, after the task finished: the same task
    assert await send(server, binding, mid, "hi") == task_id
    for other in (
        send(server, binding, mid, "something else"),
        send(server, binding, mid, "hi", context_id=str(uuid.uuid4())),
    ):
        refused = await other
        assert isinstance(refused, Refused), refused
        assert (refused.code, refused.reason) == (EXPECTED_CODE[binding], REASON)
        assert f"Message id {mid} was already used for another message" in refused.message
    assert server.agent.runs == 1
    assert await history_of(server, task_id) == ["hi"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_an_idempotency_key_sent_50_times_runs_once_and_reused_for_another_is_refused(
    server: Server, binding: str
) -> None:
    key, mid = str(uuid.uuid4()), str(uuid.uuid4())
    answers = await asyncio.gather(*(send(server, binding, mid, "hi", key) for _ in range(50)))
    assert server.agent.runs == 1
    assert len(set(answers)) == 1 and isinstance(answers[0], str)
    task_id = answers[0]
    assert await send(server, binding, mid, "hi", key) == task_id
    # the key is the claim key: another body, or the same body with another messageId, is
    # another message under a used key
    for other in (
        send(server, binding, mid, "something else", key),
        send(server, binding, str(uuid.uuid4()), "hi", key),
    ):
        refused = await other
        assert isinstance(refused, Refused), refused
        assert (refused.code, refused.reason) == (EXPECTED_CODE[binding], REASON)
        assert f"Idempotency-Key {key} was already used for another message" in refused.message
    assert server.agent.runs == 1
    assert await history_of(server, task_id) == ["hi"]
    # the same message id under another key is another send
    assert await send(server, binding, mid, "hi", str(uuid.uuid4())) != task_id
    assert server.agent.runs == 2


@pytest.mark.parametrize("binding", BINDINGS)
async def test_an_empty_or_too_long_idempotency_key_is_invalid_params(
    server: Server, binding: str
) -> None:
    for key in ("", "k" * 256):
        refused = await send(server, binding, str(uuid.uuid4()), "hi", key)
        assert isinstance(refused, Refused), refused
        assert refused.code == (400 if binding == "rest" else EXPECTED_CODE[binding])
        assert refused.reason in ("INVALID_PARAMS", "")  # 0.3: no reason in its data
        assert "Idempotency-Key" in refused.message
    assert server.agent.runs == 0
