"""The HTTP/1.1 connection of ``a2a-hub serve`` (:mod:`a2a_hub.server.http_protocol`, its
requests' :mod:`a2a_hub.server.http_cycle`), fed raw requests over a recording transport.

A response with a Content-Length leaves in one write, and so does an SSE stream whose
events come at once (issue 29); other streams, HEAD answers and an app failing after its
headers are written as before.  What uvicorn's own protocol does holds too: pipelined
requests, ``Expect: 100-continue``, a body in pieces, a client's ``Connection: close``,
bad response headers refused, forwarded headers read, a client leaving mid-request."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.server import ServerState

from a2a_hub.server import create_app
from a2a_hub.server.connections import HeaderTimeoutProtocol
from a2a_hub.server.http_cycle import Signal
from a2a_hub.server.scope import JOINED, STREAM_KEY
from tests.support.hub import asgi_body, make_hub


class Recorder(asyncio.Transport):
    """A transport that keeps every write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def app(scope: Any, receive: Any, send: Any) -> None:
    path = scope["path"]
    if path == "/json":
        body = b'{"ok":true}'
        headers = [(b"content-type", b"application/json"), (b"content-length", b"11")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    elif path == "/stream":
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    elif path == "/joined":  # a stream whose first bytes follow its start at once
        scope[STREAM_KEY] = JOINED
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    elif path == "/fail":
        headers = [(b"content-length", b"5")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        raise RuntimeError("the app failed after its headers")


async def _served(
    *requests: bytes, served: Any = app, proxy_headers: bool = False, pieces: bool = False
) -> Recorder:
    """The writes of one connection that sent ``requests``, each answered in turn
    (``pieces``: they are pieces of one request, answered once all came)."""
    config = uvicorn.Config(
        served, log_level="critical", lifespan="off", proxy_headers=proxy_headers
    )
    config.load()
    state = ServerState()
    protocol = HeaderTimeoutProtocol(config=config, server_state=state, app_state={})
    transport = Recorder()
    protocol.connection_made(transport)
    for request in requests:
        protocol.data_received(request)
        if not pieces:
            await asyncio.gather(*state.tasks)
        await asyncio.sleep(0)  # the app reads what came
    await asyncio.gather(*state.tasks)
    protocol.connection_lost(None)
    return transport


def _get(path: str, method: str = "GET") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


async def test_a_response_with_a_length_leaves_in_one_write() -> None:
    transport = await _served(_get("/json"), _get("/json"))
    assert len(transport.writes) == 2  # one per response, headers and body together
    for written in transport.writes:
        assert written.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"\r\ncontent-length: 11\r\n" in written
        assert written.endswith(b'\r\n\r\n{"ok":true}')


async def test_a_head_answer_writes_its_headers() -> None:
    transport = await _served(_get("/json", "HEAD"), _get("/json"))
    assert len(transport.writes) == 2
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert transport.writes[0].endswith(b"\r\n\r\n")  # no body
    assert transport.writes[1].endswith(b'{"ok":true}')


async def test_a_stream_writes_its_headers_at_once() -> None:
    transport = await _served(_get("/stream"))
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert transport.writes[0].endswith(b"\r\n\r\n")  # the headers alone, before any event
    assert b"".join(transport.writes[1:]) == b"9\r\ndata: 1\n\n\r\n0\r\n\r\n"


async def test_headers_held_are_written_before_a_close() -> None:
    transport = await _served(_get("/fail"))
    assert transport.closed
    assert transport.writes == [transport.writes[0]]
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert transport.writes[0].endswith(b"content-length: 5\r\n\r\n")


async def test_a_stream_that_says_so_leaves_with_its_headers() -> None:
    transport = await _served(_get("/joined"))
    assert len(transport.writes) == 2
    head, _, body = transport.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert body == b"9\r\ndata: 1\n\n\r\n"
    assert transport.writes[1] == b"0\r\n\r\n"


def _rpc(method: str, message_id: str) -> bytes:
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"%b","params":{"message":{"messageId":"%b",'
        b'"role":"ROLE_USER","parts":[{"text":"hi"}]}}}' % (method.encode(), message_id.encode())
    )
    return (
        b"POST /a2a/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"A2A-Version: 1.0\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body)
    )


async def test_the_hubs_send_and_stream_each_leave_in_one_write() -> None:
    hub = make_hub()
    await hub.start()
    try:
        transport = await _served(
            _rpc("SendMessage", "m1"), _rpc("SendStreamingMessage", "m2"), served=create_app(hub)
        )
    finally:
        await hub.close()
    sent, streamed = transport.writes  # one write each
    assert sent.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"TASK_STATE_COMPLETED" in sent
    head, _, events = streamed.partition(b"\r\n\r\n")
    assert b"content-type: text/event-stream" in head
    assert events.count(b"data: ") == 4  # the task, working, the artifact, completed
    assert b"TASK_STATE_COMPLETED" in events
    assert events.endswith(b"\r\n0\r\n\r\n")  # the stream's end in the same write


async def test_an_idle_kept_alive_connection_is_closed_after_the_timeout() -> None:
    """uvicorn's keep-alive timeout (one timer per connection that moves to the latest
    deadline, :class:`~a2a_hub.server.connection_parts.MovingTimer`): each response moves
    it on, and the connection closes once it has idled that long after the last."""
    config = uvicorn.Config(
        app, log_level="critical", lifespan="off", proxy_headers=False, timeout_keep_alive=1
    )
    config.load()
    state = ServerState()
    protocol = HeaderTimeoutProtocol(config=config, server_state=state, app_state={})
    closed = asyncio.Event()
    transport = Recorder()
    transport.close = closed.set  # type: ignore[method-assign]
    protocol.connection_made(transport)
    loop = asyncio.get_running_loop()
    last = 0.0
    for _ in range(3):
        protocol.data_received(_get("/json"))
        await asyncio.gather(*state.tasks)
        last = loop.time()
    await asyncio.wait_for(closed.wait(), 10)
    assert loop.time() - last >= 1 - 0.01  # not before the timeout after the last response
    assert len(transport.writes) == 3
    protocol.connection_lost(None)


async def echo_app(scope: Any, receive: Any, send: Any) -> None:
    """Answers the request's body, the client's address and the scheme it saw."""
    body = await asgi_body(receive)
    client = scope["client"][0] if scope["client"] else ""
    answer = b"%b|%b|%b" % (body, client.encode(), scope["scheme"].encode())
    headers = [(b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


def _post(body: bytes, *headers: bytes) -> bytes:
    extra = b"".join(h + b"\r\n" for h in headers)
    return b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n%b\r\n%b" % (
        len(body),
        extra,
        body,
    )


async def test_pipelined_requests_are_answered_in_order() -> None:
    transport = await _served(_post(b"one") + _post(b"two") + _post(b"three"), served=echo_app)
    answers = b"".join(transport.writes)
    assert answers.count(b"HTTP/1.1 200 OK") == 3
    assert answers.index(b"one|") < answers.index(b"two|") < answers.index(b"three|")


async def test_a_body_in_pieces_arrives_whole() -> None:
    request = _post(b"x" * 100_000)
    transport = await _served(
        request[:50], request[50:30_000], request[30_000:], served=echo_app, pieces=True
    )
    answer = b"".join(transport.writes)  # (a body this large is not joined to its headers)
    assert answer.endswith(b"\r\n\r\n" + b"x" * 100_000 + b"|127.0.0.1|http")


async def test_expect_100_continue_is_answered_before_the_body_is_read() -> None:
    transport = await _served(_post(b"hi", b"Expect: 100-continue"), served=echo_app)
    assert transport.writes[0] == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert transport.writes[1].endswith(b"hi|127.0.0.1|http")


async def test_a_clients_connection_close_closes_after_the_answer() -> None:
    transport = await _served(_post(b"bye", b"Connection: close"), served=echo_app)
    (answer,) = transport.writes
    assert b"\r\nconnection: close\r\n" in answer
    assert answer.endswith(b"bye|127.0.0.1|http")
    assert transport.closed


async def test_forwarded_headers_are_read_from_a_trusted_proxy() -> None:
    forwarded = _post(b"a", b"X-Forwarded-For: 203.0.113.7", b"X-Forwarded-Proto: https")
    transport = await _served(forwarded, _post(b"b"), served=echo_app, proxy_headers=True)
    first, second = transport.writes
    assert first.endswith(b"a|203.0.113.7|https")
    assert second.endswith(b"b|127.0.0.1|http")  # a request without them: as it came


async def bad_header_app(scope: Any, receive: Any, send: Any) -> None:
    headers = [(b"x-bad", b"one\r\nset-cookie: injected"), (b"content-length", b"2")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})


async def test_a_header_value_with_a_line_break_is_never_written() -> None:
    transport = await _served(_get("/"), served=bad_header_app)
    assert transport.closed
    assert not any(b"injected" in written for written in transport.writes)


async def failing_app(scope: Any, receive: Any, send: Any) -> None:
    raise RuntimeError("the app failed before answering")


async def test_an_app_failing_before_its_answer_gets_a_500() -> None:
    transport = await _served(_get("/"), served=failing_app)
    (answer,) = transport.writes
    assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
    assert answer.endswith(b"Internal Server Error")


async def test_a_client_leaving_mid_request_is_told_to_the_app() -> None:
    told: list[Any] = []
    first = asyncio.Event()

    async def reader(scope: Any, receive: Any, send: Any) -> None:
        told.append(await receive())  # the part of the body that came
        first.set()
        told.append(await receive())  # waits: the client leaves

    config = uvicorn.Config(reader, log_level="critical", lifespan="off", proxy_headers=False)
    config.load()
    state = ServerState()
    protocol = HeaderTimeoutProtocol(config=config, server_state=state, app_state={})
    protocol.connection_made(Recorder())
    protocol.data_received(_post(b"0123456789")[:-5])
    await asyncio.wait_for(first.wait(), 5)
    protocol.connection_lost(None)
    await asyncio.gather(*state.tasks)
    assert told[0] == {"type": "http.request", "body": b"01234", "more_body": True}
    assert told[1] == {"type": "http.disconnect"}


async def test_a_signal_waiter_cancelled_or_dropped_leaves_the_others_waiting() -> None:
    signal = Signal()
    cancelled = asyncio.ensure_future(signal.wait())
    kept = asyncio.ensure_future(signal.wait())
    dropped = signal.wait()  # a coroutine stepped once, then closed (sse.client_gone)
    dropped.send(None)
    dropped.close()
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    assert not kept.done()
    signal.set()
    await asyncio.wait_for(kept, 5)
    assert cancelled.cancelled()
    assert signal.waiters == []
