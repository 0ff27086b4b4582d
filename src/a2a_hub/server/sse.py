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
from a2a_hub.server.detached import detach
from a2a_hub.server.errors import protocol_error
from a2a_hub.server.scope import JOINED, STREAM_KEY
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
    subscribers cost no extra tasks.  Once the headers are sent, the writing is
    detached from the middleware stack (:mod:`a2a_hub.server.detached`): an idle
    stream is one suspended coroutine waiting on one future, its heartbeat a slot in
    a shared timer wheel (:func:`a2a_hub.engine.pubsub.Subscription.waiter`).

    The events there by the next turn of the event loop (a new task's, when its agent
    answers without waiting for anything; a resumed stream's backlog) leave with the
    headers, and the stream's last frame with its end: an echo's whole stream is one
    write (one system call, one TCP segment) where it was three (issue 29).
    """

    media_type = "text/event-stream"

    def __init__(self, reply: SseReply, heartbeat: float) -> None:  # no Content-Length
        self.status_code = 200
        self.background = None
        self.raw_headers = _RAW_HEADERS
        self.reply = reply
        self.heartbeat = heartbeat
        self._receive: Any = None
        self._send: Any = None
        #: The frame read before the headers were sent (see ``_frame``'s answer).
        self._first: tuple[bytes, int, bool] = _NOTHING

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        scope[STREAM_KEY] = True  # timed here, not by the request histogram
        try:
            # the first events, when they are there by the next turn of the loop, leave with
            # the headers in one write: a new task's run, started beside this stream, has
            # its first events by then unless it waits for something
            stream = self.reply.stream
            if not stream.ready:
                await asyncio.sleep(0)
            if stream.ready:
                self._first = await _frame(self.reply, self.heartbeat, 0)
                if self._first[0]:
                    scope[STREAM_KEY] = JOINED
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        except BaseException as exc:
            self.reply.stream.close()
            if isinstance(exc, OSError):
                return  # the client went away
            raise
        self._receive, self._send = receive, send
        if not detach(scope, self._write, headers_done=True):  # it reads no request header
            await self._write()

    async def _write(self) -> None:
        """The stream's frames, events already waiting joined into one write, until it
        ends, the client leaves or the instance shuts down (:func:`end_streams`)."""
        receive, send, reply, heartbeat = self._receive, self._send, self.reply, self.heartbeat
        self._receive = self._send = None
        first, self._first = self._first, _NOTHING
        stream = reply.stream
        loop = asyncio.get_running_loop()
        checked = opened = loop.time()
        record = metrics.enabled()
        if record:
            metrics.STREAMS_OPEN.inc()
        sent = 0
        last = b""  # the stream's last frame, written with its end (one write, not two)
        try:
            limit = asyncio.timeout(None)
            try:
                async with limit:
                    _open.add(limit)
                    if _ending:
                        limit.reschedule(loop.time())
                    while True:
                        if first is not _NOTHING:
                            (frame, sent, end), first = first, _NOTHING
                        else:
                            frame, sent, end = await _frame(reply, heartbeat, sent)
                        if frame:
                            now = loop.time()
                            if now - checked >= heartbeat:
                                checked = now
                                if client_gone(receive):
                                    return
                            if end:
                                last = frame
                                break
                            await send(
                                {"type": "http.response.body", "body": frame, "more_body": True}
                            )
                            frame = b""
                        if end:
                            break
            except TimeoutError:
                pass  # end_streams(): the instance shuts down; the client resumes elsewhere
            finally:
                _open.discard(limit)
            await send({"type": "http.response.body", "body": last, "more_body": False})
        except OSError:
            pass  # the client went away mid-write
        finally:
            stream.close()
            if sent and metrics.enabled():
                metrics.STREAM_EVENTS.inc(sent)
            if record:
                metrics.STREAMS_OPEN.dec()
                metrics.STREAM_SECONDS.observe(loop.time() - opened)


_RAW_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8")] + [
    (k.lower().encode(), v.encode()) for k, v in SSE_HEADERS.items()
]


#: No frame read yet.
_NOTHING: tuple[bytes, int, bool] = (b"", 0, False)


async def _frame(reply: SseReply, heartbeat: float, sent: int) -> tuple[bytes, int, bool]:
    """(the next frame, events sent so far, whether the stream ends after it): the events
    already waiting joined, a keep-alive comment after ``heartbeat`` quiet seconds, or an
    ``event: error`` that ends the stream.  Its frame lives only while it waits: no
    encoded event or chunk is held by an idle stream."""
    stream = reply.stream
    chunk: list[bytes] = []
    try:
        event = await stream.next(heartbeat)
        if event is None:
            return b": keep-alive\n\n", sent, False
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
        return b"".join(chunk), sent, True
    except Exception as exc:
        err = protocol_error(exc, f"stream of task {stream.task_id}")
        chunk.append(b"event: error\ndata: " + reply.encode_error(err) + b"\n\n")
        return b"".join(chunk), sent, True
    return b"".join(chunk), sent, False


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
