"""A2A over WebSocket (subprotocol ``a2a.jsonrpc.v1``): a real uvicorn server, the
``websockets`` package as the client, and every frame parsed by the official a2a-sdk's
JSON-RPC types (``jsonrpc.jsonrpc2.JSONRPC20Response``, ``a2a.server.jsonrpc_models``, the
``a2a.types`` protobuf messages)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import websockets
from a2a.server.jsonrpc_models import JSONRPCError
from a2a.types import AgentCard, ListTasksResponse, SendMessageResponse
from a2a.types import StreamResponse as SdkStreamResponse
from a2a.types import Task as SdkTask
from google.protobuf.json_format import ParseDict
from jsonrpc.jsonrpc2 import JSONRPC20Response

from a2a_hub import AgentExecutor, AgentSpec, Hub, RequestContext, Settings, TaskUpdater
from a2a_hub.protocol.types import ListTasksRequest
from a2a_hub.stores.memory import MemoryStore
from tests.support.hub import LiveServer
from tests.support.ws import connect, ws_url

RPC = "a2a.jsonrpc.v1"
STREAM_END = {"streamEnd": {}}


class Gate(AgentExecutor):
    """Works until the test opens its gate, then completes."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        await updater.working("waiting for the gate")
        await self.gate.wait()
        await updater.complete(f"done: {ctx.text}")


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
async def server(hub_factory: Callable[..., Hub], gate: Gate) -> AsyncIterator[LiveServer]:
    hub = hub_factory(
        {"gate": gate, "echo": "echo"},
        default_agent="echo",
        ws_max_frame_bytes=4096,
        ws_max_streams=2,
    )
    async with LiveServer(hub) as live:
        yield live


class Sock:
    """A client socket of the subprotocol: every frame it reads is checked by the SDK."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        #: request id -> the method asked (what its results are)
        self.methods: dict[Any, str] = {}

    async def call(self, req_id: Any, method: str, params: Any = None) -> None:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": req_id, "method": method}
        if params is not None:
            frame["params"] = params
        self.methods[req_id] = method
        await self.ws.send(json.dumps(frame))

    async def recv(self) -> dict[str, Any]:
        frame: dict[str, Any] = json.loads(await asyncio.wait_for(self.ws.recv(), 20))
        sdk_check(frame, self.methods.get(frame["id"]))
        self.frames.append(frame)
        return frame

    async def until(self, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            frame = await self.recv()
            if pred(frame):
                return frame


#: The a2a-sdk protobuf type of each method's result.
SDK_RESULTS: dict[str, type[Any]] = {
    "SendStreamingMessage": SdkStreamResponse,
    "SubscribeToTask": SdkStreamResponse,
    "SendMessage": SendMessageResponse,
    "GetTask": SdkTask,
    "CancelTask": SdkTask,
    "ListTasks": ListTasksResponse,
    "GetExtendedAgentCard": AgentCard,
}
#: Parsed leniently (unknown fields ignored): none.  The extended card, a 1.0 method's answer,
#: is strictly 1.0 (its security schemes without the 0.3 ``type`` fields).
LENIENT: set[str] = set()


def sdk_check(frame: dict[str, Any], method: str | None = None) -> None:
    """The official SDK's JSON-RPC types parse the frame: the envelope
    (``JSONRPC20Response``), an error object (``JSONRPCError``), and a result as the protobuf
    message of its method (strictly: an unknown field fails)."""
    assert set(frame) <= {"jsonrpc", "id", "result", "error"}, frame
    assert frame["jsonrpc"] == "2.0" and ("result" in frame) != ("error" in frame), frame
    body = {k: v for k, v in frame.items() if k in ("result", "error")}
    assert JSONRPC20Response(_id=frame["id"], **body).data == frame
    if "error" in frame:
        JSONRPCError.model_validate(frame["error"])
        return
    result = frame["result"]
    if result == STREAM_END and method in ("SendStreamingMessage", "SubscribeToTask"):
        return  # the binding's terminator
    if method in SDK_RESULTS:
        ParseDict(result, SDK_RESULTS[method](), ignore_unknown_fields=method in LENIENT)
    else:  # cancelStream, authenticate: the binding's own methods
        assert method in ("cancelStream", "authenticate"), frame


def reason(error: dict[str, Any]) -> str:
    value: str = error["data"][0]["reason"]
    return value


def of(req_id: Any) -> Callable[[dict[str, Any]], bool]:
    return lambda f: f["id"] == req_id


def ended(req_id: Any) -> Callable[[dict[str, Any]], bool]:
    return lambda f: f["id"] == req_id and f.get("result") == STREAM_END


def message(text: str, mid: str) -> dict[str, Any]:
    return {"message": {"messageId": mid, "role": "ROLE_USER", "parts": [{"text": text}]}}


def state(frame: dict[str, Any]) -> str | None:
    result = frame.get("result") or {}
    for key in ("statusUpdate", "task"):
        if key in result:
            value: str = result[key]["status"]["state"]
            return value
    return None


async def count_tasks(server: LiveServer) -> int:
    page = await server.hub.agent("gate").engine.list_tasks(ListTasksRequest())
    return len(page.tasks)


def rpc_socket(server: LiveServer, agent: str | None, **options: Any) -> Any:
    return connect(ws_url(server, agent), subprotocols=[RPC], **options)


async def test_two_streams_and_a_get_task_at_once_on_one_socket(
    server: LiveServer, gate: Gate
) -> None:
    async with rpc_socket(server, "gate") as ws:
        assert ws.subprotocol == RPC
        sock = Sock(ws)
        await sock.call("s1", "SendStreamingMessage", message("one", "m-1"))
        await sock.call(2, "SendStreamingMessage", message("two", "m-2"))
        working: dict[Any, str] = {}
        while len(working) < 2:  # both streams are open and say their task works
            frame = await sock.recv()
            if state(frame) == "TASK_STATE_WORKING":
                result = frame["result"]
                update = result.get("statusUpdate")
                working[frame["id"]] = update["taskId"] if update else result["task"]["id"]
        await sock.call("g", "GetTask", {"id": working["s1"]})
        got = await sock.until(of("g"))
        assert got["result"]["id"] == working["s1"]
        assert got["result"]["status"]["state"] == "TASK_STATE_WORKING"  # s1 is still open
        gate.gate.set()
        done: set[Any] = set()
        while done != {"s1", 2}:
            frame = await sock.recv()
            if frame.get("result") == STREAM_END:
                done.add(frame["id"])
    by_id: dict[Any, list[dict[str, Any]]] = {}
    for frame in sock.frames:
        by_id.setdefault(frame["id"], []).append(frame)
    for sid, text in (("s1", "one"), (2, "two")):
        frames = by_id[sid]
        assert frames[-1]["result"] == STREAM_END
        assert sum(f.get("result") == STREAM_END for f in frames) == 1
        assert state(frames[-2]) == "TASK_STATE_COMPLETED"
        assert f"done: {text}" in json.dumps(frames[-2])
    # the frames of the two streams interleave on the socket
    ids = [f["id"] for f in sock.frames]
    assert ids.index(2) < max(i for i, x in enumerate(ids) if x == "s1")


async def test_cancel_stream_ends_one_stream_while_the_other_goes_on(
    server: LiveServer, gate: Gate
) -> None:
    async with rpc_socket(server, "gate") as ws:
        sock = Sock(ws)
        await sock.call("a", "SendStreamingMessage", message("a", "m-a"))
        await sock.call("b", "SendStreamingMessage", message("b", "m-b"))
        seen: set[Any] = set()
        while seen != {"a", "b"}:  # each stream sent the last event before the gate
            frame = await sock.recv()
            if "waiting for the gate" in json.dumps(frame):
                seen.add(frame["id"])
        await sock.call("c", "cancelStream", {"id": "a"})
        end_a = await sock.until(lambda f: f["id"] in ("a", "c"))
        assert end_a == {"jsonrpc": "2.0", "id": "a", "result": STREAM_END}
        answer = await sock.recv()
        assert answer == {"jsonrpc": "2.0", "id": "c", "result": {}}
        # the stream ended, not the task; the other stream is still served
        gate.gate.set()
        await sock.until(ended("b"))
        assert not any(f["id"] == "a" for f in sock.frames[sock.frames.index(end_a) + 1 :])
        b_frames = [f for f in sock.frames if f["id"] == "b"]
        assert state(b_frames[-2]) == "TASK_STATE_COMPLETED"
        # a new request may reuse the id of the ended stream
        await sock.call("a", "cancelStream", {"id": "a"})
        again = await sock.until(of("a"))
        assert again["error"]["code"] == -32602 and "no open stream" in again["error"]["message"]


async def test_errors_are_json_rpc_errors_with_the_id(server: LiveServer, gate: Gate) -> None:
    async with rpc_socket(server, "gate") as ws:
        sock = Sock(ws)
        await sock.call(7, "NoSuchMethod", {})
        err = (await sock.until(of(7)))["error"]
        assert err["code"] == -32601 and "NoSuchMethod" in err["message"]
        await sock.call("p", "GetTask", {"id": 5})
        err = (await sock.until(of("p")))["error"]
        assert err["code"] == -32602 and "params.id" in err["message"]
        await sock.call("q", "GetTask", {"id": "nope"})
        err = (await sock.until(of("q")))["error"]
        assert err["code"] == -32001  # TaskNotFoundError
        await sock.call("r", "SubscribeToTask", {"id": "nope"})
        err = (await sock.until(of("r")))["error"]  # a refused stream ends with its error
        assert err["code"] == -32001
        await sock.call("s", "cancelStream", {"stream": 1})
        err = (await sock.until(of("s")))["error"]
        assert err["code"] == -32602 and "cancelStream" in err["message"]
        await sock.call(None, "SendStreamingMessage", message("x", "m-x"))
        err = (await sock.until(of(None)))["error"]
        assert err["code"] == -32600 and "needs an id" in err["message"]
        await ws.send("{not json")
        err = (await sock.until(of(None)))["error"]
        assert err["code"] == -32700
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": "big", "method": "x" * 5000}))
        err = (await sock.until(of(None)))["error"]
        assert err["code"] == -32600 and "4096" in err["message"]
        # the socket is still open and serves
        await sock.call("ok", "ListTasks", {})
        assert "result" in await sock.until(of("ok"))
    assert await count_tasks(server) == 0  # nothing was started by the refusals


async def test_stream_limits_and_duplicate_ids(server: LiveServer, gate: Gate) -> None:
    async with rpc_socket(server, "gate") as ws:
        sock = Sock(ws)
        await sock.call("x", "SendStreamingMessage", message("x", "m-x1"))
        await sock.call("x", "SendStreamingMessage", message("x", "m-x2"))
        err = (await sock.until(lambda f: "error" in f))["error"]
        assert err["code"] == -32600 and "still open" in err["message"]
        await sock.call("y", "SendStreamingMessage", message("y", "m-y"))
        await sock.call("z", "SendStreamingMessage", message("z", "m-z"))
        err = (await sock.until(lambda f: f["id"] == "z"))["error"]
        assert err["code"] == -32600 and "ws_max_streams" in err["message"]
        gate.gate.set()
        await sock.until(ended("x"))
        await sock.until(ended("y"))
    assert await count_tasks(server) == 2  # the refused requests started nothing


async def test_default_subprotocol_stays_the_event_channel(server: LiveServer) -> None:
    for offered in (None, ["a2a-hub"]):
        options = {} if offered is None else {"subprotocols": offered}
        async with connect(ws_url(server, "echo"), **options) as ws:
            assert ws.subprotocol == (offered[0] if offered else None)
            await ws.send(json.dumps({"action": "ping", "client_timestamp": "t"}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 20))["event"] == "pong"


async def test_unknown_agent_is_a_json_rpc_error_and_a_close(server: LiveServer) -> None:
    async with rpc_socket(server, "nobody") as ws:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 20))
        sdk_check(frame)
        assert frame["id"] is None and reason(frame["error"]) == "AGENT_NOT_FOUND"
        with pytest.raises(websockets.ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 20)


@pytest.fixture
async def locked(tmp_path: Path) -> AsyncIterator[LiveServer]:
    settings = Settings.from_flat(
        agents=[
            AgentSpec(
                id="locked",
                kind="echo",
                auth="api-key",
                extended_skills=[{"id": "sauce", "name": "Sauce", "description": "secret"}],
            )
        ],
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
    )
    async with LiveServer(Hub(settings, store=MemoryStore())) as server:
        yield server


async def test_the_caller_of_the_upgrade_or_the_first_frame(locked: LiveServer) -> None:
    assert locked.hub.registry is not None
    key, _ = await locked.hub.registry.create_key()
    send = {"id": "s", "params": message("hi", "m-auth")}
    async with rpc_socket(locked, "locked", additional_headers={"x-api-key": key}) as ws:
        sock = Sock(ws)
        await sock.call("s", "SendMessage", send["params"])
        assert "result" in await sock.until(of("s"))
        await sock.call("card", "GetExtendedAgentCard")
        card = (await sock.until(of("card")))["result"]
        assert "sauce" in [s["id"] for s in card["skills"]]
        assert card["supportedInterfaces"][0]["url"] == f"{locked.url}/a2a/locked"
    async with rpc_socket(locked, "locked") as ws:  # no key: the first frame carries it
        sock = Sock(ws)
        await sock.call(1, "authenticate", {"apiKey": key})
        assert "principal" in (await sock.until(of(1)))["result"]
        await sock.call("s", "SendMessage", send["params"])
        assert "result" in await sock.until(of("s"))
    async with rpc_socket(locked, "locked") as ws:  # anything else first: refused, closed
        sock = Sock(ws)
        await sock.call("s", "SendMessage", send["params"])
        err = (await sock.recv())["error"]
        assert reason(err) == "UNAUTHENTICATED" and "authenticate" in err["message"]
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 20)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
