"""A real HTTP webhook receiver for the push tests: records every POST, on a real socket."""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """Answers ``status`` (200 by default) to POST /hook and records what came."""

    port: int = 0
    status: int = 200
    got: list[Received] = field(default_factory=list)
    #: Every POST, answered 200 or not.
    hits: int = 0
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def _hook(self, request: Request) -> Response:
        body = await request.body()
        self.hits += 1
        if self.status == 200:
            self.got.append(Received(dict(request.headers), body))
            self.arrived.set()
        headers = {"Retry-After": "0"} if self.status == 503 else {}
        return Response(status_code=self.status, headers=headers)

    async def start(self) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        self.sock = sock
        app = Starlette(routes=[Route("/hook", self._hook, methods=["POST"])])
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.task = asyncio.ensure_future(self.server.serve(sockets=[sock]))
        while not self.server.started:
            if self.task.done():
                self.task.result()
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self.server.should_exit = True
        await self.task
        self.sock.close()

    async def wait_for(self, count: int, within: float = 30.0) -> None:
        """Until ``count`` notifications arrived (fails the test after ``within`` s)."""
        async with asyncio.timeout(within):
            while len(self.got) < count:
                self.arrived.clear()
                await self.arrived.wait()


async def until(check: Callable[[], Awaitable[bool]], within: float = 30.0) -> None:
    """Poll ``check`` until it is true (fails the test after ``within`` seconds)."""
    async with asyncio.timeout(within):
        for _ in itertools.count():
            if await check():
                return
            await asyncio.sleep(0.02)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
