"""A socket that does not read is cut loose (close 1013) and resyncs from the log.

Like an SSE subscriber that falls behind, the server never buffers without bound for a
slow WebSocket client: once an event cannot be handed to the socket for ``ws_send_timeout``
seconds the server closes it with 1013 ("try again") and forgets it; the client reconnects
with ``sync_state`` and gets the rest from the task log, every chunk once and in order.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any

import pytest
import websockets

from a2a_hub import Hub, metrics
from tests.support.agents import ChattyExecutor
from tests.support.hub import LiveServer
from tests.support.ws import Reader, connect, recv, send, terminal, until, ws_url

CHUNKS = 1500
SIZE = 8192  # 12 MB in all: far more than the kernel's socket buffers hold


def _small_socket(url: str) -> socket.socket:
    """A connected TCP socket whose receive buffer is tiny (the reader stalls early)."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sock.setblocking(False)
    return sock


async def test_a_socket_that_does_not_read_is_cut_loose_and_resyncs(
    hub_factory: Callable[..., Hub],
) -> None:
    chatty = ChattyExecutor(chunks=CHUNKS, size=SIZE, pause_every=10)
    hub = hub_factory({"chatty": chatty}, ws_send_timeout=1.0)
    reader = Reader()
    cut_before = metrics.WEBSOCKETS_CUT_LOOSE.values.get((), 0.0)
    async with LiveServer(hub) as live:
        url = ws_url(live, "chatty")
        slow: Any = await websockets.connect(
            url,
            sock=_small_socket(live.url),
            max_queue=1,
            max_size=None,
            close_timeout=1,
            ping_interval=None,
            compression=None,  # else 8 KiB of dots are a few bytes on the wire
        )
        await send(slow, action="send_message", message_id="m", text="go")
        reader.take(await recv(slow))
        # stop reading: the server must notice, cut the socket loose and forget it
        sockets = live.app.state.ws_sockets
        for _ in range(600):  # a hang guard of 60 s, not a timing check
            if sum(sockets.agents.values()) == 0:
                break
            await asyncio.sleep(0.1)
        assert sum(sockets.agents.values()) == 0, "the server still holds the stalled socket"
        assert metrics.WEBSOCKETS_CUT_LOOSE.values.get((), 0.0) == cut_before + 1
        # what the socket had taken before it was cut comes out, then the socket ends: with
        # close code 1013 when the server found room for the close frame, else abruptly
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                reader.take(await recv(slow))
        assert closed.value.rcvd is None or closed.value.rcvd.code == 1013
        assert len(reader.chunks) < CHUNKS
        cut_at = len(reader.chunks)
        async with connect(url, max_size=None) as ws:
            await ws.send(json.dumps(reader.resume()))
            for event in await until(ws, terminal):
                reader.take(event)
    assert reader.chunks == [f"{i:06d}".ljust(SIZE, ".") for i in range(CHUNKS)]
    assert cut_at < CHUNKS
