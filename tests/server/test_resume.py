"""Resume with a cursor on every binding (issue 27, item 2), over real sockets.

A task streams on one binding, the connection is cut while it runs, the agent goes on,
and the client resumes with the id of the last event it got: JSON-RPC with the
``Last-Event-ID`` header or ``params.metadata.lastEventId``, REST ``:subscribe`` with the
header, gRPC with the metadata ``last-event-id``, the WebSocket with ``sync_state``.  It
gets exactly the events it missed, then the live ones.  A cursor older than the store
still holds (the log trimmed behind it) is the gap error naming the oldest event held,
on every binding; a cursor beyond the last event keeps its own error.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from google.rpc import error_details_pb2, status_pb2

from a2a_hub import Hub
from a2a_hub.stores import open_store
from tests.support.agents import ChattyExecutor, Stepper
from tests.support.hub import LiveServer, make_hub
from tests.support.push_receiver import until
from tests.support.sse import frames, rpc_body, user_message
from tests.support.stores import trim_log
from tests.support.ws import connect, recv, send, ws_url

V10 = {"A2A-Version": "1.0"}

#: (seq, what): "task", "status:<state>", "artifact:<text>".
Seen = tuple[int, str]


def _label(event: dict[str, Any]) -> str:
    """What a JSON stream event is, in the terms of :data:`Seen`."""
    if "task" in event:
        return "task"
    if "statusUpdate" in event:
        state: str = event["statusUpdate"]["status"]["state"]
        return "status:" + state.removeprefix("TASK_STATE_").lower()
    text: str = event["artifactUpdate"]["artifact"]["parts"][0]["text"]
    return "artifact:" + text


class Binding(Protocol):
    """A client of one binding: starts a streamed task, resumes it from a cursor."""

    def start(self, text: str) -> AsyncGenerator[Seen, None]: ...

    def resume(self, task_id: str, cursor: int) -> AsyncGenerator[Seen, None]: ...

    task_id: str


class Sse:
    """JSON-RPC (``SendStreamingMessage`` / ``SubscribeToTask``) or REST over SSE."""

    def __init__(self, live: LiveServer, http: httpx.AsyncClient, how: str) -> None:
        self.url = f"{live.url}/a2a/step"
        self.http = http
        self.how = how  # "jsonrpc-header", "jsonrpc-metadata" or "rest-header"
        self.task_id = ""

    async def _events(self, method: str, url: str, **kw: Any) -> AsyncGenerator[Seen, None]:
        async with self.http.stream(method, url, **kw) as r:
            assert r.status_code == 200, await r.aread()
            async for frame in frames(r):
                if frame.comment:
                    continue
                event = frame.data if self.how == "rest-header" else frame.data["result"]
                if "task" in event:
                    self.task_id = event["task"]["id"]
                assert frame.id is not None
                yield frame.id, _label(event)

    def start(self, text: str) -> AsyncGenerator[Seen, None]:
        if self.how == "rest-header":
            body = {"message": user_message(text)}
            return self._events("POST", f"{self.url}/message:stream", json=body, headers=V10)
        body = rpc_body("SendStreamingMessage", {"message": user_message(text)})
        return self._events("POST", self.url, json=body, headers=V10)

    def resume(self, task_id: str, cursor: int) -> AsyncGenerator[Seen, None]:
        header = {**V10, "Last-Event-ID": str(cursor)}
        if self.how == "rest-header":
            return self._events("POST", f"{self.url}/tasks/{task_id}:subscribe", headers=header)
        if self.how == "jsonrpc-header":
            body = rpc_body("SubscribeToTask", {"id": task_id})
            return self._events("POST", self.url, json=body, headers=header)
        params = {"id": task_id, "metadata": {"lastEventId": cursor}}
        return self._events("POST", self.url, json=rpc_body("SubscribeToTask", params), headers=V10)


def _pb_label(event: StreamResponse) -> str:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return "task"
    if kind == "status_update":
        name = TaskState.Name(event.status_update.status.state)
        return "status:" + name.removeprefix("TASK_STATE_").lower()
    return "artifact:" + event.artifact_update.artifact.parts[0].text


class Grpc:
    """The gRPC binding.  Its 1.0 events carry no id: a task's first turn streams its
    events from seq 1 on, so the client counts them."""

    def __init__(self, live: LiveServer, channel: grpc.aio.Channel) -> None:
        self.stub = a2a_pb2_grpc.A2AServiceStub(channel)
        self.task_id = ""

    async def start(self, text: str) -> AsyncGenerator[Seen, None]:
        message = Message(message_id=f"m-{text}", role=Role.ROLE_USER, parts=[Part(text=text)])
        call = self.stub.SendStreamingMessage(SendMessageRequest(tenant="step", message=message))
        try:
            seq = 0
            async for event in call:
                seq += 1
                if event.WhichOneof("payload") == "task":
                    self.task_id = event.task.id
                yield seq, _pb_label(event)
        finally:
            call.cancel()  # the forced disconnect (a no-op once the call ended)

    async def resume(self, task_id: str, cursor: int) -> AsyncGenerator[Seen, None]:
        request = SubscribeToTaskRequest(tenant="step", id=task_id)
        call = self.stub.SubscribeToTask(request, metadata=[("last-event-id", str(cursor))])
        try:
            seq = cursor
            async for event in call:
                seq += 1
                yield seq, _pb_label(event)
        finally:
            call.cancel()


_WS_STATES = {"processing": "working", "completed": "completed"}


class Ws:
    """The WebSocket channel (seed 003 events); ``sync_state`` with ``last_seq``.  Only
    the events that map one to one on task events are kept: chunks and task states."""

    def __init__(self, live: LiveServer) -> None:
        self.url = ws_url(live, "step")
        self.task_id = ""

    async def _events(self, first: dict[str, Any]) -> AsyncGenerator[Seen, None]:
        async with connect(self.url) as ws:
            try:
                await send(ws, **first)
                while True:
                    event = await recv(ws)
                    assert event["event"] != "error", event
                    if event["event"] == "content_stream":
                        self.task_id = event["task_id"]
                        yield event["seq"], "artifact:" + event["chunk"]
                    elif event["event"] == "task_status_update" and event["seq"]:
                        self.task_id = event["task_id"]
                        state = _WS_STATES.get(event["status"], event["status"])
                        yield event["seq"], "status:" + state
                        if state == "completed":
                            return
            finally:
                ws.transport.abort()  # the forced disconnect: no close handshake

    def start(self, text: str) -> AsyncGenerator[Seen, None]:
        return self._events({"action": "send_message", "message_id": f"m-{text}", "text": text})

    def resume(self, task_id: str, cursor: int) -> AsyncGenerator[Seen, None]:
        return self._events({"action": "sync_state", "last_seq": {task_id: cursor}})


BINDINGS = ["jsonrpc-header", "jsonrpc-metadata", "rest-header", "grpc", "websocket"]


@dataclass
class World:
    live: LiveServer
    stepper: Stepper
    client: Binding


@pytest.fixture(params=BINDINGS)
async def world(request: pytest.FixtureRequest) -> AsyncIterator[World]:
    stepper = Stepper()
    hub = make_hub({"step": stepper}, grpc_port=0, sse_heartbeat=0.3)
    async with (
        LiveServer(hub) as live,
        httpx.AsyncClient(timeout=30) as http,
    ):
        assert hub.grpc is not None
        async with grpc.aio.insecure_channel(f"127.0.0.1:{hub.grpc.port}") as channel:
            how: str = request.param
            client: Binding
            if how == "grpc":
                client = Grpc(live, channel)
            elif how == "websocket":
                client = Ws(live)
            else:
                client = Sse(live, http, how)
            yield World(live, stepper, client)


async def _take(events: AsyncGenerator[Seen, None], until_label: str) -> list[Seen]:
    """Events up to and including the first labelled ``until_label``; then the
    connection is cut (the iterator closed)."""
    got: list[Seen] = []
    try:
        async with asyncio.timeout(20):  # a hang guard, not a timing check
            async for item in events:
                got.append(item)
                if item[1] == until_label:
                    break
    finally:
        await events.aclose()
    return got


async def test_a_resume_after_a_forced_disconnect_gets_exactly_the_missing_events(
    world: World,
) -> None:
    stepper, client = world.stepper, world.client
    engine = world.live.hub.agent("step").engine
    first = client.start("go")
    stepper.step("a")
    head = await _take(first, "artifact:a")
    task_id = client.task_id
    assert task_id and head[-1] == (3, "artifact:a")
    cursor = head[-1][0]

    # the server notices the client leaving; the agent goes on meanwhile
    async def left() -> bool:
        return not engine.pubsub.topics.get(task_id)

    await until(left)
    stepper.step("b", "c")

    async def written() -> bool:
        run = engine.live(task_id)
        return run is not None and run.written_seq >= 5

    await until(written)

    resumed = client.resume(task_id, cursor)
    replay = await _take(resumed, "artifact:c")  # what was missed, from the store
    assert replay == [(4, "artifact:b"), (5, "artifact:c")]
    # and again from the same cursor, this time following live to the end
    resumed = client.resume(task_id, cursor)
    got: list[Seen] = []
    async with asyncio.timeout(20):
        async for item in resumed:
            got.append(item)
            if item[1] == "artifact:c":
                stepper.step("d")
                stepper.finish()
            if item[1] == "status:completed":
                break
    await resumed.aclose()
    assert got == [
        (4, "artifact:b"),
        (5, "artifact:c"),
        (6, "artifact:d"),
        (7, "status:completed"),
    ]


# --- the gap error on every binding ---------------------------------------------------


async def _sse_error(r: httpx.Response) -> dict[str, Any]:
    assert r.headers["content-type"].startswith("application/json"), r.text
    body: dict[str, Any] = r.json()
    return body


@pytest.fixture
async def trimmed(tmp_path: Path) -> AsyncIterator[tuple[LiveServer, str]]:
    """A finished task of 9 events on a SQLite store whose events 1..4 were trimmed."""
    store = open_store(f"sqlite:///{tmp_path}/hub.db")
    hub: Hub = make_hub({"chatty": ChattyExecutor(chunks=6)}, store=store, grpc_port=0)
    async with LiveServer(hub) as live, httpx.AsyncClient(timeout=30) as http:
        body = rpc_body("SendMessage", {"message": user_message("go")})
        r = await http.post(f"{live.url}/a2a/chatty", json=body, headers=V10)
        task = r.json()["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        await trim_log(store, "chatty", task["id"], 4)
        yield live, task["id"]


GAP = {"lastEventId": "2", "oldestEventId": "5", "latestEventId": "9"}


async def test_a_cursor_older_than_the_log_is_the_gap_error_on_every_binding(
    trimmed: tuple[LiveServer, str],
) -> None:
    live, task_id = trimmed
    url = f"{live.url}/a2a/chatty"
    held = "the oldest event still held is 5"
    async with httpx.AsyncClient(timeout=30) as http:
        # JSON-RPC: the header, and the params' metadata
        cases: list[tuple[dict[str, str], dict[str, Any]]] = [
            ({**V10, "Last-Event-ID": "2"}, {"id": task_id}),
            (V10, {"id": task_id, "metadata": {"lastEventId": 2}}),
        ]
        for headers, params in cases:
            r = await http.post(url, json=rpc_body("SubscribeToTask", params), headers=headers)
            err = (await _sse_error(r))["error"]
            assert err["code"] == -32004 and held in err["message"], err
            assert err["data"][0]["metadata"] == {"taskId": task_id, **GAP}
        # a cursor beyond the last event keeps its own error
        r = await http.post(
            url,
            json=rpc_body("SubscribeToTask", {"id": task_id}),
            headers={**V10, "Last-Event-ID": "10"},
        )
        err = (await _sse_error(r))["error"]
        assert err["code"] == -32602 and "beyond the last event (9)" in err["message"]
        # a cursor at the trimmed edge loses nothing
        body = rpc_body("SubscribeToTask", {"id": task_id})
        async with http.stream("POST", url, json=body, headers={**V10, "Last-Event-ID": "4"}) as s:
            assert [f.id async for f in frames(s) if not f.comment] == [5, 6, 7, 8, 9]
        # REST :subscribe
        r = await http.post(
            f"{url}/tasks/{task_id}:subscribe", headers={**V10, "Last-Event-ID": "2"}
        )
        assert r.status_code == 400
        rest = (await _sse_error(r))["error"]
        assert held in rest["message"] and rest["details"][0]["metadata"] == {
            "taskId": task_id,
            **GAP,
        }
    # gRPC
    assert live.hub.grpc is not None
    async with grpc.aio.insecure_channel(f"127.0.0.1:{live.hub.grpc.port}") as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        call = stub.SubscribeToTask(
            SubscribeToTaskRequest(tenant="chatty", id=task_id),
            metadata=[("last-event-id", "2")],
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            async for _ in call:
                pass
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert held in (caught.value.details() or "")
        details = dict(caught.value.trailing_metadata() or ())["grpc-status-details-bin"]
        info = error_details_pb2.ErrorInfo()
        assert status_pb2.Status.FromString(details).details[0].Unpack(info)
        assert dict(info.metadata) == {"taskId": task_id, **GAP}
    # WebSocket sync_state
    async with connect(ws_url(live, "chatty")) as ws:
        await send(ws, action="sync_state", last_seq={task_id: 2})
        event = await recv(ws)
        assert event["event"] == "error" and event["code"] == "unsupported_operation"
        assert held in event["message"]
        assert event["details"]["data"] == {
            "taskId": task_id,
            "lastEventId": 2,
            "oldestEventId": 5,
            "latestEventId": 9,
        }
