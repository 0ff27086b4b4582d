"""Shared fixtures: an in-process hub and an HTTP client bound to it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from a2a_hub import Hub, create_app
from tests.support.agents import ChattyExecutor, PizzaExecutor, SlowExecutor
from tests.support.hub import LiveServer, make_hub
from tests.support.stores import PURGE_AT_EXIT, purge_redis


@pytest.fixture(scope="session", autouse=True)
def _purge_shared_redis() -> Iterator[None]:
    """Delete, at the end of the session, the keys that server processes left in the
    machine's Redis under the prefixes tests gave them."""
    yield

    async def purge() -> None:
        for url in PURGE_AT_EXIT:
            with contextlib.suppress(Exception):  # Redis gone meanwhile: nothing to tidy
                await purge_redis(url)

    if PURGE_AT_EXIT:
        asyncio.run(purge())


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
