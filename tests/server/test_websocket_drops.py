"""A socket dropped 200 times at random points of a long streamed task (issue 13, must show).

Each time the client reconnects and sends ``sync_state`` with the last seq it holds: every
chunk arrives exactly once and in order, and the server notices each socket the client left
(its count of open sockets goes back to zero; nothing is left following the task).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Callable
from typing import Any

import websockets

from a2a_hub import Hub
from tests.support.agents import Tap
from tests.support.hub import LiveServer
from tests.support.ws import Reader, connect, recv, send, terminal, until, ws_url

DROPS = 200


async def _drop(ws: Any, how: str) -> None:
    if how == "abort":  # the network goes away: no close frame, no FIN handshake
        ws.transport.abort()
    elif how == "close":
        await ws.close()
    # "leave": the context manager closes it


async def _open_sockets(live: LiveServer) -> int:
    counts = getattr(live.app.state, "ws_sockets", None)
    return 0 if counts is None else sum(counts.agents.values())


async def _eventually(check: Callable[[], Any], what: str) -> None:
    for _ in range(400):  # a hang guard of 20 s, not a timing check
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(what)


async def test_200_drops_every_chunk_once_in_order(hub_factory: Callable[..., Hub]) -> None:
    tap = Tap(interval=0.002)
    hub = hub_factory({"tap": tap}, ws_max_sockets=1000)
    rng = random.Random(13)
    reader = Reader()
    async with LiveServer(hub) as live:
        url = ws_url(live, "tap")
        async with connect(url) as ws:
            await send(ws, action="send_message", message_id="m", text="go")
            for _ in range(3):
                reader.take(await recv(ws))
        for _ in range(DROPS):
            how = rng.choice(["abort", "close", "leave"])
            # a close racing the abort may raise in the client: it does not matter to it
            with contextlib.suppress(websockets.ConnectionClosed, OSError):
                async with connect(url) as ws:
                    await ws.send(_json(reader.resume()))
                    for _ in range(rng.randrange(0, 12)):
                        event = await recv(ws)
                        reader.take(event)
                        assert not terminal(event), "the task ended before the drops did"
                    if rng.random() < 0.3:
                        await asyncio.sleep(rng.random() * 0.02)
                    await _drop(ws, how)
        # while the task still streams: every socket the client left is released, and
        # nothing of theirs still follows the task
        engine = hub.agent("tap").engine

        async def released() -> bool:
            return await _open_sockets(live) == 0 and not engine.pubsub.topics.get(reader.task_id)

        await _eventually(released, "the server holds sockets the client left")
        assert not tap.stop.is_set() and engine.runs
        tap.stop.set()
        async with connect(url) as ws:
            await ws.send(_json(reader.resume()))
            for event in await until(ws, terminal):
                reader.take(event)
        assert reader.chunks == [f"{i:06d}." for i in range(tap.chunks)]
        assert tap.chunks > 3


def _json(frame: dict[str, Any]) -> str:
    return json.dumps(frame)
