"""Slow clients: a connection must send a request's headers within ``header_timeout``.

uvicorn closes a keep-alive connection that idles between requests
(``timeout_keep_alive``), but a connection that sends nothing after it opens, or stops
in the middle of its headers, stays open forever: a few hundred of them hold sockets
and file descriptors until the process runs out.  :class:`HeaderTimeoutProtocol` is
uvicorn's httptools protocol with one more deadline: armed when the connection opens and
when a request's first byte arrives, disarmed when its headers are complete; when it
comes with headers still awaited the connection is closed.  The deadline is an entry in
the loop's shared timer wheel (:class:`a2a_hub.engine.pubsub.Wheel`: no loop timer per
connection; a connection may be closed up to a tick, a second for 8 s or more, late), left
in its slot when the headers come and moved on by the next request (a busy kept-alive
connection does not leave and re-enter the wheel per request).  A request's body and its
streamed answer (SSE) are not limited by it.  ``a2a-hub serve`` passes it to uvicorn
with :func:`uvicorn_options`.

Both protocols (HTTP and WebSocket) are also trimmed for connections that stay open
(idle SSE subscriptions and WebSockets, issue 29): the app they call is wrapped in
:class:`~a2a_hub.server.detached.DetachedRunner`, so that a stream or socket runs below
uvicorn's own coroutine only (not below its proxy-headers middleware and Starlette's
outer layers); the per-connection asyncio events wait with a list, not a
``deque`` (an empty deque is 600 bytes: its first block); the pipeline of requests
waiting behind the current one is a list too; a WebSocket's incoming messages wait in
a :class:`_Inbox` (one list, one future while read) instead of an ``asyncio.Queue``
(three deques), its handshake's request and response are dropped once sent (the request's
headers emptied: websockets' frame parser keeps the request itself), and its
keep-alive ping is timed by the loop's shared timer wheel (:class:`a2a_hub.engine.pubsub.Wheel`).

A response with a ``Content-Length`` goes out in one write (issue 29): uvicorn writes its
status line and headers, then its body, each with its own ``send()`` (two system calls
and two TCP segments for a small JSON answer, 16 % of the server's CPU in a profile of
``SendMessage``).  Its request cycles write through a :class:`_JoinedWrites` instead,
which holds such a response's header block and writes it with the first body bytes that
follow (at once in Starlette's responses and the front's), or when the response
completes or the connection is closed, whichever comes first.  A stream (chunked) is held
so only when it says its first bytes follow at once (its scope's ``STREAM_KEY`` set to
``JOINED``: an SSE stream whose first events were ready,
:class:`~a2a_hub.server.sse.SseResponse`); any other's headers are written at once, as
before.
"""

from __future__ import annotations

import asyncio
import logging
import math
import weakref
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.datastructures import Headers
from websockets.exceptions import InvalidState
from websockets.http11 import Request

from a2a_hub.engine.pubsub import wheel
from a2a_hub.server.connection_parts import HeadersDue, JoinedWrites, connection_loop
from a2a_hub.server.detached import DetachedRunner

__all__ = ["DIRECT_WRITE", "HeaderTimeoutProtocol", "SlimWebSocketProtocol", "uvicorn_options"]

#: The key in a WebSocket scope's ``extensions`` of its protocol (a weak reference): the
#: app's sockets write their text frames through :meth:`SlimWebSocketProtocol.write_text`
#: when they can.
DIRECT_WRITE = "a2a_hub.ws_protocol"

log = logging.getLogger("a2a_hub.server")
_UVICORN_LOG = logging.getLogger("uvicorn.error")

#: The attribute of uvicorn's ``Config`` carrying the timeout to each connection.
_CONFIG_ATTR = "a2a_hub_header_timeout"
#: The attribute of uvicorn's ``Config`` caching the app wrapped for the protocols.
_APP_ATTR = "a2a_hub_detached_app"


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools HTTP/1.1 protocol, closing connections whose headers do not come."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        #: The header deadline, the keep-alive timer and the writer, one attribute (see
        #: ``url`` below).
        self.headers_due = HeadersDue(self)
        self.loop = connection_loop(self.loop)  # type: ignore[assignment]
        self.app = _detached_app(config)
        self.pipeline = _Pipeline()  # type: ignore[assignment]
        # set here, not first by uvicorn's on_message_begin: a 30th attribute added later
        # turns the instance's 300-byte shared-key dict into a 1,600-byte one of its own
        self.url = b""

    @property
    def header_timeout(self) -> float:
        """Seconds a request's headers may take (from uvicorn's config: one attribute
        less on each connection keeps its ``__dict__`` small)."""
        timeout: float = getattr(self.config, _CONFIG_ATTR, 0.0)
        return timeout

    def _arm(self) -> None:
        """Await headers: the connection's entry in the loop's timer wheel (one loop timer
        per tick shared by every connection, no timer each) is due ``header_timeout`` from
        now; an entry still in the wheel (a busy kept-alive connection) only moves."""
        if self.header_timeout > 0:
            wheel().arm(self.headers_due, self.header_timeout)

    def _disarm(self) -> None:
        # the headers came: the entry stays in its slot until that tick, and goes then
        # (a busy kept-alive connection does not leave and re-enter the wheel per request)
        self.headers_due.due = math.inf

    def _headers_late(self) -> None:
        """The wheel's call when headers were awaited past their deadline: close."""
        if not self.transport.is_closing():
            log.debug(
                "closed %s: no complete request headers within %gs",
                self.client,
                self.header_timeout,
            )
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.headers_due.writer = JoinedWrites(self, transport)
        _slim_event(self.flow._is_writable_event)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)

    def _stop_header_timer(self) -> None:
        """Stop the connection's timers and let go of its writer: the connection is gone,
        or the WebSocket protocol's (a timer left pending, or the writer's reference back,
        would keep this protocol and all it holds alive)."""
        due = self.headers_due
        if due.slot is not None:
            wheel().disarm(due)
        if due.idle is not None:  # uvicorn cancels its keep-alive only on a clean close
            due.idle.stop()
            due.idle = None
        writer = due.writer
        if writer is not None:  # nothing more to write through it
            writer.held = writer.headed = writer.protocol = None

    def handle_websocket_upgrade(self) -> None:
        self._stop_header_timer()  # the socket is the WebSocket protocol's from now on
        super().handle_websocket_upgrade()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()  # a later request on a kept-alive connection: its headers are timed too

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None:
            _slim_event(cycle.message_event)
            writer = self.headers_due.writer
            if cycle.transport is self.transport and writer is not None:
                cycle.transport = writer  # type: ignore[assignment]

    def on_response_complete(self) -> None:
        writer = self.headers_due.writer
        if writer is not None and writer.held is not None:
            writer.flush()  # a response whose body was never written (HEAD)
        super().on_response_complete()


class _Same:
    """An attribute uvicorn gives every connection, always the same value: read from the
    config (its assignment in uvicorn's ``__init__`` is ignored).  uvicorn's WebSocket
    protocol has 37 attributes; over about 30 an instance's ``__dict__`` no longer shares
    its keys with the others' and grows from 300 to 1,600 bytes."""

    def __init__(self, get: Callable[[Any], Any]) -> None:
        self.get = get

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self if obj is None else self.get(obj)

    def __set__(self, obj: Any, value: Any) -> None:
        pass


class SlimWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, trimmed for sockets that stay open (module docstring)."""

    app = _Same(lambda self: _detached_app(self.config))
    loop = _Same(lambda self: asyncio.get_event_loop())
    logger = _Same(lambda self: _UVICORN_LOG)
    root_path = _Same(lambda self: self.config.root_path)
    asgi_version = _Same(lambda self: self.config.asgi_version)
    ping_interval = _Same(lambda self: self.config.ws_ping_interval)
    ping_timeout = _Same(lambda self: self.config.ws_ping_timeout)
    close_timeout = _Same(lambda self: 10.0)  # uvicorn's constant

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.queue = _Inbox()  # type: ignore[assignment]
        _slim_event(self.writable)

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None:  # weak: the protocol holds the scope
            # in the small extensions dict: a key more in the scope could grow its table
            scope["extensions"][DIRECT_WRITE] = weakref.ref(self)

    def write_text(self, data: bytes) -> bool:
        """Send one text frame at once, as the ASGI ``websocket.send`` would, when that
        needs no wait: the socket open, its handshake done and its transport not paused
        (a client that does not read).  ``False``: it was not sent; the caller sends it
        the ASGI way (which waits for room, and reports a socket that went away).  One
        event to many sockets is then a frame and a write each, not five layers of
        coroutines each."""
        if (
            not self.handshake_complete
            or self.close_sent
            or self.disconnected
            or self.initial_response is not None
            or not self.writable.is_set()
        ):
            return False
        try:
            self.conn.send_text(data)
        except InvalidState:
            return False
        self.transport.write(b"".join(self.conn.data_to_send()))
        return True

    def schedule_ping(self) -> None:
        """uvicorn's keep-alive ping, timed by the loop's shared timer wheel (no timer of
        its own per socket; a ping may go out up to a second late)."""
        assert self.ping_interval is not None
        delay = max(0.0, self.ping_interval - self.last_ping_rtt)
        timer = _WheelTimer(self.send_keepalive_ping)
        wheel().arm(timer, delay)
        self.ping_timer = timer  # type: ignore[assignment]  # cancel() is all uvicorn calls

    async def send(self, message: Any) -> None:
        await super().send(message)
        if self.handshake_complete and getattr(self, "request", None) is not None:
            _release_request(self.request)
            self.request = self.response = None  # type: ignore[assignment]
            # the extensions offered were negotiated (the one chosen, if any, is the
            # connection's ``extensions``): uvicorn's factory for each socket can go
            if getattr(self.conn, "available_extensions", None):
                self.conn.available_extensions = []


class _WheelTimer:
    """A callback at an entry of the timer wheel; ``cancel()`` as a ``TimerHandle``'s."""

    __slots__ = ("callback", "due", "slot")

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback
        self.due = math.inf
        self.slot: tuple[float, int] | None = None

    def expire(self) -> None:
        self.callback()

    def cancel(self) -> None:
        if self.slot is not None:
            wheel().disarm(self)


class _Pipeline(list[Any]):
    """The requests pipelined behind the current one (nearly always none): a list."""

    __slots__ = ()

    def appendleft(self, item: Any) -> None:
        self.insert(0, item)


class _Inbox:
    """What uvicorn's WebSocket protocol needs of an ``asyncio.Queue``, in one list."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> Any:
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._items.pop(0)

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)


def _release_request(request: Any) -> None:
    """Empty the handshake request's headers: websockets' parser keeps the request in a
    local of the generator that goes on to parse every frame of the connection, so it
    lives as long as the socket (its headers were about 2 KiB of an idle one).  uvicorn
    copied them into the ASGI scope before the app ran; nothing reads them after."""
    headers = getattr(request, "headers", None)
    if isinstance(headers, Headers):
        headers.clear()


def _slim_event(event: asyncio.Event) -> None:
    """An ``asyncio.Event`` whose waiters are a list (it only appends, removes and
    iterates them) rather than a ``deque``."""
    if not getattr(event, "_waiters", None):
        event._waiters = []  # type: ignore[assignment]


def _detached_app(config: Any) -> Any:
    """uvicorn's app of ``config`` inside a :class:`DetachedRunner` (one per config)."""
    app = getattr(config, _APP_ATTR, None)
    if app is None:
        app = DetachedRunner(config.loaded_app)
        setattr(config, _APP_ATTR, app)
    return app


def uvicorn_options(config: Any, header_timeout: float) -> None:
    """Make uvicorn ``config`` serve HTTP/1.1 with :class:`HeaderTimeoutProtocol` and
    WebSockets with :class:`SlimWebSocketProtocol`."""
    config.http = HeaderTimeoutProtocol
    config.ws = SlimWebSocketProtocol
    setattr(config, _CONFIG_ATTR, header_timeout)
