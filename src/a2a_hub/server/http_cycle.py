"""One HTTP/1.1 request and its answer on a connection of ``a2a-hub serve`` (issue 29).

uvicorn's ``RequestResponseCycle`` is the ASGI side of one request: the app's ``receive``
and ``send``, the response's status line, headers and body written to the socket.  About a
third of a ``SendMessage``'s CPU was uvicorn's per-request work, much of it in layers a
request of the hub does not need.  :class:`Cycle` is the same object for the hub's
connections (:class:`~a2a_hub.server.http_protocol.HeaderTimeoutProtocol` makes one per
request), with what uvicorn's protocol reads of it kept (``body``, ``more_body``,
``response_complete``, ``disconnected``, ``keep_alive``, ``message_event``) and:

* **one write per answer**: the header block of a response with a ``Content-Length`` is
  held and written with its first body bytes (or at its end: a ``HEAD`` answer; or before
  a close), in one ``send()``; so is a stream's that says its first bytes follow at once
  (its scope's :data:`~a2a_hub.server.scope.STREAM_KEY` set to
  :data:`~a2a_hub.server.scope.JOINED`: an SSE stream whose first events were ready); any
  other stream's headers leave at once;
* **the headers checked in two searches**: uvicorn's two patterns (no control character
  or separator in a name, no control character but a tab in a value) searched once over
  all names and once over all values, not twice per header;
* **no middleware coroutines around the app**: the cycle runs a detached rest itself
  (what :class:`~a2a_hub.server.detached.DetachedRunner` does), and the protocol leaves
  out uvicorn's proxy-headers middleware for a request that has no ``X-Forwarded-For`` or
  ``X-Forwarded-Proto`` header (it changes nothing then);
* **a body that came whole is handed over as it came** (no ``bytearray`` and copy), and
  the app's wait for it is a :class:`Signal` (a flag and one future while awaited), not an
  ``asyncio.Event`` (a dict and a deque, kept as long as a stream).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    RequestResponseCycle,
)
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

from a2a_hub.server.detached import begin_detached, end_detached, take_detached
from a2a_hub.server.scope import JOINED, STREAM_KEY

__all__ = ["Cycle", "Signal"]

#: The largest body joined to its header block in one buffer (larger ones are not copied).
JOIN_MAX = 64 * 1024


class Signal:
    """What uvicorn's protocol and a cycle need of an ``asyncio.Event``: a flag, and the
    futures of those waiting for it (a list made at the first wait; an ``Event`` keeps a
    deque, 600 bytes, and a dict for as long as a stream)."""

    __slots__ = ("flag", "waiters")

    def __init__(self) -> None:
        self.flag = False
        self.waiters: list[asyncio.Future[None]] | None = None

    def set(self) -> None:
        if not self.flag:
            self.flag = True
            if self.waiters:
                for waiter in self.waiters:
                    if not waiter.done():
                        waiter.set_result(None)

    def clear(self) -> None:
        self.flag = False

    def is_set(self) -> bool:
        return self.flag

    async def wait(self) -> None:
        """As ``Event.wait``: each waiter has its own future (a waiter cancelled, or a
        coroutine dropped while it waited, takes only its own)."""
        if self.flag:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self.waiters
        if waiters is None:
            waiters = self.waiters = []
        waiters.append(waiter)
        try:
            await waiter
        finally:
            waiters.remove(waiter)


class Cycle(RequestResponseCycle):
    """uvicorn's request cycle, leaner (module docstring)."""

    def __init__(self, protocol: Any, scope: Any, keep_alive: bool, expect_100: bool) -> None:
        # uvicorn's attributes, set from the protocol rather than passed one by one
        self.scope = scope
        self.transport = protocol.transport
        self.flow = protocol.flow
        self.logger = protocol.logger
        self.access_logger = protocol.access_logger
        self.access_log = protocol.access_log
        self.default_headers = protocol.server_state.default_headers
        self.message_event = Signal()  # type: ignore[assignment]
        self.on_response = protocol.on_response_complete
        self.disconnected = False
        self.keep_alive = keep_alive
        self.waiting_for_100_continue = expect_100
        #: The request body not yet received by the app (bytes as they came; a
        #: ``bytearray`` once a second piece is added to a first).
        self.body = b""  # type: ignore[assignment]
        self.more_body = True
        self.response_started = False
        self.response_complete = False
        self.chunked_encoding: bool | None = None
        self.expected_content_length = 0
        #: The response's header block, held for its first body bytes (``None``: none).
        self.held: bytes | None = None

    def add_body(self, piece: bytes) -> int:
        """A piece of the request body came: kept for the app; the bytes kept now."""
        body: Any = self.body
        if not body:
            self.body = piece  # type: ignore[assignment]
        else:
            if not isinstance(body, bytearray):
                body = self.body = bytearray(body)
            body += piece
        return len(self.body)

    async def run_asgi(self, app: Any) -> None:
        """uvicorn's, with the detached runner's work (a stream's rest runs here, after
        the app and its middleware have returned)."""
        scope = self.scope
        begin_detached(scope)
        try:
            result = await app(scope, self.receive, self.send)
            rest = take_detached(scope)
            if rest is not None:
                await rest()
        except BaseException as exc:
            end_detached(scope)
            self.logger.error("Exception in ASGI application\n", exc_info=exc)
            if not self.response_started:
                await self.send_500_response()
            else:
                self._close()
        else:
            if result is not None:
                msg = "ASGI callable should return None, but returned '%s'."
                self.logger.error(msg, result)
                self._close()
            elif not self.response_started and not self.disconnected:
                self.logger.error("ASGI callable returned without starting response.")
                await self.send_500_response()
            elif not self.response_complete and not self.disconnected:
                self.logger.error("ASGI callable returned without completing response.")
                self._close()
        finally:
            self.on_response = _nothing

    def _close(self) -> None:
        """Close the connection, the header block held (if any) written first."""
        self.flush()
        self.transport.close()

    def flush(self) -> None:
        """Write the header block held, if any."""
        held = self.held
        if held is not None:
            self.held = None
            self.transport.write(held)

    async def send(self, message: Any) -> None:
        if self.flow.write_paused and not self.disconnected:
            await self.flow.drain()
        if self.disconnected:
            return
        if not self.response_started:
            if message["type"] != "http.response.start":
                raise RuntimeError(
                    f"Expected ASGI message 'http.response.start', but got '{message['type']}'."
                )
            self._start(message)
        elif not self.response_complete:
            if message["type"] != "http.response.body":
                raise RuntimeError(
                    f"Expected ASGI message 'http.response.body', but got '{message['type']}'."
                )
            self._body(message.get("body", b""), message.get("more_body", False))
        else:
            kind = message["type"]
            raise RuntimeError(
                f"Unexpected ASGI message '{kind}' sent, after response already completed."
            )

    def _start(self, message: Any) -> None:
        """The status line and headers: written at once, or held for the body."""
        self.response_started = True
        self.waiting_for_100_continue = False
        status = message["status"]
        if self.access_log:
            scope = self.scope
            self.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(scope),
                scope["method"],
                get_path_with_query_string(scope),
                scope["http_version"],
                status,
            )
        content = [STATUS_LINE[status]]
        for name, value in self.default_headers:  # the server's own (date, server)
            content += (name, b": ", value, b"\r\n")
        close = False
        for name, value in message.get("headers", ()):
            name = name.lower()
            if name == b"content-length":
                if self.chunked_encoding is None:
                    self.expected_content_length = int(value.decode())
                    self.chunked_encoding = False
            elif name == b"transfer-encoding":
                if value.lower() == b"chunked":
                    self.expected_content_length = 0
                    self.chunked_encoding = True
            elif name == b"connection" and b"close" in [
                token.lower().strip() for token in value.split(b",")
            ]:
                self.keep_alive = False
                close = True
            content += (name, b": ", value, b"\r\n")
        # every name and every value checked at once (uvicorn's two patterns are character
        # classes: a search of the joined names finds what a search of each would)
        if HEADER_RE.search(b"".join(content[1::4])):
            raise RuntimeError("Invalid HTTP header name.")
        if HEADER_VALUE_RE.search(b"".join(content[3::4])):
            raise RuntimeError("Invalid HTTP header value.")
        if not self.keep_alive and not close:
            content.append(b"connection: close\r\n")
        if (
            self.chunked_encoding is None
            and self.scope["method"] != "HEAD"
            and status != 204
            and status != 304
        ):
            self.chunked_encoding = True
            content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        block = b"".join(content)
        if self.chunked_encoding is not True or self.scope.get(STREAM_KEY) is JOINED:
            self.held = block  # written with the first body bytes
        else:
            self.transport.write(block)

    def _body(self, body: bytes, more_body: bool) -> None:
        """A piece of the body (the header block held, if any, in the same write)."""
        if self.scope["method"] == "HEAD":
            self.expected_content_length = 0
            data = b""
        elif self.chunked_encoding:
            data = b"%x\r\n%b\r\n" % (len(body), body) if body else b""
            if not more_body:
                data += b"0\r\n\r\n"
        else:
            size = len(body)
            if size > self.expected_content_length:
                raise RuntimeError("Response content longer than Content-Length")
            self.expected_content_length -= size
            data = body
        held = self.held
        if held is not None:
            self.held = None
            if len(data) > JOIN_MAX:  # a large body is not copied to save a system call
                self.transport.write(held)
            else:
                data = held + data
        if data:
            self.transport.write(data)
        if not more_body:
            if self.expected_content_length != 0:
                raise RuntimeError("Response content shorter than Content-Length")
            self.response_complete = True
            self.message_event.set()
            if not self.keep_alive:
                self.transport.close()
            self.on_response()

    async def receive(self) -> Any:
        if self.waiting_for_100_continue and not self.transport.is_closing():
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.waiting_for_100_continue = False
        if not self.disconnected and not self.response_complete:
            self.flow.resume_reading()
            event = self.message_event
            if not event.is_set():
                await event.wait()
            event.clear()
        if self.disconnected or self.response_complete:
            return {"type": "http.disconnect"}
        body: Any = self.body
        self.body = b""  # type: ignore[assignment]
        if isinstance(body, bytearray):
            body = bytes(body)
        return {"type": "http.request", "body": body, "more_body": self.more_body}


def _nothing() -> None:
    pass
