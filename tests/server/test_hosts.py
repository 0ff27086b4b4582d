"""Cross-site and host safety (issue 18 item 7): JSON-only JSON-RPC, trusted Host headers, CORS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2a_hub import AgentSpec, Hub, Settings, create_app
from a2a_hub.server.hosts import host_allowed, trusted_hosts
from a2a_hub.stores.memory import MemoryStore

SEND = (
    b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
    b'{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}'
)


async def _client(**settings: Any) -> AsyncIterator[tuple[Hub, httpx.AsyncClient]]:
    config = Settings.from_flat(agents=[AgentSpec(id="echo", kind="echo")], **settings)
    hub = Hub(config, store=MemoryStore())
    await hub.start()
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost:8000") as c:
        yield hub, c
    await hub.close()


@pytest.fixture
async def plain() -> AsyncIterator[tuple[Hub, httpx.AsyncClient]]:
    async for pair in _client(public_url="https://hub.example.com"):
        yield pair


async def _tasks(hub: Hub) -> int:
    from a2a_hub.protocol.types import ListTasksRequest

    return (await hub.agents["echo"].engine.list_tasks(ListTasksRequest())).total_size or 0


@pytest.mark.parametrize(
    "ctype", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
async def test_json_rpc_refuses_what_a_page_may_send_without_preflight(
    plain: Any, ctype: str | None
) -> None:
    hub, c = plain
    headers = {} if ctype is None else {"content-type": ctype}
    r = await c.post("/a2a/echo", content=SEND, headers=headers)
    assert r.status_code == 415, r.text
    assert r.json()["error"]["code"] == -32005 and r.json()["id"] == 1
    assert await _tasks(hub) == 0  # nothing ran


@pytest.mark.parametrize(
    "ctype",
    [
        "application/json",
        "application/a2a+json",
        "application/vnd.a2a+json",
        "Application/JSON; charset=utf-8",
    ],
)
async def test_json_rpc_serves_json_types(plain: Any, ctype: str) -> None:
    _, c = plain
    r = await c.post("/a2a/echo", content=SEND, headers={"content-type": ctype})
    assert r.status_code == 200 and "task" in r.json()["result"], r.text
    rest = SEND.split(b'"params":', 1)[1][:-1]
    r = await c.post("/a2a/echo/message:send", content=rest, headers={"content-type": ctype})
    assert r.status_code == 200, r.text


async def test_rest_refuses_a_body_that_is_not_json(plain: Any) -> None:
    hub, c = plain
    rest = SEND.split(b'"params":', 1)[1][:-1]
    for ctype in ("text/plain", "application/x-www-form-urlencoded"):
        r = await c.post("/a2a/echo/message:send", content=rest, headers={"content-type": ctype})
        assert r.status_code == 415 and r.json()["error"]["code"] == 415
    assert await _tasks(hub) == 0


async def test_untrusted_host_headers_are_refused_with_a_json_400(plain: Any) -> None:
    hub, c = plain
    for host in ("evil.example", "localhost.evil.example", "hub.example.com.evil", "10.1.2.3"):
        for path in ("/a2a/echo/.well-known/agent-card.json", "/", "/healthz"):
            r = await c.get(path, headers={"host": host})
            assert r.status_code == 400, (host, path)
            err = r.json()["error"]
            assert "trusted_hosts" in err["message"] and host in err["message"]
        r = await c.post(
            "/a2a/echo", content=SEND, headers={"host": host, "content-type": "application/json"}
        )
        assert r.status_code == 400
    assert await _tasks(hub) == 0
    # the default names: localhost (any port), the bind address, the public URL's host
    for host in ("localhost", "localhost:9", "127.0.0.1:8000", "[::1]:8000", "hub.example.com"):
        r = await c.get("/a2a/echo/.well-known/agent-card.json", headers={"host": host})
        assert r.status_code == 200, host
        assert "evil" not in r.text


async def test_trusted_hosts_setting_replaces_the_default() -> None:
    async for _, c in _client(trusted_hosts=["*.corp.example", "hub.test"]):
        assert (await c.get("/healthz", headers={"host": "a.corp.example"})).status_code == 200
        assert (await c.get("/healthz", headers={"host": "hub.test:80"})).status_code == 200
        assert (await c.get("/healthz", headers={"host": "localhost"})).status_code == 400
        assert (await c.get("/healthz", headers={"host": "corp.example.evil"})).status_code == 400
    async for _, c in _client(trusted_hosts=["*"]):
        assert (await c.get("/healthz", headers={"host": "anything"})).status_code == 200


def test_default_trusted_hosts() -> None:
    server = Settings.from_flat(host="10.0.0.5", public_url="https://a2a.example.org/x").server
    hosts = trusted_hosts(server)
    assert {"localhost", "127.0.0.1", "::1", "10.0.0.5", "a2a.example.org"} <= set(hosts)
    assert host_allowed("A2A.Example.org:443", hosts)
    assert host_allowed("api.localhost", hosts)
    assert not host_allowed("10.0.0.6", hosts) and not host_allowed("example.org", hosts)


PREFLIGHT = {
    "origin": "https://app.example",
    "access-control-request-method": "POST",
    "access-control-request-headers": "content-type, x-api-key, a2a-version",
}


async def test_cors_is_off_by_default(plain: Any) -> None:
    _, c = plain
    r = await c.options("/a2a/echo", headers=PREFLIGHT)
    assert "access-control-allow-origin" not in r.headers
    r = await c.get("/healthz", headers={"origin": "https://app.example"})
    assert "access-control-allow-origin" not in r.headers


async def test_cors_allow_list_answers_preflights() -> None:
    async for hub, c in _client(cors_origins=["https://app.example"]):
        r = await c.options("/a2a/echo", headers=PREFLIGHT)
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        allowed = r.headers["access-control-allow-headers"].lower()
        assert {"content-type", "x-api-key", "a2a-version"} <= {
            h.strip() for h in allowed.split(",")
        }
        assert "POST" in r.headers["access-control-allow-methods"]
        r = await c.post(
            "/a2a/echo",
            content=SEND,
            headers={"origin": "https://app.example", "content-type": "application/json"},
        )
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        # another origin: its preflight is refused, its answers carry no CORS header
        r = await c.options("/a2a/echo", headers={**PREFLIGHT, "origin": "https://evil.example"})
        assert r.status_code == 400 and "access-control-allow-origin" not in r.headers
        r = await c.get("/healthz", headers={"origin": "https://evil.example"})
        assert "access-control-allow-origin" not in r.headers
        assert await _tasks(hub) == 1


async def test_cross_site_requests_that_change_something_are_refused(plain: Any) -> None:
    """A page on another site can send a bodiless POST (REST ``:cancel``) or a JSON-RPC call
    without a preflight when CORS is off; its ``Origin`` gives it away (403, nothing runs)."""
    hub, c = plain
    evil = {"origin": "https://evil.example", "content-type": "application/json"}
    r = await c.post("/a2a/echo", content=SEND, headers=evil)
    assert r.status_code == 403, r.text
    err = r.json()["error"]  # a JSON-RPC error: the agent's URL is its JSON-RPC endpoint
    assert err["data"][0]["reason"] == "PERMISSION_DENIED" and "cors_origins" in err["message"]
    r = await c.post("/a2a/echo/tasks/t-1:cancel", headers={"origin": "https://evil.example"})
    assert r.status_code == 403 and r.json()["error"]["status"] == "PERMISSION_DENIED"
    for origin in ("null", "http://localhost:8001", "http://localhost.evil.example:8000"):
        r = await c.post("/a2a/echo", content=SEND, headers={**evil, "origin": origin})
        assert r.status_code == 403, origin
    assert await _tasks(hub) == 0
    # reading stays open to any page (cards are public); the bodiless POST without an
    # Origin (every non-browser client) reaches the handler
    r = await c.get("/a2a/echo/.well-known/agent-card.json", headers=evil)
    assert r.status_code == 200
    r = await c.post("/a2a/echo/tasks/t-1:cancel")
    assert r.status_code == 404, r.text
    # the hub's own pages (same origin, or the public URL's) and listed origins pass
    for origin in ("http://localhost:8000", "http://LOCALHOST:8000/", "https://hub.example.com"):
        r = await c.post("/a2a/echo", content=SEND, headers={**evil, "origin": origin})
        assert r.status_code == 200, (origin, r.text)
    assert await _tasks(hub) == 1  # one messageId: the repeats answer with its task


async def test_a_listed_origin_may_call_across_sites() -> None:
    async for hub, c in _client(cors_origins=["https://app.example"]):
        headers = {"origin": "https://app.example", "content-type": "application/json"}
        assert (await c.post("/a2a/echo", content=SEND, headers=headers)).status_code == 200
        headers["origin"] = "https://evil.example"
        assert (await c.post("/a2a/echo", content=SEND, headers=headers)).status_code == 403
        assert await _tasks(hub) == 1


async def test_a_websocket_from_another_site_is_refused() -> None:
    """Browsers apply no CORS to WebSockets: the upgrade's ``Origin`` is checked."""
    import websockets

    from tests.support.hub import LiveServer
    from tests.support.ws import connect, recv, send, ws_url

    config = Settings.from_flat(agents=[AgentSpec(id="echo", kind="echo")])
    async with LiveServer(Hub(config, store=MemoryStore())) as server:
        url = ws_url(server, "echo")
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with connect(url, origin="https://evil.example"):
                pass
        assert refused.value.response.status_code == 403
        async with connect(url, origin=server.url) as ws:  # the chat page's own origin
            await send(ws, action="ping", timestamp="2026-11-23T00:00:00Z")
            assert (await recv(ws))["event"] == "pong"
