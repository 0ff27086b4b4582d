"""The server's shape: caller middleware, live agent registry, the one catch-all, routing."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from starlette.middleware import Middleware
from starlette.types import Scope

from a2a_hub import AgentExecutor, AgentSpec, Hub, RequestContext, Settings, TaskUpdater, create_app
from a2a_hub.engine.caller import ANONYMOUS, Caller
from a2a_hub.protocol.errors import A2AError
from a2a_hub.server.caller import CallerMiddleware
from a2a_hub.stores.memory import MemoryStore
from tests.support.hub import make_hub
from tests.support.sse import frames

V10 = {"A2A-Version": "1.0"}


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def rpc_body(method: str, params: Any = None, req_id: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": req_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., httpx.AsyncClient]]:
    """``serve(hub, **create_app_kwargs)``: a client of the hub's app; hubs are closed after."""
    clients: list[httpx.AsyncClient] = []
    hubs: list[Hub] = []

    def make(hub: Hub, **kwargs: Any) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=create_app(hub, **kwargs))
        client = httpx.AsyncClient(transport=transport, base_url="http://hub.test")
        clients.append(client)
        hubs.append(hub)
        return client

    yield make
    for client in clients:
        await client.aclose()
    for hub in hubs:
        await hub.close()


# --- the caller ------------------------------------------------------------------------


class NumberingMiddleware(CallerMiddleware):
    """A caller per request, numbered: shows that identify runs once per request."""

    def __init__(self, app: Any, seen: list[Caller]) -> None:
        super().__init__(app)
        self.seen = seen

    async def identify(self, scope: Scope) -> Caller:
        caller = Caller(principal=f"p{len(self.seen)}", scopes=frozenset({"invoke", "read-all"}))
        self.seen.append(caller)
        return caller


ENGINE_METHODS = ("send", "send_stream", "subscribe", "get_task", "list_tasks", "cancel_task")


def record_callers(
    monkeypatch: pytest.MonkeyPatch, hub: Hub, agent_id: str
) -> list[tuple[str, Caller]]:
    """Wrap the agent's engine methods to note (method, caller=) of every call."""
    calls: list[tuple[str, Caller]] = []
    engine = hub.agents[agent_id].engine
    for name in ENGINE_METHODS:
        original = getattr(engine, name)

        def wrapper(*args: Any, _name: str = name, _orig: Any = original, **kwargs: Any) -> Any:
            calls.append((_name, kwargs["caller"]))
            return _orig(*args, **kwargs)

        monkeypatch.setattr(engine, name, wrapper)
    return calls


async def test_one_caller_per_request_reaches_every_engine_method(
    serve: Callable[..., httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = make_hub({"echo": "echo", "pizza": "echo"})
    await hub.start()
    seen: list[Caller] = []
    c = serve(hub, agent_middleware=[Middleware(NumberingMiddleware, seen=seen)])
    calls = record_callers(monkeypatch, hub, "echo")

    async def check(method: str, request: Any) -> Any:
        """Run one request; its engine call must carry the caller made for it, made once."""
        before = len(seen)
        response = await request
        assert len(seen) == before + 1, f"{method}: identify ran {len(seen) - before} times"
        assert calls[-1] == (method, seen[-1]), (method, calls[-1], seen[-1])
        return response

    # JSON-RPC 1.0
    r = await check(
        "send", c.post("/a2a/echo", json=rpc_body("SendMessage", {"message": message("a")}))
    )
    task_id = r.json()["result"]["task"]["id"]
    await check("get_task", c.post("/a2a/echo", json=rpc_body("GetTask", {"id": task_id})))
    await check("list_tasks", c.post("/a2a/echo", json=rpc_body("ListTasks", {})))
    await check("cancel_task", c.post("/a2a/echo", json=rpc_body("CancelTask", {"id": task_id})))
    await check(
        "subscribe",
        c.post(
            "/a2a/echo",
            json=rpc_body("SubscribeToTask", {"id": task_id}),
            headers={"Last-Event-ID": "0"},
        ),
    )
    await check(
        "send_stream",
        c.post("/a2a/echo", json=rpc_body("SendStreamingMessage", {"message": message("b")})),
    )
    # JSON-RPC 0.3 and 0.1
    v03_message = {
        "kind": "message",
        "messageId": "m3",
        "role": "user",
        "parts": [{"kind": "text", "text": "c"}],
    }
    await check(
        "send", c.post("/a2a/echo", json=rpc_body("message/send", {"message": v03_message}))
    )
    await check("get_task", c.post("/a2a/echo", json=rpc_body("tasks/get", {"id": task_id})))
    await check("cancel_task", c.post("/a2a/echo", json=rpc_body("tasks/cancel", {"id": task_id})))
    v01_params = {
        "id": "t-01",
        "message": {"role": "user", "parts": [{"type": "text", "text": "d"}]},
    }
    await check("send", c.post("/a2a/echo", json=rpc_body("tasks/send", v01_params)))
    await check(
        "send_stream",
        c.post("/a2a/echo", json=rpc_body("tasks/sendSubscribe", {**v01_params, "id": "t-02"})),
    )
    # REST, at the agent's URL and at the root alias (no default agent here: two agents)
    await check("send", c.post("/a2a/echo/message:send", json={"message": message("e")}))
    await check("send_stream", c.post("/a2a/echo/message:stream", json={"message": message("f")}))
    await check("get_task", c.get(f"/a2a/echo/tasks/{task_id}"))
    await check("list_tasks", c.get("/a2a/echo/tasks"))
    await check("cancel_task", c.post(f"/a2a/echo/tasks/{task_id}:cancel"))
    await check("subscribe", c.get(f"/a2a/echo/tasks/{task_id}:subscribe?lastEventId=0"))
    assert {name for name, _ in calls} == set(ENGINE_METHODS)
    # tasks/resubscribe looks the task up, then follows it: both with the request's caller
    before = len(seen)
    await c.post(
        "/a2a/echo",
        json=rpc_body("tasks/resubscribe", {"id": task_id, "metadata": {"lastEventId": 0}}),
    )
    assert len(seen) == before + 1
    assert calls[-2:] == [("get_task", seen[-1]), ("subscribe", seen[-1])]
    # the index and the health check are not agent routes: no caller is made for them
    before = len(seen)
    assert (await c.get("/")).status_code == 200
    assert (await c.get("/healthz")).status_code == 200
    assert len(seen) == before


async def test_the_default_caller_is_anonymous(
    serve: Callable[..., httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = make_hub()
    await hub.start()
    c = serve(hub)
    calls = record_callers(monkeypatch, hub, "echo")
    await c.post("/", json=rpc_body("SendMessage", {"message": message("a")}))
    await c.get("/tasks")
    assert [caller for _, caller in calls] == [ANONYMOUS, ANONYMOUS]


class Unauthenticated(A2AError):
    """What an API-key middleware would raise (no such error in the protocol tree yet)."""

    http_status = 401
    reason = "UNAUTHENTICATED"
    grpc_status = "UNAUTHENTICATED"
    default_message = "Send an API key in x-api-key"


class KeyMiddleware(CallerMiddleware):
    """The authentication hook: a caller from x-api-key, or a refusal."""

    async def identify(self, scope: Scope) -> Caller:
        for name, value in scope["headers"]:
            if name == b"x-api-key" and value == b"good":
                return Caller(principal="alice", key_id="k1", agents=frozenset({"echo"}))
        raise Unauthenticated()


async def test_a_caller_middleware_subclass_can_identify_or_refuse(
    serve: Callable[..., httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = make_hub()
    await hub.start()
    c = serve(hub, agent_middleware=[Middleware(KeyMiddleware)])
    calls = record_callers(monkeypatch, hub, "echo")
    send = rpc_body("SendMessage", {"message": message("a")}, req_id=5)
    for path in ("/a2a/echo", "/a2a/echo/", "/"):
        r = await c.post(path, json=send)
        assert r.status_code == 401
        body = r.json()
        # the refusal answers with the request's id (issue 30 item 9; it was null)
        assert body["id"] == 5 and body["error"]["message"] == "Send an API key in x-api-key"
        assert body["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
    for path in ("/a2a/echo/tasks", "/tasks", "/a2a/echo/.well-known/agent-card.json"):
        r = await c.get(path)
        assert r.status_code == 401
        assert r.json()["error"]["status"] == "UNAUTHENTICATED"
    assert calls == []
    assert (await c.get("/healthz")).status_code == 200  # not an agent route
    r = await c.post("/a2a/echo", json=send, headers={"x-api-key": "good"})
    assert r.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert calls == [("send", Caller(principal="alice", key_id="k1", agents=frozenset({"echo"})))]


# --- the live registry -----------------------------------------------------------------


class GateExecutor(AgentExecutor):
    """Starts working, then waits for ``gate`` before completing; notes cancel() calls."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.gate = asyncio.Event()
        self.cancels = 0

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        await updater.working("waiting at the gate")
        self.started.set()
        await self.gate.wait()
        await updater.complete("through the gate")

    async def cancel(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        self.cancels += 1


async def card_status(c: httpx.AsyncClient, agent_id: str) -> int:
    return (await c.get(f"/a2a/{agent_id}/.well-known/agent-card.json")).status_code


async def send(c: httpx.AsyncClient, path: str, text: str) -> dict[str, Any]:
    r = await c.post(path, json=rpc_body("SendMessage", {"message": message(text)}), headers=V10)
    assert r.status_code in (200, 404), r.text
    data: dict[str, Any] = r.json()
    return data


async def test_agents_added_and_removed_while_serving(
    serve: Callable[..., httpx.AsyncClient],
) -> None:
    hub = make_hub()
    await hub.start()
    c = serve(hub)
    assert await card_status(c, "late") == 404
    agent = hub.add(AgentSpec(id="late", kind="echo", name="Late"))
    assert hub.cluster.engines["late"] is agent.engine
    assert await card_status(c, "late") == 200
    card = (await c.get("/a2a/late/.well-known/agent-card.json")).json()
    assert card["name"] == "Late" and card["url"] == "http://hub.test/a2a/late"
    done = await send(c, "/a2a/late", "hi")
    assert done["result"]["task"]["artifacts"][0]["parts"] == [{"text": "echo: hi"}]
    assert (await c.get("/healthz")).json()["agents"] == ["echo", "late"]
    assert [a["id"] for a in (await c.get("/")).json()["agents"]] == ["echo", "late"]

    removed = await hub.remove("late", cancel_running=True)
    assert removed is agent
    assert "late" not in hub.cluster.engines
    assert await card_status(c, "late") == 404
    gone = await send(c, "/a2a/late", "again")
    assert gone["error"]["code"] == -32600 and "No agent 'late'" in gone["error"]["message"]
    r = await c.get(f"/a2a/late/tasks/{done['result']['task']['id']}")
    assert r.status_code == 404 and r.json()["error"]["details"][0]["reason"] == "AGENT_NOT_FOUND"
    assert (await c.get("/healthz")).json()["agents"] == ["echo"]
    with pytest.raises(A2AError, match="No agent 'late'"):
        await hub.remove("late")


async def test_adding_an_agent_with_the_same_id_replaces_it(
    serve: Callable[..., httpx.AsyncClient],
) -> None:
    hub = make_hub()
    await hub.start()
    c = serve(hub)
    first = await send(c, "/a2a/echo", "one")
    hub.add(AgentSpec(id="echo", kind="echo", options={"reply": "message"}))
    second = await send(c, "/a2a/echo", "two")
    assert "task" in first["result"]
    assert second["result"]["message"]["parts"] == [{"text": "echo: two"}]


async def test_the_default_agent_follows_the_registry(
    serve: Callable[..., httpx.AsyncClient],
) -> None:
    hub = make_hub()  # one agent: it is the default
    await hub.start()
    c = serve(hub)
    assert "result" in await send(c, "/", "root")
    hub.add(AgentSpec(id="other"))
    assert hub.default_agent_id is None
    refused = await send(c, "/", "root")
    assert "No default agent" in refused["error"]["message"]
    assert (await c.get("/")).json()["defaultAgent"] is None
    assert (await c.get("/.well-known/agent-card.json")).status_code == 404
    await hub.remove("other")
    assert hub.default_agent_id == "echo"
    assert "result" in await send(c, "/", "root")
    assert (await c.get("/")).json()["defaultAgent"] == "echo"

    chosen = make_hub({"a": "echo", "b": "echo"}, default_agent="a")
    await chosen.start()
    c = serve(chosen)
    assert (await c.get("/.well-known/agent-card.json")).json()["url"] == "http://hub.test"
    await chosen.remove("a")
    refused = await send(c, "/", "root")
    assert "default agent 'a' is not hosted" in refused["error"]["message"]
    assert (await c.get("/")).json()["defaultAgent"] is None
    chosen.add(AgentSpec(id="a", kind="echo", options={"reply": "message"}))
    assert (await send(c, "/", "back"))["result"]["message"]["parts"] == [{"text": "echo: back"}]


@pytest.mark.parametrize("cancel_running", [False, True])
async def test_a_task_running_on_a_removed_agent(
    serve: Callable[..., httpx.AsyncClient], cancel_running: bool
) -> None:
    gate = GateExecutor()
    hub = make_hub({"echo": "echo", "gate": gate})
    await hub.start()
    c = serve(hub)
    engine = hub.agents["gate"].engine
    blocking = asyncio.ensure_future(send(c, "/a2a/gate", "wait"))
    await gate.started.wait()
    background = await c.post(
        "/a2a/gate",
        json=rpc_body(
            "SendMessage", {"message": message("bg"), "configuration": {"returnImmediately": True}}
        ),
    )
    bg_task = background.json()["result"]["task"]

    removal = asyncio.ensure_future(hub.remove("gate", cancel_running=cancel_running))
    await asyncio.sleep(0)  # the removal is immediate for new requests
    assert "gate" not in hub.agents
    assert await card_status(c, "gate") == 404
    assert "No agent 'gate'" in (await send(c, "/a2a/gate", "late"))["error"]["message"]

    if cancel_running:
        await removal
        assert gate.cancels == 2
        assert "gate" not in hub.cluster.engines
        expected = "TASK_STATE_CANCELED"
    else:
        await removal
        for _ in range(50):  # give a wrongly eager close every chance to run
            await asyncio.sleep(0)
        assert hub.cluster.engines["gate"] is engine  # still running its tasks
        assert engine.live(bg_task["id"]) is not None and not blocking.done()
        gate.gate.set()
        expected = "TASK_STATE_COMPLETED"
    answer = await blocking
    assert answer["result"]["task"]["status"]["state"] == expected
    for _ in range(500):  # the engine closes once its last run has ended
        if "gate" not in hub.cluster.engines:
            break
        await asyncio.sleep(0.01)
    assert "gate" not in hub.cluster.engines
    stored = await hub.store.get_task("gate", bg_task["id"])
    assert stored is not None and stored.status.state.value == expected
    assert "result" in await send(c, "/a2a/echo", "others unaffected")


async def test_executors_for_undeclared_agents_are_refused() -> None:
    settings = Settings.from_flat(agents=[AgentSpec(id="echo")], store="memory://")
    with pytest.raises(ValueError, match=r"'ghost', 'spook'.*agents: echo"):
        Hub(
            settings,
            store=MemoryStore(),
            executors={"spook": GateExecutor(), "ghost": GateExecutor()},
        )


def test_agents_can_be_added_before_the_hub_starts() -> None:
    hub = Hub(Settings.from_flat(store="memory://"), store=MemoryStore())
    assert hub.default_agent_id is None
    hub.add(AgentSpec(id="a"))
    hub.add(AgentSpec(id="a", name="again"))  # replaced, no event loop needed
    assert hub.agents["a"].spec.name == "again" and hub.default_agent_id == "a"
    with pytest.raises(ValueError, match="no '/'"):
        hub.add(AgentSpec(id="a/b"))


# --- the one catch-all -----------------------------------------------------------------


def boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("the secret database password is hunter2")


def internal_errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR]


def assert_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    records = internal_errors(caplog)
    assert len(records) == 1, [r.getMessage() for r in records]
    assert records[0].exc_info is not None and "internal error" in records[0].getMessage()
    caplog.clear()


async def test_an_unexpected_exception_is_an_internal_error_in_every_binding(
    serve: Callable[..., httpx.AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    hub = make_hub()
    await hub.start()
    c = serve(hub)
    engine = hub.agents["echo"].engine
    monkeypatch.setattr(engine, "get_task", boom)
    caplog.set_level(logging.DEBUG)

    for family, method in (("1.0", "GetTask"), ("0.3", "tasks/get")):
        r = await c.post("/a2a/echo", json=rpc_body(method, {"id": "t"}, req_id=9))
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        body = r.json()
        assert body["id"] == 9 and body["error"]["code"] == -32603, family
        assert body["error"]["message"] == "Internal error" and "hunter2" not in r.text
        assert_one_log_line(caplog)

    r = await c.get("/a2a/echo/tasks/t")
    assert r.status_code == 500 and r.headers["content-type"] == "application/json"
    error = r.json()["error"]
    assert error["status"] == "INTERNAL" and error["details"][0]["reason"] == "INTERNAL_ERROR"
    assert "hunter2" not in r.text
    assert_one_log_line(caplog)


class Breaking:
    """A task stream that fails after its first event (a bug below the transport)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.task_id = real.task_id
        self.calls = 0

    @property
    def ready(self) -> bool:
        return bool(self.real.ready)

    async def next(self, idle: float | None = None) -> Any:
        self.calls += 1
        if self.calls > 1:
            boom()
        return await self.real.next(idle)

    def close(self) -> None:
        self.real.close()


async def test_an_unexpected_exception_mid_stream_is_an_error_event(
    serve: Callable[..., httpx.AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    hub = make_hub()
    await hub.start()
    c = serve(hub)
    engine = hub.agents["echo"].engine
    original = engine.send_stream

    async def breaking_stream(*args: Any, **kwargs: Any) -> Any:
        return Breaking(await original(*args, **kwargs))

    monkeypatch.setattr(engine, "send_stream", breaking_stream)
    caplog.set_level(logging.DEBUG)

    async def stream(path: str, body: Any) -> list[Any]:
        async with c.stream("POST", path, json=body, headers=V10) as r:
            assert r.status_code == 200
            return [f async for f in frames(r) if not f.comment]

    got = await stream("/a2a/echo", rpc_body("SendStreamingMessage", {"message": message("x")}, 4))
    assert [f.event for f in got] == [None, "error"]
    assert got[1].data["id"] == 4 and got[1].data["error"]["code"] == -32603
    assert got[1].data["error"]["message"] == "Internal error"
    assert_one_log_line(caplog)

    got = await stream("/a2a/echo/message:stream", {"message": message("y")})
    assert [f.event for f in got] == [None, "error"]
    assert got[1].data["error"]["status"] == "INTERNAL"
    assert "hunter2" not in json.dumps(got[1].data)
    assert_one_log_line(caplog)


class BadCardExecutor(AgentExecutor):
    """Skills that are not skills: building the card fails."""

    skills = [{"id": 1, "name": None}]

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.reply("hi")


async def test_an_unexpected_exception_building_a_card_is_an_internal_error(
    serve: Callable[..., httpx.AsyncClient], caplog: pytest.LogCaptureFixture
) -> None:
    hub = make_hub({"bad": BadCardExecutor()})
    await hub.start()
    c = serve(hub)
    caplog.set_level(logging.DEBUG)
    for path in ("/a2a/bad/.well-known/agent-card.json", "/.well-known/agent.json"):
        r = await c.get(path)
        assert r.status_code == 500 and r.json()["error"]["status"] == "INTERNAL"
        assert_one_log_line(caplog)


# --- routing ---------------------------------------------------------------------------


async def test_routes_slashes_404_and_405(serve: Callable[..., httpx.AsyncClient]) -> None:
    hub = make_hub()
    await hub.start()
    c = serve(hub)
    send_body = rpc_body("SendMessage", {"message": message("s")})
    for path in ("/a2a/echo", "/a2a/echo/", "/"):
        r = await c.post(path, json=send_body)
        assert r.status_code == 200 and "task" in r.json()["result"], path
    r = await c.post("/a2a/nope", json=send_body)
    assert r.status_code == 404 and "No agent 'nope'" in r.json()["error"]["message"]
    for method, path, allowed in (
        ("GET", "/a2a/echo", "POST"),
        ("PUT", "/a2a/echo/message:send", "POST"),
        ("DELETE", "/a2a/echo/tasks", "GET, HEAD"),
        ("DELETE", "/tasks", "GET, HEAD"),
        ("PUT", "/", "GET, HEAD"),
        ("POST", "/healthz", "GET, HEAD"),
    ):
        r = await c.request(method, path)
        assert r.status_code == 405, (method, path)
        assert sorted(r.headers["allow"].split(", ")) == sorted(allowed.split(", ")), path
    for path in ("/nothing", "/a2a/echo/nothing", "/a2a", "/a2a/"):
        assert (await c.get(path)).status_code == 404, path
    for path, target in (
        ("/healthz/", "/healthz"),
        ("/tasks/", "/tasks"),
        ("/a2a/echo/tasks/", "/a2a/echo/tasks"),
        ("/a2a/echo/.well-known/agent-card.json/", "/a2a/echo/.well-known/agent-card.json"),
    ):
        r = await c.get(path)
        assert r.status_code == 307 and r.headers["location"] == f"http://hub.test{target}", path
