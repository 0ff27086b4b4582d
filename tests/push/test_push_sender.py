"""The webhook sender's own HTTP/1.1 client, against raw sockets: keep-alive reuse, a
pooled connection the receiver closed, chunked and unsized answers, redirects, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from a2a_hub.push.sender import WebhookSender
from a2a_hub.push.urls import WebhookPolicy

Answer = Callable[[int], bytes]
Serve = Callable[["RawReceiver"], Awaitable[str]]


class RawReceiver:
    """Reads requests (head + Content-Length body) and writes ``answer(n)`` for the n-th;
    with ``close_after``, closes each connection after that many requests."""

    def __init__(self, answer: Answer, close_after: int | None = None) -> None:
        self.answer = answer
        self.close_after = close_after
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                writer.write(self.answer(len(self.requests)))
                await writer.drain()
                served += 1
                if self.close_after is not None and served >= self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[asyncio.Server] = []

    async def start(receiver: RawReceiver) -> str:
        server = await asyncio.start_server(receiver.handle, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/hook?x=1"

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@pytest.fixture
async def sender() -> AsyncIterator[WebhookSender]:
    s = WebhookSender(WebhookPolicy(["127.0.0.1"]), timeout=2.0)
    yield s
    await s.close()


async def test_one_connection_carries_many_notifications(
    serve: Serve, sender: WebhookSender
) -> None:
    receiver = RawReceiver(lambda n: OK)
    url = await serve(receiver)
    for i in range(5):
        outcome = await sender.post(url, b'{"n":%d}' % i, {"X-A2A-Notification-Id": str(i)})
        assert outcome.ok and outcome.status == 200
    assert receiver.connections == 1
    first = receiver.requests[0]
    assert first.startswith(b"POST /hook?x=1 HTTP/1.1\r\n")
    assert b"\r\nX-A2A-Notification-Id: 0\r\n" in first and first.endswith(b'{"n":0}')
    assert f"\r\nHost: 127.0.0.1:{url.split(':')[2].split('/')[0]}\r\n".encode() in first


async def test_a_connection_the_receiver_closed_is_replaced(
    serve: Serve, sender: WebhookSender
) -> None:
    receiver = RawReceiver(lambda n: OK, close_after=1)
    url = await serve(receiver)
    for _ in range(3):
        assert (await sender.post(url, b"{}", {})).ok
        await asyncio.sleep(0.05)  # the close reaches the pool before the next request
    assert receiver.connections == 3 and len(receiver.requests) == 3


async def test_a_stale_connection_noticed_only_on_use_is_retried_once(
    serve: Serve, sender: WebhookSender
) -> None:
    receiver = RawReceiver(lambda n: OK, close_after=1)
    url = await serve(receiver)
    assert (await sender.post(url, b"{}", {})).ok
    # the next request may go out before the receiver's close arrives: it must still land
    results = [await sender.post(url, b"{}", {}) for _ in range(5)]
    assert all(r.ok for r in results) and len(receiver.requests) == 6


async def test_chunked_and_unsized_answers(serve: Serve, sender: WebhookSender) -> None:
    chunked = (
        b"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3;x=y\r\nabc\r\n0\r\nTrailer: t\r\n\r\n"
    )
    receiver = RawReceiver(lambda n: chunked if n % 2 else OK)
    url = await serve(receiver)
    for _ in range(4):
        assert (await sender.post(url, b"{}", {})).ok
    assert receiver.connections == 1  # a chunked answer keeps the connection
    unsized = RawReceiver(lambda n: b"HTTP/1.0 200 OK\r\n\r\nbye", close_after=1)
    url = await serve(unsized)
    for _ in range(2):
        assert (await sender.post(url, b"{}", {})).ok
    assert unsized.connections == 2


async def test_redirects_are_failures_and_retry_after_is_read(
    serve: Serve, sender: WebhookSender
) -> None:
    answers = {
        1: b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/x\r\nContent-Length: 0\r\n\r\n",
        2: b"HTTP/1.1 503 Busy\r\nRetry-After: 7\r\nContent-Length: 0\r\n\r\n",
        3: b"HTTP/1.1 410 Gone\r\nContent-Length: 0\r\n\r\n",
        4: b"HTTP/1.1 100 Continue\r\n\r\n" + OK,
    }
    receiver = RawReceiver(lambda n: answers[n])
    url = await serve(receiver)
    redirect = await sender.post(url, b"{}", {})
    assert not redirect.ok and redirect.status == 302 and not redirect.gone
    busy = await sender.post(url, b"{}", {})
    assert busy.status == 503 and busy.retry_after == 7.0
    assert (await sender.post(url, b"{}", {})).gone
    assert (await sender.post(url, b"{}", {})).ok
    assert len(receiver.requests) == 4  # the redirect was not followed


async def test_a_receiver_that_never_answers_times_out(serve: Serve) -> None:
    receiver = RawReceiver(lambda n: b"")  # reads the request, answers nothing
    url = await serve(receiver)
    sender = WebhookSender(WebhookPolicy(["127.0.0.1"]), timeout=0.3)
    try:
        outcome = await sender.post(url, b"{}", {})
    finally:
        await sender.close()
    assert not outcome.ok and "timed out" in outcome.error


async def test_requests_in_flight_time_out_each_while_others_are_answered(serve: Serve) -> None:
    """One timer checks every request in flight: each silent one times out (within 1.25
    times the timeout), one answered meanwhile is not disturbed, and the sender stays
    usable afterwards."""
    arrived = asyncio.Event()

    def unanswered(n: int) -> bytes:
        arrived.set()
        return b""

    silent = await serve(RawReceiver(unanswered))
    answering = await serve(RawReceiver(lambda n: OK))
    sender = WebhookSender(WebhookPolicy(["127.0.0.1"]), timeout=0.4)
    loop = asyncio.get_running_loop()

    async def timed(url: str) -> tuple[bool, str, float]:
        start = loop.time()
        outcome = await sender.post(url, b"{}", {})
        return outcome.ok, outcome.error, loop.time() - start

    try:
        first = asyncio.ensure_future(timed(silent))
        await (
            arrived.wait()
        )  # a second request starts once the first is in flight: its own deadline
        second = asyncio.ensure_future(timed(silent))
        answered = await timed(answering)
        assert answered[0] and not first.done() and not second.done()
        for ok, error, took in await asyncio.gather(first, second):
            assert not ok and "timed out" in error
            assert 0.4 <= took < 0.4 * 1.25 + 1.0  # + slack for a loaded machine
        assert (await sender.post(answering, b"{}", {})).ok
    finally:
        await sender.close()


async def test_a_cancelled_request_is_cancelled_not_timed_out(serve: Serve) -> None:
    """Cancelling the task sending a request propagates (the timeout's own cancellation is
    told apart from any other)."""
    arrived = asyncio.Event()

    def silent(n: int) -> bytes:
        arrived.set()
        return b""

    url = await serve(RawReceiver(silent))
    sender = WebhookSender(WebhookPolicy(["127.0.0.1"]), timeout=0.3)
    try:
        post = asyncio.ensure_future(sender.post(url, b"{}", {}))
        await arrived.wait()  # the request is in flight
        post.cancel()
        with pytest.raises(asyncio.CancelledError):
            await post
        assert not sender._due  # nothing left in flight
    finally:
        await sender.close()


async def test_a_refused_connection_and_garbage_are_failures(
    serve: Serve, sender: WebhookSender
) -> None:
    garbage = RawReceiver(lambda n: b"SSH-2.0-nope\r\n\r\n")
    url = await serve(garbage)
    bad = await sender.post(url, b"{}", {})
    assert not bad.ok and "HTTP" in bad.error
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    refused = await sender.post(f"http://127.0.0.1:{port}/hook", b"{}", {})
    assert not refused.ok and not refused.permanent and refused.error
