"""Idempotent sends across real ``a2a-hub serve`` processes sharing Redis or PostgreSQL.

One messageId sent 50 times at once, split over two instances and over every kind of
send (JSON-RPC 1.0 blocking and non-blocking, REST, 0.3 ``message/send``, SSE, gRPC),
runs the agent once; every answer names the task of that one run; the same id (or an
``Idempotency-Key``) with another message is refused on the other instance.  A Redis or
PostgreSQL server of the test's own stopped and started again during sends: a request
answered with an error is either absent or the one its retry (same messageId) finds; no
message runs twice, no task stays submitted, every blocking or streamed answer is in
the store.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import PostgresServer, RedisServer, StoreServer
from tests.system.test_multiprocess import (
    V10,
    Instance,
    free_port,
    shared_store,
)

pytestmark = pytest.mark.timeout(180)


def runs(folder: Path) -> dict[str, int]:
    """Message id -> how many times the agent ran it (one file per execution)."""
    counted: dict[str, int] = {}
    for path in folder.iterdir():
        mid = path.read_text()
        counted[mid] = counted.get(mid, 0) + 1
    return counted


def body(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def msg(mid: str, text: str = "go") -> dict[str, Any]:
    return {"messageId": mid, "role": "ROLE_USER", "parts": [{"text": text}]}


async def send(client: httpx.AsyncClient, base: str, agent: str, kind: str, mid: str) -> str:
    """One send of ``kind``; the id of the task it answers with."""
    url = f"{base}/a2a/{agent}"
    if kind == "rest":
        r = await client.post(f"{url}/message:send", json={"message": msg(mid)}, headers=V10)
        assert r.status_code == 200, r.text
        return str(r.json()["task"]["id"])
    if kind == "v03":
        params = {
            "message": {
                "kind": "message",
                "messageId": mid,
                "role": "user",
                "parts": [{"kind": "text", "text": "go"}],
            },
            "configuration": {"blocking": True},
        }
        r = await client.post(
            url, json=body("message/send", params), headers={"A2A-Version": "0.3"}
        )
        result = r.json()["result"]
        assert result["status"]["state"] == "completed", result
        return str(result["id"])
    if kind == "sse":
        last: dict[str, Any] = {}
        # keep-alive comments defeat the read timeout: bound the whole stream (a hang guard)
        async with (
            asyncio.timeout(60),
            client.stream(
                "POST", url, json=body("SendStreamingMessage", {"message": msg(mid)}), headers=V10
            ) as r,
        ):
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    last = json.loads(line[5:])["result"]
        update = last["statusUpdate"]
        assert update["status"]["state"] == "TASK_STATE_COMPLETED", last
        return str(update["taskId"])
    params: dict[str, Any] = {"message": msg(mid)}
    if kind == "later":
        params["configuration"] = {"returnImmediately": True}
    r = await client.post(url, json=body("SendMessage", params), headers=V10)
    out = r.json()
    assert "result" in out, out
    task = out["result"]["task"]
    if kind == "block":
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    return str(task["id"])


async def send_grpc(stub: Any, agent: str, mid: str) -> str:
    """A blocking gRPC ``SendMessage`` (tenant = the agent); the id of its task."""
    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState

    message = Message(message_id=mid, role=Role.ROLE_USER, parts=[Part(text="go")])
    answer = await stub.SendMessage(SendMessageRequest(tenant=agent, message=message), timeout=60)
    assert answer.task.status.state == TaskState.TASK_STATE_COMPLETED, answer
    return str(answer.task.id)


@pytest.fixture(params=["redis", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> str:
    return shared_store(request.param, "idem")


def test_one_message_id_sent_50_times_over_two_instances_runs_once(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    monkeypatch.setenv("A2A_TEST_RUNS_DIR", str(folder))
    agent = f"counted-{uuid.uuid4().hex[:6]}"
    spec = [f"{agent}=tests.support.agents:Counted?delay=0.5"]
    grpc_ports = (free_port(), free_port())
    a = Instance(tmp_path, store_url, spec, "--grpc-port", str(grpc_ports[0]))
    try:
        b = Instance(tmp_path, store_url, spec, "--grpc-port", str(grpc_ports[1]))
    except BaseException:
        a.stop()
        raise
    kinds = ["block", "later", "rest", "v03", "sse", "grpc"]
    mid = uuid.uuid4().hex

    async def storm() -> list[str]:
        import grpc
        from a2a.types import a2a_pb2_grpc

        limits = httpx.Limits(max_connections=100)
        async with (
            httpx.AsyncClient(timeout=60, limits=limits) as client,
            grpc.aio.insecure_channel(f"127.0.0.1:{grpc_ports[0]}") as one,
            grpc.aio.insecure_channel(f"127.0.0.1:{grpc_ports[1]}") as two,
        ):
            stubs = (a2a_pb2_grpc.A2AServiceStub(one), a2a_pb2_grpc.A2AServiceStub(two))

            def attempt(i: int) -> Any:
                kind = kinds[i % len(kinds)]
                if kind == "grpc":
                    return send_grpc(stubs[i % 2], agent, mid)
                return send(client, (a, b)[i % 2].url, agent, kind, mid)

            return await asyncio.gather(*(attempt(i) for i in range(50)))

    try:
        task_ids = asyncio.run(storm())
        assert set(task_ids) == {task_ids[0]}
        assert runs(folder) == {mid: 1}
        for inst in (a, b):
            task = inst.rpc(agent, "GetTask", {"id": task_ids[0]})["result"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        # later repeats, on either instance, still answer with it
        assert asyncio.run(_one(b.url, agent, mid)) == task_ids[0]
        assert runs(folder) == {mid: 1}
        # another message under that id, on the other instance: refused, nothing runs
        refused = b.rpc(agent, "SendMessage", {"message": msg(mid, "other")})["error"]
        assert refused["code"] == -32602, refused
        assert refused["data"][0]["reason"] == "IDEMPOTENCY_KEY_REUSED"
        # an Idempotency-Key claims across instances too, with the message it was used for
        key, keyed = {"Idempotency-Key": uuid.uuid4().hex}, uuid.uuid4().hex
        first = a.rpc(agent, "SendMessage", {"message": msg(keyed)}, **key)["result"]["task"]
        again = b.rpc(agent, "SendMessage", {"message": msg(keyed)}, **key)["result"]["task"]
        assert again["id"] == first["id"]
        refused = b.rpc(agent, "SendMessage", {"message": msg(keyed, "other")}, **key)["error"]
        assert refused["data"][0]["reason"] == "IDEMPOTENCY_KEY_REUSED", refused
        assert runs(folder) == {mid: 1, keyed: 1}
    finally:
        a.stop()
        b.stop()


async def _one(base: str, agent: str, mid: str) -> str:
    async with httpx.AsyncClient(timeout=60) as client:
        return await send(client, base, agent, "block", mid)


async def _attempt(
    client: httpx.AsyncClient, base: str, agent: str, kind: str, mid: str
) -> tuple[str | None, str]:
    """One send; (the task id, "") when answered with a task, else (None, the error)."""
    try:
        return await send(client, base, agent, kind, mid), ""
    except (AssertionError, KeyError, httpx.HTTPError, ValueError, TimeoutError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


@pytest.fixture(params=["redis", "postgresql"])
def store_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreServer]:
    """A private Redis or PostgreSQL server, started; killed afterwards whatever happened."""
    server: StoreServer = (
        RedisServer(tmp_path) if request.param == "redis" else PostgresServer(tmp_path)
    )
    try:
        server.start()
        yield server
    finally:
        server.close()


def test_a_store_outage_during_sends_never_runs_a_message_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_server: StoreServer
) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    monkeypatch.setenv("A2A_TEST_RUNS_DIR", str(folder))
    url = store_server.url
    agent = "counted"
    spec = [f"{agent}=tests.support.agents:Counted?delay=0.05"]
    a = Instance(tmp_path, url, spec)
    b = Instance(tmp_path, url, spec)
    kinds = ["block", "later", "rest", "sse"]
    outcomes: dict[str, tuple[str, str | None, str]] = {}  # mid -> (kind, task id, error)

    async def traffic(stop: asyncio.Event) -> None:
        """Sends of every kind at a steady pace, each on its own: a blocking send that
        waits out the outage (its agent ran; its end is written once the store is back)
        holds up no other send, so sends made during the outage meet it."""
        in_flight: set[asyncio.Task[None]] = set()

        async def one(client: httpx.AsyncClient, kind: str, mid: str) -> None:
            outcomes[mid] = (kind, *await _attempt(client, a.url, agent, kind, mid))

        async with httpx.AsyncClient(timeout=30) as client:
            n = 0
            while not stop.is_set():
                for kind in kinds:
                    if len(in_flight) >= 64:
                        break
                    sent = asyncio.ensure_future(one(client, kind, f"m{n}-{kind}"))
                    n += 1
                    in_flight.add(sent)
                    sent.add_done_callback(in_flight.discard)
                await asyncio.sleep(0.05)
            await asyncio.gather(*in_flight)

    async def outage() -> None:
        stop = asyncio.Event()
        load = asyncio.ensure_future(traffic(stop))
        await asyncio.sleep(1.0)
        await asyncio.to_thread(store_server.stop)
        await asyncio.sleep(2.0)
        for _ in range(200):  # on a loaded machine, until some request has met the outage
            if any(o[1] is None for o in outcomes.values()):
                break
            await asyncio.sleep(0.1)
        await asyncio.to_thread(store_server.start)
        await asyncio.sleep(2.0)
        stop.set()
        await load

    try:
        asyncio.run(outage())
        failed = {mid: o for mid, o in outcomes.items() if o[1] is None}
        answered = {mid: o for mid, o in outcomes.items() if o[1] is not None}
        assert failed, "the outage made some requests fail"
        assert answered, "requests before and after the outage succeeded"
        time.sleep(3.0)  # the flusher writes what it kept; orphan-timeout is 2 s

        # every task a request was answered with is in the store; a blocking answer's
        # as it was answered (completed)
        for mid, (kind, task_id, _) in answered.items():
            task = b.rpc(agent, "GetTask", {"id": task_id})
            assert "result" in task, (mid, kind, task)
            if kind in ("block", "rest"):
                assert task["result"]["status"]["state"] == "TASK_STATE_COMPLETED", (mid, task)

        # a retry of each failed message finds what its first request did, or says that
        # it left nothing; it never runs the agent a second time
        async def retry(client: httpx.AsyncClient, mid: str) -> tuple[str | None, str]:
            for _ in range(20):  # a pooled connection from before the restart may fail once
                try:
                    r = await client.post(
                        f"{b.url}/a2a/{agent}",
                        json=body("SendMessage", {"message": msg(mid)}),
                        headers=V10,
                    )
                except httpx.ReadTimeout:
                    return None, "timeout: the first attempt's task did not settle"
                out = r.json()
                if "result" in out:  # the first attempt's task, in whatever state it ended
                    return str(out["result"]["task"]["id"]), ""
                if "STORE_UNAVAILABLE" not in str(out):
                    break
                await asyncio.sleep(0.2)
            return None, str(out)

        async def retries() -> dict[str, tuple[str | None, str]]:
            async with httpx.AsyncClient(timeout=30) as client:
                found = await asyncio.gather(*(retry(client, mid) for mid in failed))
            return dict(zip(failed, found, strict=True))

        retried = asyncio.run(retries())
        stuck = [mid for mid, (_, error) in retried.items() if error.startswith("timeout")]
        if stuck:
            listed = b.rpc(agent, "ListTasks", {"pageSize": 100, "historyLength": 1})
            seen = {
                t["history"][0]["messageId"]: (t["id"], t["status"]["state"])
                for t in listed["result"]["tasks"]
                if t.get("history")
            }
            logs = "\n".join(inst.log.read_text()[-6000:] for inst in (a, b))
            pytest.fail(
                f"retries never settled: {[(m, outcomes[m], seen.get(m)) for m in stuck]}\n"
                f"runs: {runs(folder)}\nlogs:\n{logs}"
            )
        counted = runs(folder)
        assert all(n == 1 for n in counted.values()), counted
        for mid, (task_id, error) in retried.items():
            if task_id is None:
                assert "new messageId" in error, (mid, error)
            elif mid not in counted:
                pytest.fail(f"{mid}: answered with task {task_id} but never ran")
        # nothing is left submitted or working
        listed = b.rpc(agent, "ListTasks", {"pageSize": 100})["result"]["tasks"]
        states = {t["status"]["state"] for t in listed}
        assert states <= {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"}, states
    finally:
        a.stop()
        b.stop()
