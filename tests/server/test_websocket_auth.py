"""API keys on the WebSocket channel: in a header, the query, a subprotocol or the first frame.

A real uvicorn server with a SQLite registry; the ``websockets`` package as the client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.stores.base import TaskQuery
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import SlowExecutor
from tests.support.hub import LiveServer
from tests.support.ws import connect, recv, send, terminal, until, ws_url


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[LiveServer]:
    specs = [
        AgentSpec(id="locked", kind="echo", auth="api-key"),
        AgentSpec(id="other", kind="echo", auth="api-key"),
        AgentSpec(id="slow", kind="python", executor="x:y", auth="api-key"),
        AgentSpec(id="open", kind="echo"),
    ]
    settings = Settings.from_flat(
        agents=specs, store="memory://", registry=f"sqlite:///{tmp_path}/registry.db"
    )
    hub = Hub(settings, store=MemoryStore(), executors={"slow": SlowExecutor()})
    async with LiveServer(hub) as server:
        yield server


async def new_key(server: LiveServer, **options: Any) -> str:
    assert server.hub.registry is not None
    key, _ = await server.hub.registry.create_key(**options)
    return key


async def echo_round(ws: Any, text: str) -> list[dict[str, Any]]:
    await send(ws, action="send_message", message_id=f"m-{text}", text=text)
    return await until(ws, terminal)


async def closed_with(ws: Any) -> int:
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await recv(ws)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code


async def test_open_agent_needs_no_key(served: LiveServer) -> None:
    async with connect(ws_url(served, "open")) as ws:
        events = await echo_round(ws, "hi")
    assert events[-1]["status"] == "completed"


async def test_key_in_the_first_frame(served: LiveServer) -> None:
    key = await new_key(served, agents=["locked"], name="alice")
    async with connect(ws_url(served, "locked")) as ws:
        await send(ws, action="authenticate", api_key=key)
        ok = await recv(ws)
        assert ok["event"] == "authenticated" and ok["principal"] == "alice"
        events = await echo_round(ws, "hi")
        assert events[-1]["status"] == "completed"
        # only as the first frame
        await send(ws, action="authenticate", api_key=key)
        assert (await recv(ws))["code"] == "invalid_request"
        await send(ws, action="ping")
        assert (await recv(ws))["event"] == "pong"


async def test_bad_or_missing_key_in_the_first_frame(served: LiveServer) -> None:
    other = await new_key(served, agents=["other"])
    for frame in (
        {"action": "authenticate", "api_key": "a2ah_nope"},
        {"action": "send_message", "message_id": "m", "text": "no key"},
        {"action": "ping"},
    ):
        async with connect(ws_url(served, "locked")) as ws:
            await ws.send(json.dumps(frame))
            err = await recv(ws)
            assert err["event"] == "error" and err["code"] == "unauthenticated", err
            assert err["details"]["error"] == "UNAUTHENTICATED"
            assert await closed_with(ws) == 1008
    async with connect(ws_url(served, "locked")) as ws:  # a key of another agent: 403
        await send(ws, action="authenticate", api_key=other)
        err = await recv(ws)
        assert err["code"] == "permission_denied"
        assert err["details"]["error"] == "PERMISSION_DENIED"
        assert await closed_with(ws) == 1008
    async with connect(ws_url(served, "locked")) as ws:
        await ws.send("{not json")
        assert (await recv(ws))["code"] == "unauthenticated"
    page = await served.hub.store.list_tasks("locked", TaskQuery())
    assert page.tasks == []


async def test_key_in_header_query_or_subprotocol(served: LiveServer) -> None:
    key = await new_key(served, agents=["locked"])
    url = ws_url(served, "locked")
    for how in (
        {"additional_headers": {"X-API-Key": key}},
        {"additional_headers": {"Authorization": f"Bearer {key}"}},
        {"subprotocols": ["a2a-hub", f"a2a-key.{key}"]},
    ):
        async with connect(url, **how) as ws:
            events = await echo_round(ws, "hi")
            assert events[-1]["status"] == "completed", how
    async with connect(f"{url}?api_key={key}") as ws:
        assert (await echo_round(ws, "q"))[-1]["status"] == "completed"


async def test_bad_key_on_the_upgrade_is_401_and_another_agents_key_403(
    served: LiveServer,
) -> None:
    other = await new_key(served, agents=["other"])
    url = ws_url(served, "locked")
    for how, status in (
        ({"additional_headers": {"X-API-Key": "a2ah_nope"}}, 401),
        ({"subprotocols": ["a2a-hub", "a2a-key.a2ah_nope"]}, 401),
        ({"additional_headers": {"X-API-Key": other}}, 403),
    ):
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with connect(url, **how):
                pass
        response = refused.value.response
        assert response.status_code == status, how
        body = json.loads(response.body)
        assert body["error"]["status"] == ("UNAUTHENTICATED" if status == 401 else
                                           "PERMISSION_DENIED")  # fmt: skip
        if status == 401:
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
    # a bad key offered to an open agent is still refused, as over HTTP
    with pytest.raises(websockets.InvalidStatus):
        async with connect(ws_url(served, "open"), additional_headers={"X-API-Key": "bad"}):
            pass


async def test_callers_see_only_their_own_tasks(served: LiveServer) -> None:
    alice = await new_key(served, agents=["slow"], name="alice")
    bob = await new_key(served, agents=["slow"], name="bob")
    url = ws_url(served, "slow")
    async with connect(url) as ws:
        await send(ws, action="authenticate", api_key=alice)
        await recv(ws)
        await send(ws, action="send_message", message_id="a1", text="work")
        events = await until(ws, lambda e: e.get("message") == "thinking")
        task_id = events[-1]["task_id"]
        async with connect(url, additional_headers={"X-API-Key": bob}) as other:
            await send(other, action="cancel_task", global_task_id=task_id)
            assert (await recv(other))["code"] == "task_not_found"
            await send(other, action="sync_state", last_seq={task_id: 0})
            assert (await recv(other))["code"] == "task_not_found"
            await send(other, action="sync_state", last_message_id="a1")
            assert (await recv(other))["code"] == "invalid_params"
        await send(ws, action="cancel_task", global_task_id=task_id)
        events = await until(ws, terminal)
        assert events[-1]["status"] == "canceled"


async def _revoke(server: LiveServer, key: str) -> None:
    registry = server.hub.registry
    assert registry is not None
    info = await registry.lookup_key(key)
    assert info is not None
    await registry.revoke_key(info.id)
    if server.hub.authenticator is not None:  # as the admin API does after a revocation
        server.hub.authenticator.forget()


@pytest.mark.parametrize("how", ["first-frame", "header", "query", "subprotocol"])
async def test_a_revoked_key_closes_its_open_socket(served: LiveServer, how: str) -> None:
    """Issue 30 item 13: the key is checked again before every action; once revoked the
    socket gets the error and closes with 1008, whichever way it carried the key."""
    key = await new_key(served, agents=["locked"], name="bob")
    url, options = ws_url(served, "locked"), {}
    if how == "header":
        options = {"additional_headers": {"X-API-Key": key}}
    elif how == "query":
        url = f"{url}?api_key={key}"
    elif how == "subprotocol":
        options = {"subprotocols": ["a2a-hub", f"a2a-key.{key}"]}
    async with connect(url, **options) as ws:
        if how == "first-frame":
            await send(ws, action="authenticate", api_key=key)
            assert (await recv(ws))["event"] == "authenticated"
        assert (await echo_round(ws, "before"))[-1]["status"] == "completed"
        await _revoke(served, key)
        await send(ws, action="send_message", message_id="m-after", text="after")
        err = await recv(ws)
        assert err["event"] == "error" and err["code"] == "unauthenticated", err
        assert "revoked" in err["message"]
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await recv(ws)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
        assert "revoked" in closed.value.rcvd.reason
    page = await served.hub.store.list_tasks("locked", TaskQuery())
    assert [t.history[0].parts[0].text for t in page.tasks if t.history] == ["before"]


async def test_an_expiring_key_closes_its_open_socket(served: LiveServer) -> None:
    """A key that expires while its socket is open stops it as a revoked one does."""
    import time

    registry = served.hub.registry
    assert registry is not None
    key, info = await registry.create_key(agents=["locked"], expires_in=1.0)
    async with connect(ws_url(served, "locked"), additional_headers={"X-API-Key": key}) as ws:
        assert (await echo_round(ws, "early"))[-1]["status"] == "completed"
        assert info.expires_at is not None
        hang_guard = time.monotonic() + 60
        while True:  # pings until the key has expired (and its 1 s cache entry too)
            await send(ws, action="ping")
            event = await recv(ws)
            if event["event"] != "pong" or time.monotonic() > hang_guard:
                break
            await asyncio.sleep(0.05)  # a polling interval, not a wait for something
        assert time.time() >= info.expires_at
        assert event["event"] == "error" and "expired" in event["message"], event
        assert await closed_with(ws) == 1008


async def test_a_revoked_key_closes_its_json_rpc_socket(served: LiveServer) -> None:
    """The same on the JSON-RPC subprotocol (``a2a.jsonrpc.v1``)."""
    key = await new_key(served, agents=["locked"])
    frame = {"jsonrpc": "2.0", "id": "g", "method": "ListTasks", "params": {}}
    async with connect(
        ws_url(served, "locked"),
        subprotocols=["a2a.jsonrpc.v1"],
        additional_headers={"X-API-Key": key, "A2A-Version": "1.0"},
    ) as ws:
        await ws.send(json.dumps(frame))
        assert "result" in await recv(ws)
        await _revoke(served, key)
        await ws.send(json.dumps(frame))
        answer = await recv(ws)
        assert "revoked" in answer["error"]["message"], answer
        assert await closed_with(ws) == 1008
