"""A WebSocket frame the socket can take now goes straight to the protocol; one that must
wait, and every frame behind it, goes the ASGI way in order (``ServerSocket.send_text``)."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from a2a_hub.server.connections import DIRECT_WRITE
from a2a_hub.server.ws_socket import ServerSocket


class Protocol:
    """What a socket sees of uvicorn's protocol: frames taken at once while ``ready``."""

    def __init__(self) -> None:
        self.ready = True
        self.wire: list[str] = []

    def write_text(self, data: bytes) -> bool:
        if not self.ready:
            return False
        self.wire.append(data.decode())
        return True


class WebSocket:
    """The ASGI side: a send that waits until ``room`` is set (a client not reading)."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self.scope: dict[str, Any] = {"extensions": {DIRECT_WRITE: weakref.ref(protocol)}}
        self.room = asyncio.Event()
        self.waiting = asyncio.Event()

    async def send_text(self, data: str) -> None:
        self.waiting.set()
        await self.room.wait()
        self.protocol.wire.append(data)


async def test_frames_behind_one_that_waits_keep_their_order() -> None:
    protocol = Protocol()
    ws = WebSocket(protocol)
    sock = ServerSocket(ws, send_timeout=5.0, too_slow="slow")  # type: ignore[arg-type]

    await sock.send_text(b"1")  # taken at once: no ASGI send
    assert protocol.wire == ["1"] and not ws.waiting.is_set()

    protocol.ready = False  # the transport paused: the next frame must wait
    second = asyncio.ensure_future(sock.send_text("2"))
    await ws.waiting.wait()
    protocol.ready = True  # room again, but "2" is still on its way: "3" queues behind it
    third = asyncio.ensure_future(sock.send_text(b"3"))
    await asyncio.sleep(0)
    assert protocol.wire == ["1"]
    ws.room.set()
    await asyncio.gather(second, third)
    assert protocol.wire == ["1", "2", "3"]

    await sock.send_text("4")  # nothing waits any more: straight through again
    assert protocol.wire == ["1", "2", "3", "4"]


async def test_a_socket_without_the_protocol_sends_the_asgi_way() -> None:
    protocol = Protocol()
    ws = WebSocket(protocol)
    ws.scope = {}  # another server: no protocol in the scope
    ws.room.set()
    sock = ServerSocket(ws, send_timeout=5.0, too_slow="slow")  # type: ignore[arg-type]
    await sock.send_text(b"a")
    assert protocol.wire == ["a"] and ws.waiting.is_set()
