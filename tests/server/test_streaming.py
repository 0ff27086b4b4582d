"""SSE streaming and re-subscription with replay, over real sockets."""

from __future__ import annotations

import asyncio
import random
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.agents import ChattyExecutor, PizzaExecutor, SilentEcho, SlowExecutor
from tests.support.hub import LiveServer, make_hub
from tests.support.sse import Frame, frames, rpc_body, user_message

V10 = {"A2A-Version": "1.0"}


@pytest.fixture
async def server() -> AsyncIterator[LiveServer]:
    hub = make_hub(
        {
            "echo": "echo",
            "echo-msg": "echo?reply=message",
            "pizza": PizzaExecutor(),
            "slow": SlowExecutor(),
            "chatty": ChattyExecutor(),
            "big": ChattyExecutor(chunks=997, size=16384, pause_every=1, delay=0.5),
            "silent": SilentEcho(),
        },
        sse_heartbeat=0.3,
    )
    async with LiveServer(hub) as live:
        yield live


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


async def collect(
    http: httpx.AsyncClient, method: str, url: str, *, limit: int | None = None, **kw: Any
) -> list[Frame]:
    out: list[Frame] = []
    async with http.stream(method, url, **kw) as r:
        assert r.status_code == 200, await r.aread()
        assert r.headers["content-type"].startswith("text/event-stream")
        async for f in frames(r):
            if f.comment:
                continue
            out.append(f)
            if limit is not None and len(out) >= limit:
                break
    return out


def kinds(frames_: list[Frame], key: str = "result") -> list[str]:
    return [next(iter(f.data[key])) if key else next(iter(f.data)) for f in frames_]


async def test_send_streaming_message_json_rpc(server: LiveServer, http: httpx.AsyncClient) -> None:
    got = await collect(
        http,
        "POST",
        f"{server.url}/a2a/echo",
        headers=V10,
        json=rpc_body("SendStreamingMessage", {"message": user_message("hi")}),
    )
    assert [f.id for f in got] == [1, 2, 3, 4]
    assert kinds(got) == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert all(f.data["id"] == 1 and f.data["jsonrpc"] == "2.0" for f in got)
    assert got[0].data["result"]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert got[-1].data["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_rest_stream_and_message_reply(server: LiveServer, http: httpx.AsyncClient) -> None:
    got = await collect(
        http,
        "POST",
        f"{server.url}/a2a/echo/message:stream",
        json={"message": user_message("rest")},
    )
    assert kinds(got, "") == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    reply = await collect(
        http,
        "POST",
        f"{server.url}/a2a/echo-msg/message:stream",
        json={"message": user_message("yo")},
    )
    assert len(reply) == 1 and reply[0].id is None
    assert reply[0].data["message"]["parts"] == [{"text": "echo: yo"}]


async def test_03_and_01_streams(server: LiveServer, http: httpx.AsyncClient) -> None:
    msg03 = {"messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "x"}]}
    got = await collect(
        http, "POST", f"{server.url}/a2a/echo", json=rpc_body("message/stream", {"message": msg03})
    )
    results = [f.data["result"] for f in got]
    assert [r["kind"] for r in results] == [
        "task",
        "status-update",
        "artifact-update",
        "status-update",
    ]
    assert results[-1]["final"] is True and results[1]["final"] is False
    legacy = {
        "id": "legacy-s",
        "message": {"role": "user", "parts": [{"type": "text", "text": "old"}]},
    }
    got = await collect(
        http, "POST", f"{server.url}/a2a/echo", json=rpc_body("tasks/sendSubscribe", legacy)
    )
    results = [f.data["result"] for f in got]
    assert all(r["id"] == "legacy-s" for r in results)
    assert results[-1]["final"] is True and results[-1]["status"]["state"] == "completed"
    assert any(
        r.get("artifact", {}).get("parts") == [{"type": "text", "text": "echo: old"}]
        for r in results
    )


async def test_interrupted_send_stream_ends_and_continuation_starts_with_snapshot(
    server: LiveServer, http: httpx.AsyncClient
) -> None:
    url = f"{server.url}/a2a/pizza"
    first = await collect(
        http,
        "POST",
        url,
        headers=V10,
        json=rpc_body("SendStreamingMessage", {"message": user_message("p")}),
    )
    last = first[-1].data["result"]["statusUpdate"]
    assert last["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    task_id = last["taskId"]
    second = await collect(
        http,
        "POST",
        url,
        headers=V10,
        json=rpc_body("SendStreamingMessage", {"message": user_message("funghi", taskId=task_id)}),
    )
    snapshot = second[0].data["result"]["task"]
    assert snapshot["history"][-1]["parts"][0]["text"] == "funghi"
    assert second[0].id == first[-1].id + 1  # the client's message is event n+1
    assert [f.id for f in second[1:]] == list(range(second[0].id + 1, second[-1].id + 1))
    assert second[-1].data["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_subscribe_to_a_running_task_then_cancel(
    server: LiveServer, http: httpx.AsyncClient
) -> None:
    url = f"{server.url}/a2a/slow"
    params = {"message": user_message("work"), "configuration": {"returnImmediately": True}}
    task = (await http.post(url, headers=V10, json=rpc_body("SendMessage", params))).json()
    task_id = task["result"]["task"]["id"]
    seen: list[Frame] = []
    heartbeats = 0

    async def follow() -> None:
        nonlocal heartbeats
        async with http.stream(
            "POST", url, headers=V10, json=rpc_body("SubscribeToTask", {"id": task_id})
        ) as r:
            async for f in frames(r):
                if f.comment:
                    heartbeats += 1
                    if heartbeats == 2:
                        await http.post(
                            url, headers=V10, json=rpc_body("CancelTask", {"id": task_id})
                        )
                    continue
                seen.append(f)

    await asyncio.wait_for(follow(), 20)
    assert "task" in seen[0].data["result"]  # a snapshot first
    assert seen[-1].data["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert heartbeats >= 2


async def test_disconnect_does_not_cancel_and_replay_of_a_finished_task(
    server: LiveServer, http: httpx.AsyncClient
) -> None:
    url = f"{server.url}/a2a/chatty"
    head = await collect(
        http,
        "POST",
        url,
        headers=V10,
        limit=5,
        json=rpc_body("SendStreamingMessage", {"message": user_message("go")}),
    )
    task_id = head[0].data["result"]["task"]["id"]
    engine = server.hub.agents["chatty"].engine
    for _ in range(200):  # the server noticed the client leaving and dropped its subscription
        if task_id not in engine.pubsub.topics:
            break
        await asyncio.sleep(0.01)
    assert task_id not in engine.pubsub.topics
    for _ in range(200):
        got = (await http.post(url, headers=V10, json=rpc_body("GetTask", {"id": task_id}))).json()
        if got["result"]["status"]["state"] == "TASK_STATE_COMPLETED":
            break
        await asyncio.sleep(0.05)
    assert got["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
    # subscribing afresh to a finished task is refused (JSON, before any SSE) …
    r = await http.post(url, headers=V10, json=rpc_body("SubscribeToTask", {"id": task_id}))
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["error"]["code"] == -32004
    # … but a replay delivers the missed tail and closes
    tail = await collect(
        http,
        "POST",
        url,
        json=rpc_body("SubscribeToTask", {"id": task_id}),
        headers={**V10, "Last-Event-ID": "995"},
    )
    assert [f.id for f in tail] == [996, 997, 998, 999, 1000]
    # the same through metadata (for clients that cannot set headers) and over REST
    tail = await collect(
        http,
        "POST",
        url,
        headers=V10,
        json=rpc_body("SubscribeToTask", {"id": task_id, "metadata": {"lastEventId": 998}}),
    )
    assert [f.id for f in tail] == [999, 1000]
    tail = await collect(http, "GET", f"{url}/tasks/{task_id}:subscribe?lastEventId=999")
    assert [f.id for f in tail] == [1000]


async def test_thousand_events_with_random_drops(
    server: LiveServer, http: httpx.AsyncClient
) -> None:
    url = f"{server.url}/a2a/chatty"
    rng = random.Random(1234)
    ids: list[int] = []
    chunks: list[str] = []

    def take(f: Frame) -> None:
        ids.append(f.id or 0)
        upd = f.data["result"].get("artifactUpdate")
        if upd:
            chunks.append(upd["artifact"]["parts"][0]["text"])

    got = await collect(
        http,
        "POST",
        url,
        headers=V10,
        limit=rng.randint(3, 120),
        json=rpc_body("SendStreamingMessage", {"message": user_message("go")}),
    )
    task_id = got[0].data["result"]["task"]["id"]
    for f in got:
        take(f)
    drops = 0
    while not ids or ids[-1] != 1000:
        limit = rng.randint(1, 150) if drops < 8 else None
        part = await collect(
            http,
            "POST",
            url,
            limit=limit,
            json=rpc_body("SubscribeToTask", {"id": task_id}),
            headers={**V10, "Last-Event-ID": str(ids[-1])},
        )
        for f in part:
            take(f)
        drops += 1
    assert drops >= 8
    assert ids == list(range(1, 1001))
    assert chunks == [f"{i:06d}.." for i in range(997)]
    final = (await http.post(url, headers=V10, json=rpc_body("GetTask", {"id": task_id}))).json()
    art = final["result"]["artifacts"]
    assert len(art) == 1 and [p["text"] for p in art[0]["parts"]] == chunks


async def test_several_subscribers_see_everything(
    server: LiveServer, http: httpx.AsyncClient
) -> None:
    url = f"{server.url}/a2a/chatty"
    params = {"message": user_message("x"), "configuration": {"returnImmediately": True}}
    task_id = (await http.post(url, headers=V10, json=rpc_body("SendMessage", params))).json()[
        "result"
    ]["task"]["id"]

    async def follow() -> list[int]:
        got = await collect(
            http,
            "POST",
            url,
            json=rpc_body("SubscribeToTask", {"id": task_id}),
            headers={**V10, "Last-Event-ID": "0"},
        )
        return [f.id or 0 for f in got]

    results = await asyncio.gather(*(follow() for _ in range(4)))
    for ids in results:
        assert ids == list(range(1, 1001))


async def test_a_stalled_subscriber_does_not_hold_anyone_back(
    server: LiveServer, http: httpx.AsyncClient
) -> None:
    url = f"{server.url}/a2a/big"
    params = {"message": user_message("x"), "configuration": {"returnImmediately": True}}
    task_id = (await http.post(url, headers=V10, json=rpc_body("SendMessage", params))).json()[
        "result"
    ]["task"]["id"]
    # a raw socket that asks for the stream and never reads a byte
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    body = b'{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"%s"}}' % (
        task_id.encode()
    )
    sock.sendall(
        b"POST /a2a/big HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nLast-Event-ID: 0\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    try:
        got = await asyncio.wait_for(
            collect(
                http,
                "POST",
                url,
                json=rpc_body("SubscribeToTask", {"id": task_id}),
                headers={**V10, "Last-Event-ID": "0"},
            ),
            30,
        )
        assert [f.id for f in got] == list(range(1, 1001))
        engine = server.hub.agents["big"].engine
        stalled = [sub for subs in engine.pubsub.topics.values() for sub in subs]
        assert stalled, "the stalled subscriber is still attached"
        assert all(len(sub.buffer) <= sub.limit for sub in stalled)
        assert any(sub.overflows for sub in stalled), "it fell behind and was cut loose"
    finally:
        sock.close()


async def test_stream_errors(server: LiveServer, http: httpx.AsyncClient) -> None:
    async def err(
        agent: str, method: str, params: dict[str, Any], headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        r = await http.post(
            f"{server.url}/a2a/{agent}",
            json=rpc_body(method, params),
            headers={**V10, **(headers or {})},
        )
        assert r.headers["content-type"].startswith("application/json")
        return r.json()["error"]  # type: ignore[no-any-return]

    assert (await err("echo", "SubscribeToTask", {"id": "nope"}))["code"] == -32001
    done = (
        await http.post(
            f"{server.url}/a2a/echo",
            headers=V10,
            json=rpc_body("SendMessage", {"message": user_message("a")}),
        )
    ).json()["result"]["task"]["id"]
    bad = await err("echo", "SubscribeToTask", {"id": done}, {"Last-Event-ID": "abc"})
    assert bad["code"] == -32602 and "Last-Event-ID" in bad["message"]
    far = await err("echo", "SubscribeToTask", {"id": done}, {"Last-Event-ID": "99"})
    assert far["code"] == -32602 and "beyond the last event (4)" in far["message"]
    silent = await err("silent", "SendStreamingMessage", {"message": user_message("s")})
    assert silent["code"] == -32004 and "streaming" in silent["message"]
    card = (await http.get(f"{server.url}/a2a/silent/.well-known/agent-card.json")).json()
    assert card["capabilities"]["streaming"] is False
    r = await http.post(
        f"{server.url}/a2a/silent/message:stream", json={"message": user_message("s")}
    )
    assert r.status_code == 400 and r.json()["error"]["details"][0]["reason"] == (
        "UNSUPPORTED_OPERATION"
    )


async def test_01_and_03_resubscribe_with_replay(
    server: LiveServer, http: httpx.AsyncClient
) -> None:
    url = f"{server.url}/a2a/chatty"
    legacy = {
        "id": "legacy-r",
        "message": {"role": "user", "parts": [{"type": "text", "text": "x"}]},
    }
    head = await collect(http, "POST", url, limit=3, json=rpc_body("tasks/sendSubscribe", legacy))
    assert [f.id for f in head] == [1, 2, 3]
    rest = await collect(
        http,
        "POST",
        url,
        headers={"Last-Event-ID": "3"},
        json=rpc_body("tasks/resubscribe", {"id": "legacy-r"}),
    )
    assert [f.id for f in rest] == list(range(4, 1001))
    assert all(f.data["result"]["id"] == "legacy-r" for f in rest)  # 0.1 shapes
    assert rest[-1].data["result"]["final"] is True
    msg03 = {"messageId": "m3", "role": "user", "parts": [{"kind": "text", "text": "y"}]}
    head = await collect(
        http, "POST", url, limit=2, json=rpc_body("message/stream", {"message": msg03})
    )
    task_id = head[0].data["result"]["id"]
    rest = await collect(
        http,
        "POST",
        url,
        json=rpc_body("tasks/resubscribe", {"id": task_id, "metadata": {"lastEventId": "2"}}),
    )
    assert [f.id for f in rest] == list(range(3, 1001))
    assert rest[-1].data["result"]["kind"] == "status-update" and rest[-1].data["result"]["final"]
