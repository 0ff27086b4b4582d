"""What an idle WebSocket or SSE stream keeps on the server (issue 29): no task per
followed task while the task is quiet, and not the request's headers (in the ASGI scope
or, for a WebSocket, in websockets' parser)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import httpx
from websockets.http11 import Request

from a2a_hub import Hub
from a2a_hub.server.connections import HeaderTimeoutProtocol, SlimWebSocketProtocol
from tests.support.agents import Stepper
from tests.support.hub import LiveServer
from tests.support.push_receiver import until as until_true
from tests.support.sse import frames, rpc_body, user_message
from tests.support.ws import connect, recv, send, until, ws_url


def followers_running() -> list[asyncio.Task[Any]]:
    """The tasks sending a followed task's events now."""
    return [
        task
        for task in asyncio.all_tasks()
        if getattr(task.get_coro(), "__qualname__", "") == "Follower._pump"
    ]


async def followers_quiet() -> bool:
    return not followers_running()


def server_sockets(live: LiveServer) -> list[SlimWebSocketProtocol]:
    return [
        conn
        for conn in live.server.server_state.connections
        if isinstance(conn, SlimWebSocketProtocol)
    ]


async def test_a_quiet_followed_task_has_no_task_and_its_events_still_come(
    hub_factory: Callable[..., Hub],
) -> None:
    stepper = Stepper()
    hub = hub_factory({"stepper": stepper})
    async with LiveServer(hub) as live, connect(ws_url(live, "stepper")) as ws:
        await send(ws, action="send_message", message_id="m", text="go")
        await until(ws, lambda e: e.get("status") == "processing")
        await asyncio.wait_for(stepper.started.wait(), 5)
        await until_true(followers_quiet, within=5)  # a quiet follower is no task
        for text in ("one", "two"):
            stepper.step(text)  # each event wakes the follower, which sends it and stops
            event = await until(ws, lambda e: e["event"] == "content_stream")
            assert event[-1]["chunk"].endswith(text)
            await until_true(followers_quiet, within=5)
        stepper.finish()
        events = await until(ws, lambda e: e["event"] == "message_completed")
        assert events[-1]["response"]["content"] == "onetwo"
        await send(ws, action="ping", client_timestamp="t")
        assert (await recv(ws))["event"] in ("message_status_update", "pong")


async def test_an_open_socket_keeps_no_handshake_headers(
    hub_factory: Callable[..., Hub],
) -> None:
    """websockets' parser keeps the handshake request for the socket's life: its headers
    are emptied once the handshake is answered (uvicorn copied them into the scope)."""
    hub = hub_factory({"echo": "echo"})
    async with LiveServer(hub) as live, connect(ws_url(live, "echo")) as ws:
        await send(ws, action="ping", client_timestamp="t")
        assert (await recv(ws))["event"] == "pong"
        (protocol,) = server_sockets(live)
        kept = [
            value
            for value in inspect.getgeneratorlocals(protocol.conn.parser).values()
            if isinstance(value, Request)
        ]
        for request in kept:
            assert list(request.headers.raw_items()) == []
        assert getattr(protocol, "request", None) is None
        assert protocol.scope["headers"] == []  # the event channel read them at the upgrade
        assert not protocol.conn.available_extensions  # negotiated: no factory kept


async def test_a_compressed_socket_still_compresses(hub_factory: Callable[..., Hub]) -> None:
    """The extension offers are dropped after the handshake, not the extension chosen."""
    hub = hub_factory({"echo": "echo"})
    async with LiveServer(hub) as live, connect(ws_url(live, "echo")) as ws:
        assert [type(e).__name__ for e in ws.protocol.extensions] == ["PerMessageDeflate"]
        await send(ws, action="ping", client_timestamp="x" * 5000)
        pong = await recv(ws)
        assert pong["event"] == "pong" and pong["client_timestamp"] == "x" * 5000
        (protocol,) = server_sockets(live)
        assert [type(e).__name__ for e in protocol.conn.extensions] == ["PerMessageDeflate"]


async def test_the_json_rpc_subprotocol_keeps_the_upgrade_headers(
    hub_factory: Callable[..., Hub],
) -> None:
    """Its view of the upgrade request (``GetExtendedAgentCard``'s) reads them later."""
    hub = hub_factory({"echo": "echo"})
    url = ws_url(hub_server := LiveServer(hub), "echo")
    async with hub_server as live, connect(url, subprotocols=["a2a.jsonrpc.v1"]) as ws:
        assert ws.subprotocol == "a2a.jsonrpc.v1"
        await ws.send('{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}')
        await recv(ws)
        (protocol,) = server_sockets(live)
        assert any(name == b"host" for name, _ in protocol.scope["headers"])


async def test_an_open_sse_stream_keeps_no_request_headers(
    hub_factory: Callable[..., Hub],
) -> None:
    stepper = Stepper()
    hub = hub_factory({"stepper": stepper})
    body = rpc_body("SendStreamingMessage", {"message": user_message("go")})
    async with (
        LiveServer(hub) as live,
        httpx.AsyncClient(timeout=20) as http,
        http.stream(
            "POST", f"{live.url}/a2a/stepper", headers={"A2A-Version": "1.0"}, json=body
        ) as response,
    ):
        events = frames(response)
        await asyncio.wait_for(anext(events), 5)  # the task: the stream is open
        await asyncio.wait_for(stepper.started.wait(), 5)
        streams = [
            conn
            for conn in live.server.server_state.connections
            if isinstance(conn, HeaderTimeoutProtocol) and conn.cycle is not None
        ]
        assert len(streams) == 1
        assert streams[0].scope["headers"] == []
        stepper.step("a")
        stepper.finish()
        rest = [f async for f in events if not f.comment]
        assert rest[-1].data["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
