"""Shared fixtures: an in-process hub and an HTTP client bound to it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_hub import AgentExecutor, AgentSpec, Hub, Settings, create_app
from a2a_hub.stores.memory import MemoryStore

sys.path.insert(0, str(Path(__file__).parent))

from sample_agents import ChattyExecutor, PizzaExecutor, SlowExecutor


def make_hub(
    agents: dict[str, AgentExecutor | str] | None = None,
    *,
    default_agent: str | None = None,
    **settings: Any,
) -> Hub:
    """A hub over a memory store; values are executors or built-in kinds ('echo').

    ``settings`` are flat keys (``max_body_bytes=2048``, ``sse_heartbeat=0.3``).
    """
    agents = agents if agents is not None else {"echo": "echo"}
    specs, executors = [], {}
    for agent_id, what in agents.items():
        if isinstance(what, str):
            kind, _, query = what.partition("?")
            options = dict(p.split("=", 1) for p in query.split("&") if p)
            specs.append(AgentSpec(id=agent_id, kind=kind, options=options))
        else:
            specs.append(AgentSpec(id=agent_id, kind="python", executor="x:y"))
            executors[agent_id] = what
    config = Settings.from_flat(
        agents=specs, default_agent=default_agent, store="memory://", **settings
    )
    return Hub(config, store=MemoryStore(), executors=executors)


@pytest.fixture
def hub_factory() -> Callable[..., Hub]:
    return make_hub


@pytest.fixture
async def hub() -> AsyncIterator[Hub]:
    h = make_hub(
        {
            "echo": "echo",
            "echo-msg": "echo?reply=message",
            "pizza": PizzaExecutor(),
            "slow": SlowExecutor(),
        }
    )
    await h.start()
    yield h
    await h.close()


@pytest.fixture
async def client(hub: Hub) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://hub.test") as c:
        yield c


class LiveServer:
    """A real uvicorn server of a hub on a loopback socket, in the test's event loop."""

    def __init__(self, hub: Hub) -> None:
        import socket

        import uvicorn

        self.hub = hub
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(hub), log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)

    async def __aenter__(self) -> LiveServer:
        import asyncio

        self._task = asyncio.ensure_future(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        await self._task
        self.sock.close()


@pytest.fixture
async def live(hub_factory: Callable[..., Hub]) -> AsyncIterator[LiveServer]:
    hub = hub_factory(
        {
            "echo": "echo",
            "pizza": PizzaExecutor(),
            "slow": SlowExecutor(),
            "chatty": ChattyExecutor(chunks=20, pause_every=2, delay=0.3),
        },
        default_agent="echo",
    )
    async with LiveServer(hub) as server:
        yield server
