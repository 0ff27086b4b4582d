"""What one HTTP connection of :mod:`a2a_hub.server.connections` keeps besides uvicorn's
protocol: its timers and the writer of its responses (issue 29).

* :class:`HeadersDue`: the header deadline (an entry of the loop's timer wheel), the
  keep-alive timer and the writer,
  one attribute of the protocol (a 30th attribute would turn the protocol's 300-byte
  shared-key ``__dict__`` into a 1,600-byte one);
* :class:`JoinedWrites`: the transport as uvicorn's request cycles see it, holding the
  header block of a response with a ``Content-Length`` (or of a stream that says its first
  bytes follow at once, :data:`~a2a_hub.server.scope.JOINED`) until its first body
  bytes, to write both in one ``send()``;
* :class:`MovingTimer` and :class:`ConnectionLoop`: uvicorn's keep-alive timeout as one
  loop timer per connection that moves to the latest deadline, instead of a timer
  scheduled at each response and cancelled at the next request.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from a2a_hub.server.scope import JOINED, STREAM_KEY

__all__ = ["ConnectionLoop", "HeadersDue", "JoinedWrites", "MovingTimer", "connection_loop"]


class JoinedWrites:
    """A connection's transport as uvicorn's request cycles see it: the header block of a
    response with a Content-Length is held until its first body bytes (or its end, or the
    connection's close) and written with them, in one ``send()`` (module docstring)."""

    __slots__ = ("headed", "held", "protocol", "transport")

    def __init__(self, protocol: Any, transport: asyncio.Transport) -> None:
        #: The connection's protocol (``None`` once the connection is lost).
        self.protocol: Any | None = protocol
        self.transport = transport
        #: The header block held (``None``: nothing held).
        self.held: bytes | None = None
        #: The last cycle whose header block came through (its later writes are its body).
        self.headed: Any = None

    def write(self, data: bytes) -> None:
        held = self.held
        if held is not None:
            self.held = None
            if len(data) <= _JOIN_MAX:
                self.transport.write(held + data)
            else:  # a large body is not copied to save a system call
                self.transport.write(held)
                self.transport.write(data)
            return
        cycle = None if self.protocol is None else self.protocol.cycle
        if (
            cycle is not None
            and cycle is not self.headed
            and cycle.response_started
            and not cycle.response_complete
        ):
            self.headed = cycle  # this is its header block: what comes next is its body
            if cycle.chunked_encoding is False or cycle.scope.get(STREAM_KEY) is JOINED:
                self.held = data
                return
        self.transport.write(data)

    def flush(self) -> None:
        held = self.held
        if held is not None:
            self.held = None
            self.transport.write(held)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


#: The largest body joined to its header block in one buffer (larger ones are not copied).
_JOIN_MAX = 64 * 1024


class HeadersDue:
    """A connection's header deadline, its entry in the loop's timer wheel (``due`` is
    ``inf`` while no headers are awaited), and its keep-alive timer and the writer of its
    responses (here rather than attributes of the protocol: a 30th attribute would turn its
    300-byte shared-key ``__dict__`` into a 1,600-byte one)."""

    __slots__ = ("due", "idle", "protocol", "slot", "writer")

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol
        self.due = math.inf
        self.slot: tuple[float, int] | None = None
        self.writer: JoinedWrites | None = None
        #: uvicorn's keep-alive timeout between requests (made at the first response).
        self.idle: MovingTimer | None = None

    def expire(self) -> None:
        """The wheel's call: headers were awaited past their deadline."""
        self.protocol._headers_late()


class MovingTimer:
    """uvicorn's keep-alive timer of one connection, as a ``TimerHandle`` to uvicorn: one
    loop timer that moves to the latest deadline when it fires, instead of one scheduled at
    each response and cancelled at the next request (2 % of a ``SendMessage``'s samples)."""

    __slots__ = ("callback", "deadline", "loop", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
        self.loop = loop
        self.callback = callback
        self.deadline: float | None = None
        self.timer: asyncio.TimerHandle | None = None

    def arm(self, delay: float) -> MovingTimer:
        self.deadline = due = self.loop.time() + delay
        if self.timer is None:
            self.timer = self.loop.call_at(due, self._fire)
        return self

    def cancel(self) -> None:
        """As ``TimerHandle.cancel``: the callback is not called (the loop timer stays,
        to move to the next deadline)."""
        self.deadline = None

    def stop(self) -> None:
        """Cancel the loop timer too and let go of the callback (the connection is gone)."""
        self.deadline = None
        self.callback = _nothing
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _fire(self) -> None:
        self.timer = None
        deadline = self.deadline
        if deadline is None:
            return
        if self.loop.time() < deadline:
            self.timer = self.loop.call_at(deadline, self._fire)
            return
        self.deadline = None
        self.callback()


class ConnectionLoop:
    """The event loop as uvicorn's HTTP protocol sees it: ``call_later`` of a connection's
    keep-alive handler arms that connection's :class:`MovingTimer`; everything else is the
    loop's own (one per loop, shared by the connections)."""

    __slots__ = ("call_at", "create_task", "loop", "time")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        # the loop's own bound methods: no call of this object's in between
        self.create_task = loop.create_task
        self.call_at = loop.call_at
        self.time = loop.time

    def call_later(self, delay: float, callback: Any, *args: Any, context: Any = None) -> Any:
        due = getattr(getattr(callback, "__self__", None), "headers_due", None)
        if (
            not args
            and getattr(callback, "__func__", None) is _KEEP_ALIVE
            and isinstance(due, HeadersDue)
        ):
            if due.idle is None:
                due.idle = MovingTimer(self.loop, callback)
            return due.idle.arm(delay)
        return self.loop.call_later(delay, callback, *args, context=context)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loop, name)


_KEEP_ALIVE = HttpToolsProtocol.timeout_keep_alive_handler


def _nothing() -> None:
    pass


_loops: dict[asyncio.AbstractEventLoop, ConnectionLoop] = {}


def connection_loop(loop: asyncio.AbstractEventLoop) -> ConnectionLoop:
    """The :class:`ConnectionLoop` of ``loop``."""
    found = _loops.get(loop)
    if found is None:
        if len(_loops) >= 8:  # loops of earlier runs (tests): not kept for ever
            _loops.clear()
        found = _loops[loop] = ConnectionLoop(loop)
    return found
