"""The A2A 1.1 preview (``A2A-Version: 1.1``, dev-1.1 of a2aproject/A2A, PR #1810) on every
binding: ``generation`` on tasks and events, ``GetTask`` with ``currentGeneration`` as a long
poll, ``ifGenerationMatch`` on a send; and 1.0 answers without any of it.

The long-poll tests assert the order of events, not durations: the poll is started, seen
waiting (subscribed to the task's topic, not answered), the task is moved, and only then
does the poll answer, with the new generation; the poll's own timeout is set far beyond
the test's bound, so an answer can only come from the task moving on.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.server.grpc._generated import a2a_pb2 as pb
from a2a_hub.server.grpc._generated import a2a_pb2_grpc
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import PizzaExecutor, SlowExecutor
from tests.support.hub import LiveServer

V11 = {"A2A-Version": "1.1"}
V10 = {"A2A-Version": "1.0"}


def generation_hub(**settings: Any) -> Hub:
    """pizza (asks, then completes: generations 1-3, then 4-7) and slow, with gRPC."""
    executors = {"pizza": PizzaExecutor(), "slow": SlowExecutor()}
    specs = [AgentSpec(id=name, kind="python", executor="x:y") for name in executors]
    settings.setdefault("grpc_port", 0)
    settings.setdefault("long_poll_timeout", 120.0)
    settings.setdefault("trusted_hosts", ["hub.test", "127.0.0.1", "localhost"])
    config = Settings.from_flat(agents=specs, store="memory://", **settings)
    return Hub(config, store=MemoryStore(), executors=executors)


@pytest.fixture
async def live() -> AsyncIterator[LiveServer]:
    async with LiveServer(generation_hub()) as server:
        yield server


@pytest.fixture
async def client(live: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=live.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hub.test") as c:
        yield c


@pytest.fixture
async def stub(live: LiveServer) -> AsyncIterator[Any]:
    assert live.hub.grpc is not None
    async with grpc.aio.insecure_channel(f"127.0.0.1:{live.hub.grpc.port}") as channel:
        yield a2a_pb2_grpc.A2AServiceStub(channel)


def message(text: str, task_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": []}
    msg["parts"].append({"text": text})
    if task_id is not None:
        msg["taskId"] = task_id
    return msg


async def rpc(
    client: httpx.AsyncClient, method: str, params: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    r = await client.post("/a2a/pizza", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


async def asking(client: httpx.AsyncClient) -> dict[str, Any]:
    """A pizza task waiting for input: created (1), working (2), input-required (3)."""
    out = await rpc(client, "SendMessage", {"message": message("pizza")}, V11)
    task: dict[str, Any] = out["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task


def sse_results(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def keys(value: Any) -> set[str]:
    """Every key of every object inside ``value``."""
    if isinstance(value, dict):
        return set(value).union(*(keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys(v) for v in value))
    return set()


async def armed(hub: Hub, task_id: str, polls: int = 1) -> None:
    """Return once ``polls`` long polls (subscriptions of the task's topic) wait on
    ``task_id``: each turn of the event loop lets them on."""
    topics = hub.agent("pizza").engine.pubsub.topics
    async with asyncio.timeout(10):
        for _ in itertools.count():
            if len(topics.get(task_id, ())) >= polls:
                return
            await asyncio.sleep(0)


# --- generation on tasks and events ------------------------------------------------------


async def test_generation_starts_at_1_and_grows_by_one_per_event_on_every_binding(
    client: httpx.AsyncClient, stub: Any
) -> None:
    task = await asking(client)
    assert task["generation"] == 3
    got = await rpc(client, "GetTask", {"id": task["id"]}, V11)
    assert got["result"]["generation"] == 3
    rest = await client.get(f"/a2a/pizza/tasks/{task['id']}", headers=V11)
    assert rest.json()["generation"] == 3
    grpc_task = await stub.GetTask(
        pb.GetTaskRequest(tenant="pizza", id=task["id"]), metadata=[("a2a-version", "1.1")]
    )
    assert grpc_task.generation == 3


async def test_the_stream_of_a_turn_carries_the_generation_of_each_event(
    client: httpx.AsyncClient, stub: Any
) -> None:
    task = await asking(client)
    params = {"message": message("margherita", task["id"])}
    r = await client.post(
        "/a2a/pizza",
        json={"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": params},
        headers=V11,
    )
    results = [frame["result"] for frame in sse_results(r.text)]
    # the snapshot with the client's message (4), working (5), the artifact (6), completed (7)
    assert [next(iter(res.values()))["generation"] for res in results] == [4, 5, 6, 7]
    assert [next(iter(res)) for res in results] == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    # the same generations on REST's SSE and on gRPC, replayed from the start
    r = await client.get(
        f"/a2a/pizza/tasks/{task['id']}:subscribe", headers={**V11, "Last-Event-ID": "3"}
    )
    assert [next(iter(e.values()))["generation"] for e in sse_results(r.text)] == [5, 6, 7]
    seen = []
    async for event in stub.SubscribeToTask(
        pb.SubscribeToTaskRequest(tenant="pizza", id=task["id"]),
        metadata=[("a2a-version", "1.1"), ("last-event-id", "0")],
    ):
        which = event.WhichOneof("payload")
        seen.append((which, getattr(event, which).generation))
    assert seen == [
        ("task", 1),
        ("status_update", 2),
        ("status_update", 3),
        ("status_update", 5),
        ("artifact_update", 6),
        ("status_update", 7),
    ]


async def test_a_1_0_client_sees_no_generation(client: httpx.AsyncClient, stub: Any) -> None:
    for headers in (V10, {}):
        out = await rpc(client, "SendMessage", {"message": message("pizza")}, headers)
        task = out["result"]["task"]
        assert "generation" not in keys(out)
        got = await rpc(client, "GetTask", {"id": task["id"], "currentGeneration": 99}, headers)
        assert "generation" not in keys(got)  # and no long poll: answered at once
        rest = await client.get(f"/a2a/pizza/tasks/{task['id']}", headers=headers)
        assert "generation" not in keys(rest.json())
        # ifGenerationMatch is not a 1.0 field: ignored, the message continues the task
        params = {
            "message": message("funghi", task["id"]),
            "configuration": {"ifGenerationMatch": 1},
        }
        r = await client.post(
            "/a2a/pizza",
            json={"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": params},
            headers=headers,
        )
        frames = sse_results(r.text)
        assert frames[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert "generation" not in keys(frames)
    grpc_task = await stub.GetTask(
        pb.GetTaskRequest(tenant="pizza", id=task["id"]), metadata=[("a2a-version", "1.0")]
    )
    assert grpc_task.generation == 0  # proto3: not on the wire


async def test_version_1_1_is_listed_and_other_1_x_stay_1_0(client: httpx.AsyncClient) -> None:
    version = (await client.get("/version")).json()
    assert version["a2aVersions"][:2] == ["1.1", "1.0"]
    out = await rpc(client, "SendMessage", {"message": message("pizza")}, {"A2A-Version": "1.2"})
    assert "generation" not in keys(out)


# --- GetTask long poll -----------------------------------------------------------------


async def test_long_poll_answers_once_the_task_moves_past_the_generation(
    live: LiveServer, client: httpx.AsyncClient
) -> None:
    task = await asking(client)
    poll = asyncio.ensure_future(
        rpc(client, "GetTask", {"id": task["id"], "currentGeneration": 3}, V11)
    )
    await armed(live.hub, task["id"])
    assert not poll.done()
    moved = await rpc(client, "SendMessage", {"message": message("funghi", task["id"])}, V11)
    assert moved["result"]["task"]["generation"] == 7
    async with asyncio.timeout(30):  # far below the poll's own timeout (120 s)
        answer = (await poll)["result"]
    assert answer["generation"] > 3
    assert answer["id"] == task["id"]


async def test_long_poll_on_rest_and_grpc_wake_on_the_move(
    live: LiveServer, client: httpx.AsyncClient, stub: Any
) -> None:
    task = await asking(client)
    rest = asyncio.ensure_future(
        client.get(f"/a2a/pizza/tasks/{task['id']}?currentGeneration=3", headers=V11)
    )
    over_grpc = asyncio.ensure_future(
        stub.GetTask(
            pb.GetTaskRequest(tenant="pizza", id=task["id"], current_generation=3),
            metadata=[("a2a-version", "1.1")],
        )
    )
    await armed(live.hub, task["id"], polls=2)
    assert not rest.done() and not over_grpc.done()
    await rpc(client, "SendMessage", {"message": message("funghi", task["id"])}, V11)
    async with asyncio.timeout(30):
        assert (await rest).json()["generation"] > 3
        assert (await over_grpc).generation > 3


async def test_long_poll_answers_at_once_when_the_task_is_already_past(
    client: httpx.AsyncClient,
) -> None:
    task = await asking(client)
    async with asyncio.timeout(30):  # the poll's own timeout is 120 s
        got = await rpc(client, "GetTask", {"id": task["id"], "currentGeneration": 2}, V11)
    assert got["result"]["generation"] == 3
    # a terminal task never moves again: answered at once too
    await rpc(client, "SendMessage", {"message": message("funghi", task["id"])}, V11)
    async with asyncio.timeout(30):
        done = await rpc(client, "GetTask", {"id": task["id"], "currentGeneration": 7}, V11)
    assert done["result"]["generation"] == 7
    assert done["result"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_long_poll_answers_the_task_as_it_is_at_its_timeout() -> None:
    async with LiveServer(generation_hub(long_poll_timeout=0.2)) as live:
        transport = httpx.ASGITransport(app=live.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hub.test") as client:
            task = await asking(client)
            got = await rpc(client, "GetTask", {"id": task["id"], "currentGeneration": 3}, V11)
            assert got["result"]["generation"] == 3
            assert got["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            assert live.hub.agent("pizza").engine.pubsub.topics == {}  # the wait left nothing


async def test_long_poll_checks_its_input(client: httpx.AsyncClient) -> None:
    task = await asking(client)
    bad = await rpc(client, "GetTask", {"id": task["id"], "currentGeneration": -1}, V11)
    assert bad["error"]["code"] == -32602
    unknown = await rpc(client, "GetTask", {"id": "nope", "currentGeneration": 1}, V11)
    assert unknown["error"]["code"] == -32001
    r = await client.get(f"/a2a/pizza/tasks/{task['id']}?currentGeneration=x", headers=V11)
    assert r.status_code == 400


# --- ifGenerationMatch -----------------------------------------------------------------


def _send_body(task_id: str, match: int) -> dict[str, Any]:
    return {"message": message("funghi", task_id), "configuration": {"ifGenerationMatch": match}}


async def test_if_generation_match_mismatch_is_refused_on_json_rpc(
    client: httpx.AsyncClient,
) -> None:
    task = await asking(client)
    for method in ("SendMessage", "SendStreamingMessage"):
        out = await rpc(client, method, _send_body(task["id"], 2), V11)
        error = out["error"]
        assert error["code"] == -32010
        assert "expected 2" in error["message"] and "is 3" in error["message"]
        info = error["data"][0]
        assert info["reason"] == "TASK_GENERATION_MISMATCH"
        assert info["metadata"] == {
            "taskId": task["id"],
            "expectedGeneration": "2",
            "currentGeneration": "3",
        }
    # nothing ran, nothing changed: the task still waits at generation 3
    got = await rpc(client, "GetTask", {"id": task["id"]}, V11)
    assert got["result"]["generation"] == 3
    assert got["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    # the right generation goes through
    ok = await rpc(client, "SendMessage", _send_body(task["id"], 3), V11)
    assert ok["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_if_generation_match_mismatch_is_refused_on_rest(client: httpx.AsyncClient) -> None:
    task = await asking(client)
    for path in ("message:send", "message:stream"):
        r = await client.post(f"/a2a/pizza/{path}", json=_send_body(task["id"], 4), headers=V11)
        assert r.status_code == 409, r.text
        error = r.json()["error"]
        assert error["status"] == "ABORTED" and error["code"] == 409
        assert error["details"][0]["reason"] == "TASK_GENERATION_MISMATCH"
        assert error["details"][0]["metadata"]["currentGeneration"] == "3"
    r = await client.post("/a2a/pizza/message:send", json=_send_body(task["id"], 3), headers=V11)
    assert r.status_code == 200
    assert r.json()["task"]["generation"] == 7


async def test_if_generation_match_mismatch_is_refused_on_grpc(
    client: httpx.AsyncClient, stub: Any
) -> None:
    task = await asking(client)

    def request(match: int) -> Any:
        msg = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER, task_id=task["id"])
        msg.parts.add().text = "funghi"
        return pb.SendMessageRequest(
            tenant="pizza",
            message=msg,
            configuration=pb.SendMessageConfiguration(if_generation_match=match),
        )

    v11 = [("a2a-version", "1.1")]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(request(9), metadata=v11)
    assert caught.value.code() is grpc.StatusCode.ABORTED
    status = status_pb2.Status.FromString(
        dict(caught.value.trailing_metadata())["grpc-status-details-bin"]
    )
    info = error_details_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    assert info.reason == "TASK_GENERATION_MISMATCH"
    assert dict(info.metadata)["expectedGeneration"] == "9"
    with pytest.raises(grpc.aio.AioRpcError) as streamed:
        async for _ in stub.SendStreamingMessage(request(9), metadata=v11):
            pass
    assert streamed.value.code() is grpc.StatusCode.ABORTED
    # 1.0 ignores the field: the message continues the task (and no generation comes back)
    done = await stub.SendMessage(request(9), metadata=[("a2a-version", "1.0")])
    assert done.task.status.state == pb.TASK_STATE_COMPLETED
    assert done.task.generation == 0


async def test_if_generation_match_is_ignored_for_a_new_task(client: httpx.AsyncClient) -> None:
    params = {"message": message("pizza"), "configuration": {"ifGenerationMatch": 42}}
    out = await rpc(client, "SendMessage", params, V11)
    assert out["result"]["task"]["generation"] == 3


async def test_a_repeat_of_a_sent_message_is_not_refused_by_its_old_generation(
    client: httpx.AsyncClient,
) -> None:
    task = await asking(client)
    body = _send_body(task["id"], 3)
    first = await rpc(client, "SendMessage", body, V11)
    again = await rpc(client, "SendMessage", body, V11)  # a retry: generation is 7 now
    assert first["result"]["task"]["generation"] == 7
    assert again["result"]["task"]["generation"] == 7
