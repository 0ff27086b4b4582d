"""Services and their lifecycle: the async context managers a hub's app runs beside it.

A service owns its start and its stop: ``async with service`` starts it, leaving the
block stops it.  The hub lists its own (:meth:`a2a_hub.server.hub.Hub.services`) and
the app's lifespan adds the drain and the retention job; one
:class:`contextlib.AsyncExitStack` enters them in order and leaves them in reverse, so
a failure while starting stops what had started, and adding a service is one line.

The adapters here make services of the parts that have ``open``/``start`` and
``close`` methods of their own (the store, the registry, the cluster) or only a stop.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

__all__ = ["Service", "closing", "opened", "run_services", "started"]

#: A service: entering it starts it, leaving it stops it.
Service = AbstractAsyncContextManager[object]


class _Openable(Protocol):
    async def open(self) -> None: ...

    async def close(self) -> None: ...


class _Startable(Protocol):
    async def start(self) -> None: ...

    async def close(self) -> None: ...


@contextlib.asynccontextmanager
async def opened(part: _Openable) -> AsyncIterator[None]:
    """``part.open()`` on entry, ``part.close()`` on exit (a store, the registry)."""
    await part.open()
    try:
        yield
    finally:
        await part.close()


@contextlib.asynccontextmanager
async def started(part: _Startable) -> AsyncIterator[None]:
    """``part.start()`` on entry, ``part.close()`` on exit (the cluster)."""
    await part.start()
    try:
        yield
    finally:
        await part.close()


@contextlib.asynccontextmanager
async def closing(stop: Callable[[], Awaitable[None]]) -> AsyncIterator[None]:
    """Nothing on entry, ``stop()`` on exit (what starts on first use)."""
    try:
        yield
    finally:
        await stop()


async def run_services(stack: contextlib.AsyncExitStack, services: list[Service]) -> None:
    """Enter ``services`` in order on ``stack`` (which leaves them in reverse order)."""
    for service in services:
        await stack.enter_async_context(service)
