"""The HTTP/1.1 connection of ``a2a-hub serve``: uvicorn's httptools protocol, with a
header deadline and a leaner path for each request.

**Slow clients**: a connection must send a request's headers within ``header_timeout``.
uvicorn closes a keep-alive connection that idles between requests
(``timeout_keep_alive``), but a connection that sends nothing after it opens, or stops in
the middle of its headers, stays open forever: a few hundred of them hold sockets and file
descriptors until the process runs out.  :class:`HeaderTimeoutProtocol` has one more
deadline: armed when the connection opens and when a request's first byte arrives,
disarmed when its headers are complete; when it comes with headers still awaited the
connection is closed.  The deadline is an entry in the loop's shared timer wheel
(:class:`a2a_hub.engine.pubsub.Wheel`: no loop timer per connection; a connection may be
closed up to a tick, a second for 8 s or more, late), left in its slot when the headers
come and moved on by the next request (a busy kept-alive connection does not leave and
re-enter the wheel per request).  A request's body and its streamed answer (SSE) are not
limited by it.

**Each request** (issue 29: uvicorn's per-request work was about a third of a
``SendMessage``'s CPU): the protocol's parser callbacks and its response hook are its own,
doing what uvicorn's do in fewer steps; each request's ASGI side is a
:class:`~a2a_hub.server.http_cycle.Cycle` (one write per answer, the detached runner's
work, no ``asyncio.Event``); uvicorn's proxy-headers middleware is left out for a request
without forwarded headers (it changes nothing then); uvicorn's keep-alive timeout is one
timer per connection that moves (:class:`~a2a_hub.server.connection_parts.MovingTimer`),
not one scheduled at each response and cancelled at the next request.

The protocol's ``__dict__`` shares its keys with the other connections' only up to about
30 attributes (then it grows from 300 to 1,600 bytes, for every idle SSE stream): what it
keeps besides uvicorn's attributes is in one :class:`HeadersDue`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import urllib.parse
from typing import Any

import httptools
from starlette.applications import Starlette
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT, service_unavailable
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from a2a_hub.engine.pubsub import wheel
from a2a_hub.server.connection_parts import HeadersDue, MovingTimer, slim_event
from a2a_hub.server.detached import DetachedRunner
from a2a_hub.server.http_cycle import Cycle

__all__ = ["HeaderTimeoutProtocol", "header_timeout_of"]

log = logging.getLogger("a2a_hub.server")

#: The attribute of uvicorn's ``Config`` carrying the header timeout to each connection.
CONFIG_ATTR = "a2a_hub_header_timeout"
#: The attribute of uvicorn's ``Config`` caching where requests enter its app.
_ENTRY_ATTR = "a2a_hub_entry"
#: The headers uvicorn's proxy-headers middleware reads (lower case, as the parser keeps them).
_FORWARDED = (b"x-forwarded-for", b"x-forwarded-proto")


def header_timeout_of(config: Any) -> float:
    """The header timeout a uvicorn ``config`` carries (0: none)."""
    timeout: float = getattr(config, CONFIG_ATTR, 0.0)
    return timeout


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools HTTP/1.1 protocol, closing connections whose headers do not come
    and serving each request through a :class:`Cycle` (module docstring)."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        #: The header deadline and the keep-alive timer, one attribute (see ``url``).
        self.headers_due = HeadersDue(self)
        self.pipeline = _Pipeline()  # type: ignore[assignment]
        # set here, not first by on_message_begin: a 30th attribute added later turns the
        # instance's 300-byte shared-key dict into a 1,600-byte one of its own
        self.url = b""

    @property
    def header_timeout(self) -> float:
        """Seconds a request's headers may take (from uvicorn's config: one attribute
        less on each connection keeps its ``__dict__`` small)."""
        return header_timeout_of(self.config)

    def _arm(self) -> None:
        """Await headers: the connection's entry in the loop's timer wheel (one loop timer
        per tick shared by every connection, no timer each) is due ``header_timeout`` from
        now; an entry still in the wheel (a busy kept-alive connection) only moves."""
        timeout = header_timeout_of(self.config)
        if timeout > 0:
            wheel().arm(self.headers_due, timeout)

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
        slim_event(self.flow._is_writable_event)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)

    def _stop_header_timer(self) -> None:
        """Stop the connection's timers: the connection is gone, or the WebSocket
        protocol's (a timer left pending would keep this protocol and all it holds alive)."""
        due = self.headers_due
        if due.slot is not None:
            wheel().disarm(due)
        if due.idle is not None:  # uvicorn cancels its keep-alive only on a clean close
            due.idle.stop()
            due.idle = None

    def handle_websocket_upgrade(self) -> None:
        self._stop_header_timer()  # the socket is the WebSocket protocol's from now on
        super().handle_websocket_upgrade()

    # the parser's callbacks

    def on_message_begin(self) -> None:
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self.scope = {  # type: ignore[typeddict-item]
            "type": "http",
            "asgi": {"version": self.asgi_version, "spec_version": "2.3"},
            "http_version": "1.1",
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,  # type: ignore[typeddict-item]
            "root_path": self.root_path,
            "headers": self.headers,
            "state": self.app_state.copy(),
        }
        self._arm()  # a later request on a kept-alive connection: its headers are timed too

    def on_headers_complete(self) -> None:
        self.headers_due.due = math.inf  # the headers came (the entry stays in its slot)
        parser = self.parser
        scope = self.scope
        http_version = parser.get_http_version()
        scope["method"] = parser.get_method().decode("ascii")
        if http_version != "1.1":
            scope["http_version"] = http_version
        if parser.should_upgrade() and self._should_upgrade():
            return
        url = httptools.parse_url(self.url)
        raw_path: bytes = url.path
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        root = self.root_path
        if root:
            scope["path"] = root + path
            scope["raw_path"] = root.encode("ascii") + raw_path
        else:
            scope["path"] = path
            scope["raw_path"] = raw_path
        scope["query_string"] = url.query or b""
        app = self.app
        if self.limit_concurrency is not None and (
            len(self.connections) >= self.limit_concurrency
            or len(self.tasks) >= self.limit_concurrency
        ):
            app = service_unavailable
            self.logger.warning("Exceeded concurrency limit.")
        else:
            entry = _entry(self.config)
            if not (entry.proxied and _forwarded(self.headers)):
                # nothing for uvicorn's proxy-headers middleware to read: it would change
                # nothing, and the request enters below it
                if entry.starlette is not None:
                    scope["app"] = entry.starlette  # type: ignore[typeddict-unknown-key]
                app = entry.inner
        previous = self.cycle
        cycle = self.cycle = Cycle(
            self,
            scope,
            keep_alive=http_version != "1.0" and parser.should_keep_alive(),
            expect_100=self.expect_100_continue,
        )
        if previous is None or previous.response_complete:
            self._start_asgi_task(cycle, app)
        else:  # pipelined behind a request still answered
            self.flow.pause_reading()
            self.pipeline.appendleft((cycle, app))

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if getattr(self.config, "reset_contextvars", False):
            super()._start_asgi_task(cycle, app)
            return
        task = self.loop.create_task(cycle.run_asgi(app))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def on_body(self, body: bytes) -> None:
        if self.parser.should_upgrade() and self._should_upgrade():
            return  # (no cycle: the request is the WebSocket protocol's)
        cycle = self.cycle
        if cycle.response_complete:
            return
        if cycle.add_body(body) > HIGH_WATER_LIMIT:  # type: ignore[attr-defined]
            self.flow.pause_reading()
        cycle.message_event.set()

    def on_message_complete(self) -> None:
        if self.parser.should_upgrade() and self._should_upgrade():
            return
        cycle = self.cycle
        if cycle.response_complete:
            return
        cycle.more_body = False
        cycle.message_event.set()

    def on_response_complete(self) -> None:
        """A response went out: the next pipelined request starts, or the connection's
        keep-alive timer moves on."""
        self.server_state.total_requests += 1
        transport = self.transport
        if transport.is_closing():
            return
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            return
        due = self.headers_due
        idle = due.idle
        if idle is None:
            idle = due.idle = MovingTimer(self.loop, self.timeout_keep_alive_handler)
        self.timeout_keep_alive_task = idle.arm(self.timeout_keep_alive)  # type: ignore[assignment]


class _Entry:
    """Where a request without forwarded headers enters uvicorn's app: below its
    proxy-headers middleware (which would change nothing), and, for a Starlette app,
    below Starlette's ``__call__`` and the app's own :class:`DetachedRunner` (which stands
    aside when the cycle runs one), at the middleware stack inside."""

    __slots__ = ("inner", "proxied", "starlette")

    def __init__(self, app: Any) -> None:
        #: uvicorn's app has its proxy-headers middleware around it.
        self.proxied = type(app) is ProxyHeadersMiddleware
        if self.proxied:
            app = app.app
        #: The Starlette app whose stack is entered (``None``: another kind of app).
        self.starlette: Starlette | None = None
        if isinstance(app, Starlette) and type(app).__call__ is Starlette.__call__:
            if app.middleware_stack is None:  # built by its first call, as Starlette does
                app.middleware_stack = app.build_middleware_stack()
            self.starlette = app
            app = app.middleware_stack
            if type(app) is DetachedRunner:
                app = app.app
        #: The app called.
        self.inner: Any = app


def _forwarded(headers: list[tuple[bytes, bytes]]) -> bool:
    """The request has a header uvicorn's proxy-headers middleware reads."""
    for name, _ in headers:  # noqa: SIM110  (a loop: no generator per request)
        if name in _FORWARDED:
            return True
    return False


def _entry(config: Any) -> _Entry:
    """The :class:`_Entry` of uvicorn's ``config`` (made at its first request)."""
    entry: _Entry | None = getattr(config, _ENTRY_ATTR, None)
    if entry is None:
        entry = _Entry(config.loaded_app)
        setattr(config, _ENTRY_ATTR, entry)
    return entry


class _Pipeline(list[Any]):
    """The requests pipelined behind the current one (nearly always none): a list."""

    __slots__ = ()

    def appendleft(self, item: Any) -> None:
        self.insert(0, item)
