"""Server-Sent Events: one task stream written in the shape of one protocol version.

Each event carries ``id: <seq>`` (the task's event number), so a client that
reconnects with ``Last-Event-ID`` gets exactly what it missed.  A comment line
is sent after ``heartbeat`` idle seconds so that proxies keep the stream open.
An error after the stream has started is sent as an ``event: error`` and ends it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from starlette.responses import Response

from a2a_hub.engine.stream import TaskStream
from a2a_hub.protocol.errors import A2AError, InternalError
from a2a_hub.stores.base import TaskEvent

__all__ = ["SseReply", "SseResponse", "encoded_event", "sse_response"]

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


log = logging.getLogger("a2a_hub.server")

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@dataclass
class SseReply:
    """A validated stream and how to write its events and errors."""

    stream: TaskStream
    #: The ``data:`` payload of an event, or ``None`` to skip it.
    encode: Callable[[TaskEvent], bytes | None]
    encode_error: Callable[[A2AError], bytes]


class SseResponse(Response):
    """An event stream written straight to the ASGI ``send``.

    Starlette's StreamingResponse runs two tasks in an anyio task group per stream;
    here the stream is written by the request's own task and one small task waits
    for the client to go away (then the writer is cancelled and the subscription
    closed).  That is less memory per idle subscriber and less work per event.
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
        writer = asyncio.current_task()
        gone = asyncio.ensure_future(_wait_disconnect(receive))

        def stop_writer(_: object) -> None:
            if writer is not None:
                writer.cancel()

        gone.add_done_callback(stop_writer)
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async for frame in _frames(self.reply, self.heartbeat):
                await send({"type": "http.response.body", "body": frame, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not gone.done() or writer is None:
                raise  # cancelled by the server, not by the client leaving
            writer.uncancel()
        except OSError:
            pass  # the client went away mid-write
        finally:
            gone.remove_done_callback(stop_writer)
            if not gone.done():
                gone.cancel()
            self.reply.stream.close()


async def _wait_disconnect(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def sse_response(reply: SseReply, heartbeat: float) -> Response:
    """The streaming HTTP response of ``reply``."""
    return SseResponse(reply, heartbeat)


async def _frames(reply: SseReply, heartbeat: float) -> AsyncIterator[bytes]:
    """The stream's frames; events already waiting are joined into one write."""
    stream = reply.stream
    try:
        while True:
            chunk: list[bytes] = []
            try:
                event = await stream.next(heartbeat)
                idle = event is None
                while event is not None:
                    data = reply.encode(event)
                    if data is not None:
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
            except A2AError as err:
                chunk.append(b"event: error\ndata: " + reply.encode_error(err) + b"\n\n")
                yield b"".join(chunk)
                return
            except Exception:
                log.exception("stream of task %s failed", stream.task_id)
                chunk.append(
                    b"event: error\ndata: " + reply.encode_error(InternalError()) + b"\n\n"
                )
                yield b"".join(chunk)
                return
            if chunk:
                yield b"".join(chunk)
            elif idle:
                yield b": keep-alive\n\n"
    finally:
        stream.close()
