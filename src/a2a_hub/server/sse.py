"""Server-Sent Events: one task stream written in the shape of one protocol version.

Each event carries ``id: <seq>`` (the task's event number), so a client that
reconnects with ``Last-Event-ID`` gets exactly what it missed.  A comment line
is sent after ``heartbeat`` idle seconds so that proxies keep the stream open.
An error after the stream has started is sent as an ``event: error`` and ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from starlette.responses import Response

from a2a_hub import metrics
from a2a_hub.engine.stream import TaskStream
from a2a_hub.protocol.errors import A2AError
from a2a_hub.server.errors import protocol_error
from a2a_hub.server.scope import STREAM_KEY
from a2a_hub.stores.base import TaskEvent

__all__ = [
    "Shutdown",
    "SseReply",
    "SseResponse",
    "encoded_event",
    "end_streams",
    "sse_response",
    "until_shutdown",
]

_enc = msgspec.json.Encoder()
_memo: dict[int, tuple[TaskEvent, bytes]] = {}
_MEMO_SIZE = 512


def encoded_event(event: TaskEvent) -> bytes:
    """The 1.0 JSON of an event's payload, encoded once however many streams send it."""
    key = id(event)
    hit = _memo.get(key)
    if hit is not None and hit[0] is event:
        return hit[1]
    data = _enc.encode(event.event)
    if len(_memo) >= _MEMO_SIZE:
        _memo.clear()
    _memo[key] = (event, data)
    return data


SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@dataclass
class SseReply:
    """A validated stream and how to write its events and errors."""

    stream: TaskStream
    #: The ``data:`` payload of an event, or ``None`` to skip it.
    encode: Callable[[TaskEvent], bytes | None]
    encode_error: Callable[[A2AError], bytes]


class SseResponse(Response):
    """An event stream written straight to the ASGI ``send`` by the request's own task.

    Starlette's StreamingResponse runs two tasks per stream in an anyio task group,
    one of them only to notice the client leaving.  Here nothing else runs: the
    writer asks :func:`client_gone` whenever the stream has been quiet for a
    heartbeat and, while events flow, at most once a heartbeat.  A client that left
    is noticed within one heartbeat (15 s by default), and ten thousand idle
    subscribers cost no extra tasks.
    """

    media_type = "text/event-stream"

    def __init__(self, reply: SseReply, heartbeat: float) -> None:  # no Content-Length
        self.status_code = 200
        self.background = None
        self.raw_headers = [(b"content-type", b"text/event-stream; charset=utf-8")] + [
            (k.lower().encode(), v.encode()) for k, v in SSE_HEADERS.items()
        ]
        self.reply = reply
        self.heartbeat = heartbeat

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        loop = asyncio.get_running_loop()
        checked = opened = loop.time()
        record = metrics.enabled()
        scope[STREAM_KEY] = True  # timed here, not by the request histogram
        if record:
            metrics.STREAMS_OPEN.inc()
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            limit = asyncio.timeout(None)
            try:
                async with limit:
                    _open.add(limit)
                    if _ending:
                        limit.reschedule(loop.time())
                    async for frame in _frames(self.reply, self.heartbeat):
                        now = loop.time()
                        if now - checked >= self.heartbeat:
                            checked = now
                            if client_gone(receive):
                                return
                        await send({"type": "http.response.body", "body": frame, "more_body": True})
            except TimeoutError:
                pass  # end_streams(): the instance shuts down; the client resumes elsewhere
            finally:
                _open.discard(limit)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away mid-write
        finally:
            self.reply.stream.close()
            if record:
                metrics.STREAMS_OPEN.dec()
                metrics.STREAM_SECONDS.observe(loop.time() - opened)


#: The open streams' limits: :func:`end_streams` brings them forward to now.
_open: set[asyncio.Timeout] = set()
_ending = False


def end_streams() -> None:
    """End every open stream now, cleanly (a complete HTTP response), and every stream
    opened from now on at once: the instance is shutting down.  A client resumes on
    another instance with ``Last-Event-ID`` and misses nothing."""
    global _ending
    _ending = True
    now = asyncio.get_running_loop().time()
    for limit in list(_open):
        limit.reschedule(now)


class Shutdown:
    """What :func:`until_shutdown` tells: ``cut`` when the shutdown ended the block."""

    cut = False


@contextlib.asynccontextmanager
async def until_shutdown() -> AsyncIterator[Shutdown]:
    """Run the block (a wait: never a ``yield`` of a generator) until it ends, or cut it
    short quietly when the instance shuts down (:func:`end_streams`), saying so: for
    streams written otherwise than by :class:`SseResponse` (the console's feed), so that
    they do not hold the shutdown up."""
    limit = asyncio.timeout(None)
    said = Shutdown()
    try:
        async with limit:
            _open.add(limit)
            if _ending:
                limit.reschedule(asyncio.get_running_loop().time())
            yield said
    except TimeoutError:
        said.cut = True
    finally:
        _open.discard(limit)


def client_gone(receive: Any) -> bool:
    """True if the client has disconnected, found without waiting.

    After the request body, ``receive()`` only returns when the client leaves: if
    it completes at once the client is gone; if it would wait, the attempt is
    dropped (closing the coroutine withdraws it) and the client is still there.
    """
    attempt = receive()
    try:
        attempt.send(None)
    except StopIteration as done:
        message = done.value
        return isinstance(message, dict) and message.get("type") == "http.disconnect"
    attempt.close()
    return False


def sse_response(reply: SseReply, heartbeat: float) -> Response:
    """The streaming HTTP response of ``reply``."""
    return SseResponse(reply, heartbeat)


async def _frames(reply: SseReply, heartbeat: float) -> AsyncIterator[bytes]:
    """The stream's frames; events already waiting are joined into one write."""
    stream = reply.stream
    sent = 0
    try:
        while True:
            chunk: list[bytes] = []
            try:
                event = await stream.next(heartbeat)
                idle = event is None
                while event is not None:
                    data = reply.encode(event)
                    if data is not None:
                        sent += 1
                        chunk.append(
                            b"id: %d\ndata: %b\n\n" % (event.seq, data)
                            if event.seq
                            else b"data: %b\n\n" % data
                        )
                    event = await stream.next(heartbeat) if stream.ready else None
            except StopAsyncIteration:
                if chunk:
                    yield b"".join(chunk)
                return
            except Exception as exc:
                err = protocol_error(exc, f"stream of task {stream.task_id}")
                chunk.append(b"event: error\ndata: " + reply.encode_error(err) + b"\n\n")
                yield b"".join(chunk)
                return
            if chunk:
                yield b"".join(chunk)
            elif idle:
                yield b": keep-alive\n\n"
    finally:
        stream.close()
        if sent and metrics.enabled():
            metrics.STREAM_EVENTS.inc(sent)
