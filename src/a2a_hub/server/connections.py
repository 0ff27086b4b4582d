"""Slow clients: a connection must send a request's headers within ``header_timeout``.

uvicorn closes a keep-alive connection that idles between requests
(``timeout_keep_alive``), but a connection that sends nothing after it opens, or stops
in the middle of its headers, stays open forever: a few hundred of them hold sockets
and file descriptors until the process runs out.  :class:`HeaderTimeoutProtocol` is
uvicorn's httptools protocol with one more timer: armed when the connection opens and
when a request's first byte arrives, disarmed when its headers are complete; when it
fires with headers still awaited past their deadline the connection is closed (a timer
left pending by an earlier request moves to the later deadline instead of being cancelled
and scheduled anew for each request).  A request's body and its streamed answer (SSE) are not
limited by it.  ``a2a-hub serve`` passes it to uvicorn with :func:`uvicorn_options`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HeaderTimeoutProtocol", "uvicorn_options"]

log = logging.getLogger("a2a_hub.server")

#: The attribute of uvicorn's ``Config`` carrying the timeout to each connection.
_CONFIG_ATTR = "a2a_hub_header_timeout"


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools HTTP/1.1 protocol, closing connections whose headers do not come."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.header_timeout: float = getattr(config, _CONFIG_ATTR, 0.0)
        self.header_timer: asyncio.TimerHandle | None = None
        #: When the awaited headers are late (``None``: none awaited).
        self.header_deadline: float | None = None

    def _arm(self) -> None:
        """Await headers: a timer is scheduled only if none is pending (one left by an
        earlier request reschedules itself to the new deadline when it fires), so that a
        busy kept-alive connection does not schedule and cancel one per request."""
        if self.header_timeout > 0:
            self.header_deadline = self.loop.time() + self.header_timeout
            if self.header_timer is None:
                self.header_timer = self.loop.call_at(self.header_deadline, self._headers_late)

    def _disarm(self) -> None:
        self.header_deadline = None

    def _headers_late(self) -> None:
        self.header_timer = None
        deadline = self.header_deadline
        if deadline is None:
            return  # the headers came; the next request arms a timer again
        if self.loop.time() < deadline:  # a later request's headers: wait for them
            self.header_timer = self.loop.call_at(deadline, self._headers_late)
            return
        if not self.transport.is_closing():
            log.debug(
                "closed %s: no complete request headers within %gs",
                self.client,
                self.header_timeout,
            )
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self.header_deadline = None
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()  # a later request on a kept-alive connection: its headers are timed too

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()


def uvicorn_options(config: Any, header_timeout: float) -> None:
    """Make uvicorn ``config`` serve HTTP/1.1 with :class:`HeaderTimeoutProtocol`."""
    config.http = HeaderTimeoutProtocol
    setattr(config, _CONFIG_ATTR, header_timeout)
