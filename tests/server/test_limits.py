"""``[[limits]]``: rates shared by instances over Redis, refused in each binding's own shape
with the retry delay, ``max_running`` under concurrent streamed sends, the extended card.

Real uvicorn servers (and their gRPC bindings) over a real Redis, each test under a key
prefix of its own (purged after it).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2

from a2a_hub import AgentExecutor, AgentSpec, Hub, Settings
from a2a_hub.engine.executor import RequestContext, TaskUpdater
from a2a_hub.server.grpc._generated import a2a_pb2 as pb
from a2a_hub.server.grpc._generated import a2a_pb2_grpc
from a2a_hub.settings import LimitSpec
from a2a_hub.stores.memory import MemoryStore
from tests.support.hub import LiveServer
from tests.support.stores import missing_service, purge_redis, redis_test_url
from tests.support.ws import connect, recv, send, ws_url

V10 = {"A2A-Version": "1.0"}
RATE = 10  # per second
AGENTS = ("jsonrpc", "rest", "sse", "grpc", "ws", "hourly")


def msg10(text: str) -> dict[str, Any]:
    return {"message": {"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]}}


@pytest.fixture
async def redis_url() -> AsyncIterator[str]:
    import redis.asyncio as redis

    url = redis_test_url()
    client = redis.from_url(url.split("?")[0])
    try:
        await client.ping()
    except Exception as exc:
        missing_service(f"Redis unavailable: {type(exc).__name__}: {exc}")
    finally:
        await client.aclose()
    yield url
    await purge_redis(url)


def limited_hub(url: str) -> Hub:
    limits = [
        LimitSpec(caller="*", rate=f"{RATE}/second"),
        LimitSpec(caller="*", agent="hourly", rate="5/hour"),
    ]
    settings = Settings.from_flat(
        agents=[AgentSpec(id=a, kind="echo") for a in AGENTS],
        store=url,
        grpc_port=0,
        limits=limits,
    )
    return Hub(settings)


class Tally:
    """What one binding answered: accepted, refused (each with its retry delay)."""

    def __init__(self) -> None:
        self.ok = 0
        self.delays: list[float] = []
        self.began = time.monotonic()

    def check(self, what: str) -> None:
        elapsed = time.monotonic() - self.began
        assert self.ok + len(self.delays) == 100, what
        assert self.delays, f"{what}: nothing refused ({self.ok} accepted in {elapsed:.1f} s)"
        assert all(0 < d <= 2 for d in self.delays), (what, self.delays)
        # the rate is shared by both instances: at most RATE per second in all (the sliding
        # window's weighting allows a little more at a window's edge)
        assert self.ok <= RATE * (elapsed + 2), (what, self.ok, elapsed)
        assert self.ok >= 1, what


async def http_binding(servers: list[LiveServer], agent: str, kind: str) -> Tally:
    tally = Tally()
    async with httpx.AsyncClient(timeout=60) as http:

        async def one(i: int) -> None:
            base = f"{servers[i % 2].url}/a2a/{agent}"
            if kind == "jsonrpc":
                body = {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "SendMessage",
                    "params": msg10(f"m{i}"),
                }
                r = await http.post(base, json=body, headers=V10)
            else:
                path = "/message:send" if kind == "rest" else "/message:stream"
                r = await http.post(base + path, json=msg10(f"m{i}"))
            if r.status_code == 200:
                assert "error" not in r.text[:200], r.text
                tally.ok += 1
                return
            assert r.status_code == 429, r.text
            assert int(r.headers["retry-after"]) >= 1
            if kind == "jsonrpc":
                data = r.json()["error"]["data"]
                assert data[0]["reason"] == "RATE_LIMITED"
                retry = data[1]
            else:
                details = r.json()["error"]["details"]
                assert details[0]["reason"] == "RATE_LIMITED"
                retry = details[1]
            assert retry["@type"] == "type.googleapis.com/google.rpc.RetryInfo"
            tally.delays.append(float(retry["retryDelay"].removesuffix("s")))

        await asyncio.gather(*(one(i) for i in range(100)))
    return tally


async def grpc_binding(servers: list[LiveServer]) -> Tally:
    tally = Tally()
    channels = []
    for server in servers:
        assert server.hub.grpc is not None
        channels.append(grpc.aio.insecure_channel(f"127.0.0.1:{server.hub.grpc.port}"))
    stubs = [a2a_pb2_grpc.A2AServiceStub(c) for c in channels]

    async def one(i: int) -> None:
        message = pb.Message(message_id=f"g{i}", role=pb.ROLE_USER, parts=[pb.Part(text="g")])
        try:
            await stubs[i % 2].SendMessage(pb.SendMessageRequest(tenant="grpc", message=message))
        except grpc.aio.AioRpcError as exc:
            assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, exc
            trailers = dict(exc.trailing_metadata() or ())
            status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
            delay = error_details_pb2.RetryInfo()
            assert any(d.Unpack(delay) for d in status.details if d.Is(delay.DESCRIPTOR))
            tally.delays.append(delay.retry_delay.ToNanoseconds() / 1e9)
            return
        tally.ok += 1

    try:
        await asyncio.gather(*(one(i) for i in range(100)))
    finally:
        for channel in channels:
            await channel.close()
    return tally


async def ws_binding(servers: list[LiveServer]) -> Tally:
    tally = Tally()

    async def socket(server: LiveServer, first: int) -> None:
        async with connect(ws_url(server, "ws")) as ws:
            for i in range(first, first + 50):
                await send(ws, action="send_message", message_id=f"w{i}", text="w")
            answered: set[str] = set()
            while len(answered) < 50:
                event = await recv(ws, within=60)
                mid = event.get("message_id")
                if event["event"] == "error":
                    assert event["code"] == "rate_limited", event
                    assert event["details"]["retry_info"]["retryDelay"].endswith("s")
                    tally.delays.append(event["details"]["retry_after"])
                    answered.add(mid)
                elif event["event"] == "task_status_update" and event["status"] == "completed":
                    tally.ok += 1
                    answered.add(event["global_task_id"])

    await asyncio.gather(socket(servers[0], 0), socket(servers[1], 50))
    return tally


async def test_a_shared_rate_refuses_the_excess_on_every_binding(redis_url: str) -> None:
    async with LiveServer(limited_hub(redis_url)) as a, LiveServer(limited_hub(redis_url)) as b:
        servers = [a, b]
        for kind in ("jsonrpc", "rest", "sse"):
            (await http_binding(servers, kind, kind)).check(kind)
        (await grpc_binding(servers)).check("grpc")
        (await ws_binding(servers)).check("ws")
        # shared: five an hour through one instance, and the sixth is refused by the other
        async with httpx.AsyncClient(timeout=30) as http:
            for i in range(5):
                r = await http.post(f"{a.url}/a2a/hourly/message:send", json=msg10(f"h{i}"))
                assert r.status_code == 200, r.text
            r = await http.post(f"{b.url}/a2a/hourly/message:send", json=msg10("h5"))
            assert r.status_code == 429, r.text
            assert 1 <= int(r.headers["retry-after"]) <= 3600  # within the hour's window
            metrics = (await http.get(f"{b.url}/metrics")).text
            assert 'a2a_rate_limited_total{agent="hourly",method="SendMessage"} 1.0' in metrics


class Gated(AgentExecutor):
    """Works until ``release`` is set; counts the runs at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.running = 0
        self.most = 0

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await updater.start()
            await updater.working("waiting")
            await self.release.wait()
            await updater.complete("done")
        finally:
            self.running -= 1


async def test_max_running_holds_under_concurrent_streamed_sends() -> None:
    gated = Gated()
    settings = Settings.from_flat(
        agents=[AgentSpec(id="gated", kind="python", executor="x:y")],
        store="memory://",
        limits=[LimitSpec(caller="*", max_running=2)],
    )
    hub = Hub(settings, store=MemoryStore(), executors={"gated": gated})
    async with LiveServer(hub) as server, httpx.AsyncClient(timeout=60) as http:
        url = f"{server.url}/a2a/gated/message:stream"
        open_streams: list[httpx.Response] = []
        refused: list[httpx.Response] = []

        async def one(i: int) -> None:
            request = http.build_request("POST", url, json=msg10(f"s{i}"))
            response = await http.send(request, stream=True)
            if response.status_code == 200:
                open_streams.append(response)
            else:
                await response.aread()
                await response.aclose()
                refused.append(response)

        await asyncio.gather(*(one(i) for i in range(20)))
        assert len(open_streams) == 2, [r.status_code for r in refused]
        assert len(refused) == 18
        for response in refused:
            assert response.status_code == 429
            assert response.headers["retry-after"] == "1"
            assert json.loads(response.text)["error"]["details"][0]["reason"] == "RATE_LIMITED"
        assert gated.most <= 2
        gated.release.set()
        for response in open_streams:
            body = (await response.aread()).decode()
            await response.aclose()
            assert "TASK_STATE_COMPLETED" in body
        # the finished runs gave their places back
        r = await http.post(f"{server.url}/a2a/gated/message:send", json=msg10("after"))
        assert r.status_code == 200, r.text
        assert gated.most <= 2


async def test_the_extended_card_states_the_callers_limits(tmp_path: Path) -> None:
    settings = Settings.from_flat(
        agents=[AgentSpec(id="echo", kind="echo", auth="api-key", extended_skills=[])],
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
        limits=[
            LimitSpec(caller="*", rate="100/second", burst=150, max_running=3),
            LimitSpec(caller="someone-else", method="GetTask", rate="1/second"),
        ],
    )
    hub = Hub(settings, store=MemoryStore())
    async with LiveServer(hub) as server, httpx.AsyncClient(timeout=30) as http:
        assert hub.registry is not None
        key, _ = await hub.registry.create_key(agents=["echo"])
        r = await http.get(f"{server.url}/a2a/echo/extendedAgentCard", headers={"X-API-Key": key})
        assert r.status_code == 200, r.text
        extensions = r.json()["capabilities"]["extensions"]
        (limits,) = [e for e in extensions if e["uri"] == "urn:a2a-hub:ext:limits:v1"]
        assert limits["params"]["limits"] == [
            {"method": "*", "rate": "100/second", "burst": 150, "maxRunning": 3}
        ]


def test_limit_entries_are_checked_in_one_line() -> None:
    from a2a_hub.settings import SettingsError, load_settings
    from a2a_hub.settings.limits import parse_rate

    assert parse_rate("20/second") == (20, 1.0)
    assert parse_rate("1000/hour") == (1000, 3600.0)
    assert parse_rate("5 per 10 minutes") == (5, 600.0)
    env = {"A2A_HUB_LIMITS": "caller=alice;rate=3/minute;burst=6,caller=*;max_running=2"}
    limits = load_settings(env=env).limits
    assert limits == [
        LimitSpec(caller="alice", rate="3/minute", burst=6),
        LimitSpec(caller="*", max_running=2),
    ]
    for bad, why in (
        ("rate=fast", "write COUNT/UNIT"),
        ("caller=bob", "give rate and/or max_running"),
        ("rate=1/second;max_running=0", "max_running must be at least 1"),
        ("burst=3;max_running=1", "burst needs a rate"),
    ):
        with pytest.raises(SettingsError, match=why):
            load_settings(env={"A2A_HUB_LIMITS": bad})
    with pytest.raises(SettingsError, match="not an A2A method"):
        limited = Settings.from_flat(
            agents=[AgentSpec(id="e")], store="memory://", limits=["method=Send;rate=1/second"]
        )
        Hub(limited, store=MemoryStore())


async def test_a_burst_widens_the_window_and_each_caller_counts_alone() -> None:
    from a2a_hub.engine.caller import ANONYMOUS, Caller
    from a2a_hub.protocol.errors import RateLimitedError
    from a2a_hub.server.limits import Limits

    limits = Limits([LimitSpec(caller="*", rate="2/hour", burst=4)], "memory://")
    gate = limits.for_agent("echo")
    assert gate is not None and limits.for_agent("other") is not None
    alice = Caller(principal="alice", key_id="k1")
    try:
        for _ in range(4):  # the burst: 4 at once, then the average (2 an hour) holds
            await gate.admit(alice, "SendMessage")
        with pytest.raises(RateLimitedError) as refused:
            await gate.admit(alice, "GetTask")  # method "*": one counter for every method
        assert 0 < refused.value.retry_after <= 7200  # within the 2-hour window of the burst
        await gate.admit(ANONYMOUS, "SendMessage")  # another caller, its own counter
        assert gate.max_running(alice) is None
    finally:
        await limits.close()
