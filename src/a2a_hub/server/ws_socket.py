"""The sending side of a server WebSocket, shared by its two subprotocols.

The event channel (:class:`a2a_hub.server.ws.Connection`) and A2A over WebSocket
(:class:`a2a_hub.server.ws_rpc.RpcConnection`) send frames the same way: one at a time
under a lock, each within ``ws_send_timeout`` (a client that does not read for that long is
cut loose with 1013), and close the socket once, the close frame bounded by the same
timeout, ending the reader's pending receive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from a2a_hub import metrics
from a2a_hub.protocol.errors import A2AError
from a2a_hub.server.connections import DIRECT_WRITE

__all__ = ["CLOSE_GOING_AWAY", "CLOSE_POLICY", "CLOSE_TRY_AGAIN", "ServerSocket"]

log = logging.getLogger("a2a_hub.server.ws")

#: Close codes.
CLOSE_TRY_AGAIN = 1013
CLOSE_POLICY = 1008
CLOSE_GOING_AWAY = 1001


class ServerSocket:
    """A server socket's frames out and its one close; ``too_slow`` is the close reason
    given to a client cut loose for not reading."""

    __slots__ = (
        "_close_sent",
        "_closed",
        "_direct",
        "_receiving",
        "_send_lock",
        "_slow_sends",
        "_too_slow",
        "on_end",
        "recheck",
        "send_timeout",
        "ws",
    )

    def __init__(self, websocket: WebSocket, send_timeout: float, too_slow: str) -> None:
        self.ws = websocket
        self.send_timeout = send_timeout
        self._too_slow = too_slow
        self._send_lock = asyncio.Lock()
        #: The server protocol's direct write (a weak reference; ``None``: another server).
        extensions = websocket.scope.get("extensions") or {}
        self._direct: Callable[[], Any] | None = extensions.get(DIRECT_WRITE)
        #: Sends taking the ASGI way (waiting for room): later frames queue behind them.
        self._slow_sends = 0
        self._closed = False
        self._close_sent = False
        #: The timeout of the reader's pending receive (cutting a client loose ends it).
        self._receiving: asyncio.Timeout | None = None
        #: Checks again that the credentials the socket was opened with still hold
        #: (raising the A2AError to refuse with); ``None`` for a socket opened without.
        self.recheck: Callable[[], Awaitable[object]] | None = None
        #: Called once when the connection has ended (its place in the limits released).
        self.on_end: Callable[[], object] | None = None

    def ended(self) -> None:
        """The end of the connection's ``run``: :attr:`on_end`, once."""
        on_end, self.on_end = self.on_end, None
        if on_end is not None:
            on_end()

    @property
    def closed(self) -> bool:
        """Whether the socket is closed or closing (nothing more is sent)."""
        return self._closed

    async def authorized(self) -> bool:
        """Whether the socket's key still holds (checked before every action: a key
        revoked or expired while the socket is open stops it within the key cache's
        second).  If not, the client gets the error and the socket closes with 1008."""
        if self.recheck is None:
            return True
        try:
            await self.recheck()
        except A2AError as err:
            await self.refused(err)
            reason = str(err).encode()[:120].decode(errors="ignore")
            await self.close(CLOSE_POLICY, reason)
            return False
        return True

    async def refused(self, err: A2AError) -> None:
        """Tell the client why its credentials no longer hold (in the subprotocol's shape)."""

    async def send_text(self, data: str | bytes) -> None:
        """Send one text frame (``bytes``: UTF-8); a client too slow to read it is cut loose.

        A frame the socket can take now is written at once (no lock, no timer); one that
        must wait for room, or follows one that waits, goes the ASGI way under the lock,
        within ``send_timeout``."""
        if self._closed:
            return
        direct = self._direct
        if direct is not None and not self._slow_sends:
            protocol = direct()
            if protocol is not None and protocol.write_text(
                data if isinstance(data, bytes) else data.encode()
            ):
                if metrics.enabled():
                    metrics.WEBSOCKET_EVENTS.inc(())
                return
        if isinstance(data, bytes):
            data = data.decode()
        self._slow_sends += 1
        try:
            await self._send_slowly(data)
        finally:
            self._slow_sends -= 1

    async def _send_slowly(self, data: str) -> None:
        async with self._send_lock:
            if self._closed:
                return
            try:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the result
                # of a send that finished as the connection's tasks were being canceled,
                # swallowing the cancellation, and the worker then waited for the next
                # frame of a client long gone (the socket was never released)
                async with asyncio.timeout(self.send_timeout):
                    await self.ws.send_text(data)
                if metrics.enabled():
                    metrics.WEBSOCKET_EVENTS.inc(())
            except TimeoutError:
                log.info("WebSocket client too slow for %ss: cut loose", self.send_timeout)
                if metrics.enabled():
                    metrics.WEBSOCKETS_CUT_LOOSE.inc(())
                await self.close(CLOSE_TRY_AGAIN, self._too_slow)
            except (WebSocketDisconnect, RuntimeError, OSError):
                self._closed = True

    async def close(self, code: int, reason: str) -> None:
        """Close the socket (once) and end the connection.

        The close frame waits for room in the socket like any frame: a client that does
        not read may never make room, so the attempt is bounded by ``ws_send_timeout``;
        then the reader's pending receive is ended, the connection released, and the
        server drops the transport (the client, if it ever reads, sees the socket end
        without a close frame).
        """
        self._closed = True
        if self._close_sent:
            return
        self._close_sent = True
        with contextlib.suppress(Exception):  # TimeoutError included: give up on the frame
            async with asyncio.timeout(self.send_timeout):
                await self.ws.close(code, reason)
        if self._receiving is not None:
            with contextlib.suppress(RuntimeError):  # already expiring
                self._receiving.reschedule(0)
