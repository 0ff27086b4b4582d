"""An in-process hub over a memory store, and a real uvicorn server of one."""

from __future__ import annotations

from typing import Any

from a2a_hub import AgentExecutor, AgentSpec, Hub, Settings, create_app
from a2a_hub.stores import Store
from a2a_hub.stores.memory import MemoryStore

#: The host names of the tests' in-process clients (``base_url="http://hub.test"``).
TEST_HOSTS = ["hub.test", "h", "testserver"]


def make_hub(
    agents: dict[str, AgentExecutor | str] | None = None,
    *,
    default_agent: str | None = None,
    store: Store | None = None,
    **settings: Any,
) -> Hub:
    """A hub over a memory store (or ``store``); values are executors or built-in kinds
    ('echo').

    ``settings`` are flat keys (``max_body_bytes=2048``, ``sse_heartbeat=0.3``).  The
    in-process clients of the tests call the hub as ``http://hub.test`` or ``http://h``:
    those names are trusted besides the default ones unless ``trusted_hosts`` is given.
    """
    settings.setdefault("trusted_hosts", [*TEST_HOSTS, "localhost", "127.0.0.1"])
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
    return Hub(config, store=store or MemoryStore(), executors=executors)


class LiveServer:
    """A real uvicorn server of a hub on a loopback socket, in the test's event loop."""

    def __init__(self, hub: Hub, port: int = 0) -> None:
        """``port`` 0 takes a free one; a fixed port lets a second server replace a first."""
        import socket

        import uvicorn

        from a2a_hub.server.connections import uvicorn_options

        self.hub = hub
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = create_app(hub)
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on")
        # the protocols of ``a2a-hub serve`` (no header timeout: tests time what they test)
        uvicorn_options(config, 0.0)
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


async def asgi_body(receive: Any) -> bytes:
    """The whole request body, read from an ASGI ``receive`` (for the raw ASGI apps of
    tests)."""
    body = b""
    while True:
        message = await receive()
        chunk: bytes = message.get("body", b"")
        body += chunk
        if not message.get("more_body"):
            return body
