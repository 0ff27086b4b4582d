"""The app's front (issue 29): the routes it serves itself answer exactly as Starlette's stack.

A request with a repeated header name, or an app mounted under a prefix, goes through
Starlette's router and the agent mount; the same request otherwise is served by the front
directly.  Both must give the same status, headers and body, the same request metrics and
the same extensions echo.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from a2a_hub import AgentSpec, Hub, Settings, create_app, metrics
from a2a_hub.protocol.types import AgentExtension
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import ExtensionAware

SHOUT = "https://example.com/ext/shout/v1"


def _send(text: str, n: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": n,
        "method": "SendMessage",
        "params": {
            "message": {"messageId": f"m{n}", "role": "ROLE_USER", "parts": [{"text": text}]}
        },
    }


@pytest.fixture
async def hub() -> AsyncIterator[Hub]:
    spec = AgentSpec(
        id="ext", kind="python", executor="x:y", extensions=[AgentExtension(uri=SHOUT)]
    )
    settings = Settings.from_flat(agents=[spec], store="memory://")
    hub = Hub(settings, store=MemoryStore(), executors={"ext": ExtensionAware()})
    await hub.start()
    yield hub
    await hub.close()


def _shape(r: httpx.Response) -> tuple[Any, ...]:
    """What must agree: status, header names in order, extension echo, body without ids."""
    body = r.json()
    result = body.get("result", body)
    found = result.get("task") or result.get("error") or result
    state = found.get("status", {}).get("state") if isinstance(found, dict) else None
    return (
        r.status_code,
        [name for name, _ in r.headers.raw],
        r.headers.get("a2a-extensions"),
        r.headers.get("content-type"),
        state,
        body.get("error"),
    )


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/a2a/ext", "rpc"),
        ("/a2a/ext/", "rpc"),
        ("/", "rpc"),
        ("/a2a/ext/message:send", "rest"),
        ("/message:send", "rest"),
        ("/a2a/nobody", "rpc"),
    ],
)
async def test_direct_and_routed_answers_agree(hub: Hub, path: str, body: str) -> None:
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        answers = []
        for n, extra in enumerate([[], [("x-twice", "1"), ("x-twice", "2")]]):
            payload = _send("hi", n)
            sent = payload if body == "rpc" else payload["params"]
            headers = [("content-type", "application/json"), ("a2a-extensions", SHOUT), *extra]
            r = await c.post(path, content=json.dumps(sent), headers=headers)
            answers.append(r)
        direct, routed = answers
        assert _shape(direct) == _shape(routed), (direct.text, routed.text)
        if path != "/a2a/nobody":
            assert direct.headers["a2a-extensions"] == SHOUT
            assert "active: " + SHOUT in direct.text


async def test_an_app_mounted_under_a_prefix_serves_its_agents(hub: Hub) -> None:
    outer = Starlette(routes=[Mount("/hub", app=create_app(hub))])
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        r = await c.post("/hub/a2a/ext", json=_send("hi", 1))
        assert r.status_code == 200 and "active: none" in r.text, r.text
        r = await c.post("/hub/a2a/ext/message:send", json=_send("hi", 2)["params"])
        assert r.status_code == 200 and "active: none" in r.text, r.text


async def test_both_paths_record_the_same_request_metric(hub: Hub) -> None:
    if not metrics.enabled():
        pytest.skip("metrics are off in this process")
    transport = httpx.ASGITransport(app=create_app(hub))

    def count() -> float:
        return sum(
            sample.value
            for family in metrics.REGISTRY.collect()
            if family.name == "a2a_http_request_duration_seconds"
            for sample in family.samples
            if sample.name.endswith("_count")
            and sample.labels.get("route") == "/a2a/{agent_id}"
            and sample.labels.get("binding") == "jsonrpc"
            and sample.labels.get("version") == "1.0"
            and sample.labels.get("status") == "200"
        )

    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        before = count()
        await c.post("/a2a/ext", json=_send("hi", 1))
        assert count() == before + 1
        await c.post("/a2a/ext", json=_send("hi", 2), headers=[("x-twice", "1"), ("x-twice", "2")])
        assert count() == before + 2


async def test_a_failure_in_the_caller_middleware_is_a_500(hub: Hub) -> None:
    from a2a_hub.server.auth import ApiKeyMiddleware

    class Broken(ApiKeyMiddleware):
        async def identify(self, scope: Any) -> Any:
            raise RuntimeError("the identity provider is down")

    from starlette.middleware import Middleware

    app = create_app(hub, agent_middleware=[Middleware(Broken)])
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        for extra in ([], [("x-twice", "1"), ("x-twice", "2")]):
            r = await c.post("/a2a/ext", json=_send("hi", 1), headers=extra)
            assert r.status_code == 500 and r.text == "Internal Server Error"


async def test_with_cors_every_answer_says_it_varies_by_origin() -> None:
    settings = Settings.from_flat(
        agents=[AgentSpec(id="echo", kind="echo")],
        store="memory://",
        cors_origins=["https://app.example.com"],
    )
    hub = Hub(settings, store=MemoryStore())
    await hub.start()
    transport = httpx.ASGITransport(app=create_app(hub))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            r = await c.post("/a2a/echo", json=_send("hi", 1))
            assert r.status_code == 200 and r.headers["vary"] == "Origin"
            origin = {"origin": "https://app.example.com"}
            r = await c.post("/a2a/echo", json=_send("hi", 2), headers=origin)
            assert r.headers["access-control-allow-origin"] == "https://app.example.com"
    finally:
        await hub.close()
