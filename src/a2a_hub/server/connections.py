"""The protocols ``a2a-hub serve`` gives uvicorn (:func:`uvicorn_options`).

HTTP/1.1 is :class:`~a2a_hub.server.http_protocol.HeaderTimeoutProtocol` (a header deadline
for slow clients, a leaner path for each request: see its module).  WebSockets are
:class:`SlimWebSocketProtocol`, uvicorn's trimmed for sockets that stay open (issue 29):
the app it calls is wrapped in :class:`~a2a_hub.server.detached.DetachedRunner`, so that a
socket runs below uvicorn's own coroutine only (not below its proxy-headers middleware and
Starlette's outer layers); its asyncio events wait with a list, not a ``deque`` (an empty
deque is 600 bytes: its first block); its incoming messages wait in a :class:`_Inbox`
(one list, one future while read) instead of an ``asyncio.Queue`` (three deques), its
handshake's request and response are dropped once sent (the request's headers emptied:
websockets' frame parser keeps the request itself), and its keep-alive ping is timed by
the loop's shared timer wheel (:class:`a2a_hub.engine.pubsub.Wheel`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import weakref
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.datastructures import Headers
from websockets.exceptions import InvalidState
from websockets.http11 import Request

from a2a_hub.engine.pubsub import wheel
from a2a_hub.server.connection_parts import slim_event
from a2a_hub.server.detached import DetachedRunner
from a2a_hub.server.http_protocol import CONFIG_ATTR, HeaderTimeoutProtocol

__all__ = ["DIRECT_WRITE", "HeaderTimeoutProtocol", "SlimWebSocketProtocol", "uvicorn_options"]

#: The key in a WebSocket scope's ``extensions`` of its protocol (a weak reference): the
#: app's sockets write their text frames through :meth:`SlimWebSocketProtocol.write_text`
#: when they can.
DIRECT_WRITE = "a2a_hub.ws_protocol"

log = logging.getLogger("a2a_hub.server")
_UVICORN_LOG = logging.getLogger("uvicorn.error")

#: The attribute of uvicorn's ``Config`` caching the app wrapped for the protocols.
_APP_ATTR = "a2a_hub_detached_app"


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
        slim_event(self.writable)

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
    setattr(config, CONFIG_ATTR, header_timeout)
