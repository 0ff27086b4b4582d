"""Operations: /metrics after traffic on each binding, /healthz, /readyz (503 while the
store is unreachable, 200 after), /version, the access log."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette

from a2a_hub import Hub, Settings, create_app
from tests.support.hub import make_hub
from tests.support.sse import frames

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample of a Prometheus text exposition, by name and labels."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found[(s.name, frozenset(s.labels.items()))] = s.value
    return found


def value(found: Samples, name: str, **labels: str) -> float:
    """The sum of the samples named ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in found.items() if n == name and want <= ls)


def send_params(text: str) -> dict[str, Any]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"message": message}


@contextlib.asynccontextmanager
async def running(hub: Hub, **kwargs: Any) -> AsyncIterator[httpx.AsyncClient]:
    app: Starlette = create_app(hub, **kwargs)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            yield c


async def scrape(client: httpx.AsyncClient) -> Samples:
    reply = await client.get("/metrics")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    return samples(reply.text)


async def test_metrics_move_with_traffic_on_each_binding() -> None:
    hub = make_hub({"echo": "echo"})
    async with running(hub) as c:
        before = await scrape(c)
        # JSON-RPC 1.0
        r = await c.post(
            "/a2a/echo",
            json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params("a")},
        )
        assert r.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        # JSON-RPC 0.3
        old = {
            "messageId": uuid.uuid4().hex,
            "role": "user",
            "parts": [{"kind": "text", "text": "b"}],
        }
        r = await c.post(
            "/a2a/echo",
            json={"jsonrpc": "2.0", "id": 2, "method": "message/send", "params": {"message": old}},
        )
        assert r.json()["result"]["status"]["state"] == "completed"
        # REST
        r = await c.post("/a2a/echo/message:send", json=send_params("c"))
        assert r.status_code == 200
        r = await c.get("/a2a/echo/tasks/no-such-task")
        assert r.status_code == 404
        # a JSON-RPC error
        r = await c.post("/a2a/echo", json={"jsonrpc": "2.0", "id": 3, "method": "Nope"})
        assert r.json()["error"]["code"] == -32601
        # SSE
        async with c.stream("POST", "/a2a/echo/message:stream", json=send_params("d")) as s:
            got = [f async for f in frames(s)]
        assert got
        # a resume after the first event replays the rest from the log
        task_id = got[0].data["task"]["id"]
        resume = {"Last-Event-ID": "1"}
        async with c.stream("GET", f"/a2a/echo/tasks/{task_id}:subscribe", headers=resume) as s:
            again = [f async for f in frames(s)]
        assert [f.id for f in again] == [f.id for f in got[1:]]
        after = await scrape(c)
        for _ in range(100):  # the task watcher reads the feed in its own task
            done = "a2a_tasks_total"
            if value(after, done, agent="echo") - value(before, done, agent="echo") >= 4:
                break
            await asyncio.sleep(0.05)
            after = await scrape(c)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    hist = "a2a_http_request_duration_seconds_count"
    route = "/a2a/{agent_id}"
    assert moved(hist, route=route, binding="jsonrpc", version="1.0", status="200") == 1
    assert moved(hist, route=route, binding="jsonrpc", version="", status="200") == 1  # Nope
    assert moved(hist, route=route, binding="jsonrpc", version="0.3", status="200") == 1
    assert moved(hist, route=route + "/message:send", binding="rest", method="POST") == 1
    assert moved(hist, route=route + "/tasks/{task_id}", binding="rest", status="404") == 1
    # the stream is timed by its own metrics, not the request histogram
    assert moved(hist, route=route + "/message:stream") == 0
    assert moved("a2a_sse_stream_duration_seconds_count") == 2
    assert moved("a2a_sse_events_sent_total") == len(got) + len(again)
    assert moved("a2a_stream_events_replayed_total") == len(again)
    assert value(after, "a2a_sse_streams_open") == value(before, "a2a_sse_streams_open")
    assert moved("a2a_errors_total", binding="jsonrpc", code="-32601") == 1
    assert moved("a2a_errors_total", binding="rest", reason="TASK_NOT_FOUND") == 1
    assert moved("a2a_tasks_total", agent="echo", state="completed") == 4
    assert moved("a2a_task_duration_seconds_count", agent="echo") == 4
    assert value(after, "a2a_tasks_active", agent="echo") == 0


async def test_store_operations_are_timed_by_backend(tmp_path: Any) -> None:
    settings = Settings.from_flat(store=f"sqlite:///{tmp_path}/hub.db", agents=["echo"])
    async with running(Hub(settings)) as c:
        before = await scrape(c)
        r = await c.post("/a2a/echo/message:send", json=send_params("x"))
        task_id = r.json()["task"]["id"]
        assert (await c.get(f"/a2a/echo/tasks/{task_id}")).status_code == 200
        after = await scrape(c)
    name = "a2a_store_operation_duration_seconds_count"
    assert value(after, name, backend="sqlite") > value(before, name, backend="sqlite")


async def test_metrics_can_be_switched_off() -> None:
    hub = make_hub({"echo": "echo"}, metrics=False)
    try:
        async with running(hub) as c:
            assert (await c.get("/metrics")).status_code == 404
            r = await c.post("/a2a/echo/message:send", json=send_params("x"))
            assert r.status_code == 200
    finally:
        from a2a_hub import metrics

        metrics._enabled = True  # the switch is process-wide; give it back to the others


async def test_health_and_version() -> None:
    async with running(make_hub({"echo": "echo"})) as c:
        health = await c.get("/healthz")
        assert health.status_code == 200
        assert health.json()["agents"] == ["echo"]
        ready = await c.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["checks"] == {"store": "ok", "coordinator": "ok"}
        version = (await c.get("/version")).json()
        assert version["name"] == "a2a-hub"
        assert "1.0" in version["a2aVersions"]


async def test_access_log_json_lines(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="a2a_hub.access")
    async with running(make_hub({"echo": "echo"}, access_log="json")) as c:
        r = await c.post("/a2a/echo/message:send", json=send_params("x"))
        task_id = r.json()["task"]["id"]
        await c.get(f"/a2a/echo/tasks/{task_id}")
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "a2a_hub.access"]
    get = next(line for line in lines if line["method"] == "GET")
    assert get["route"] == "/a2a/{agent_id}/tasks/{task_id}"
    assert get["agent"] == "echo"
    assert get["task_id"] == task_id
    assert get["status"] == 200
    assert get["duration_ms"] >= 0


# --- readiness while the store is unreachable ------------------------------------------


class Proxy:
    """A TCP proxy to a real server that can be cut (connections dropped, port refused)."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.server: asyncio.Server | None = None
        self.pipes: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in list(self.pipes):
            writer.transport.abort()
        self.pipes.clear()
        await self.server.wait_closed()
        self.server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.pipes.update((writer, up_writer))

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))


def _store_url(kind: str, port: int) -> str:
    from tests.support.stores import POSTGRES_URL, redis_test_url

    if kind == "redis":
        return redis_test_url().replace(":6379/", f":{port}/")
    return POSTGRES_URL.replace(":5432/", f":{port}/")


@pytest.mark.parametrize("kind", ["redis", "postgresql"])
async def test_readyz_503_while_the_store_is_unreachable(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="a2a_hub.stores.outage")
    proxy = Proxy("127.0.0.1", 6379 if kind == "redis" else 5432)
    await proxy.start()
    settings = Settings.from_flat(store=_store_url(kind, proxy.port), agents=["echo"])
    try:
        async with running(Hub(settings)) as c:
            assert (await c.get("/readyz")).status_code == 200
            await proxy.cut()
            down = await c.get("/readyz")
            assert down.status_code == 503
            body = down.json()
            assert body["status"] == "unavailable"
            assert "store" in body["failing"]
            assert body["checks"]["store"] != "ok"
            assert (await c.get("/healthz")).status_code == 200  # the process still answers
            for _ in range(3):
                assert (await c.get("/readyz")).status_code == 503
            await proxy.start()  # same port again
            for _ in range(50):
                up = await c.get("/readyz")
                if up.status_code == 200:
                    break
                await asyncio.sleep(0.2)
            assert up.status_code == 200, up.text
            # the outage is logged as state changes: down once, then back, no traceback
            lines = [r for r in caplog.records if r.name == "a2a_hub.stores.outage"]
            assert " is down: " in lines[0].getMessage()
            assert sum(" is down" in r.getMessage() for r in lines) == 1
            assert " is back after" in lines[-1].getMessage()
            assert not any(r.exc_info for r in lines)
    finally:
        if proxy.server is not None:
            await proxy.cut()


async def test_llm_calls_are_counted_by_provider() -> None:
    settings = Settings.from_flat(store="memory://", agents=["bot=llm"], llm_provider="scripted")
    async with running(Hub(settings)) as c:
        before = await scrape(c)
        r = await c.post("/a2a/bot/message:send", json=send_params("hello"))
        assert r.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        after = await scrape(c)
    calls = "a2a_llm_calls_total"
    moved = value(after, calls, provider="scripted", outcome="ok")
    assert moved - value(before, calls, provider="scripted", outcome="ok") == 1
    seconds = "a2a_llm_call_duration_seconds_count"
    assert value(after, seconds, provider="scripted") > value(before, seconds, provider="scripted")


async def test_retention_removes_finished_tasks_older_than_the_ttl(tmp_path: Any) -> None:
    from a2a_hub.server.retention import Retention

    settings = Settings.from_flat(store=f"sqlite:///{tmp_path}/hub.db", agents=["echo"])
    assert settings.store.task_ttl == 7 * 86400  # the default: a week
    async with running(Hub(settings)) as c:
        ids = []
        sent = [send_params(text) for text in ("a", "b", "c")]
        for params in sent:
            r = await c.post("/a2a/echo/message:send", json=params)
            ids.append(r.json()["task"]["id"])
        again = await c.post("/a2a/echo/message:send", json=sent[0])  # a repeat: the same task
        assert again.json()["task"]["id"] == ids[0]
        hub: Hub = c._transport.app.state.hub  # type: ignore[attr-defined]
        assert await Retention(hub, 3600).run_once() == 0  # none older than an hour
        await asyncio.sleep(0.05)
        assert await Retention(hub, 0.01).run_once() == 3
        for task_id in ids:
            assert (await c.get(f"/a2a/echo/tasks/{task_id}")).status_code == 404
        # the messages' claims went with them: the same messageId is a new message now
        later = await c.post("/a2a/echo/message:send", json=sent[0])
        assert later.json()["task"]["id"] not in ids
