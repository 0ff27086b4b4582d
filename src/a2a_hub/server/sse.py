"""Server-Sent Events: one task stream written in the shape of one protocol version.

Each event carries ``id: <seq>`` (the task's event number), so a client that
reconnects with ``Last-Event-ID`` gets exactly what it missed.  A comment line
is sent after ``heartbeat`` idle seconds so that proxies keep the stream open.
An error after the stream has started is sent as an ``event: error`` and ends it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import msgspec
from starlette.responses import StreamingResponse

from a2a_hub.engine.stream import TaskStream
from a2a_hub.protocol.errors import A2AError, InternalError
from a2a_hub.stores.base import TaskEvent

__all__ = ["SseReply", "encoded_event", "sse_response"]

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


def sse_response(reply: SseReply, heartbeat: float) -> StreamingResponse:
    """The streaming HTTP response of ``reply``."""
    return StreamingResponse(
        _frames(reply, heartbeat), media_type="text/event-stream", headers=SSE_HEADERS
    )


async def _frames(reply: SseReply, heartbeat: float) -> AsyncIterator[bytes]:
    stream = reply.stream
    try:
        while True:
            try:
                event = await stream.next(heartbeat)
            except StopAsyncIteration:
                return
            except A2AError as err:
                yield b"event: error\ndata: " + reply.encode_error(err) + b"\n\n"
                return
            except Exception:
                log.exception("stream of task %s failed", stream.task_id)
                yield b"event: error\ndata: " + reply.encode_error(InternalError()) + b"\n\n"
                return
            if event is None:
                yield b": keep-alive\n\n"
                continue
            data = reply.encode(event)
            if data is None:
                continue
            if event.seq:
                yield b"id: %d\ndata: %b\n\n" % (event.seq, data)
            else:
                yield b"data: %b\n\n" % data
    finally:
        stream.close()
