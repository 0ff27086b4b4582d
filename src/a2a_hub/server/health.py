"""Health endpoints: ``/healthz`` (the process answers), ``/readyz`` (its dependencies
answer), ``/version``.

``/readyz`` asks the store and its coordinator (leases, signals), and on an API node of a
worker tier Temporal, one cheap question each, all at once, with a short timeout; it
answers 200 when every part answered and 503 naming each part that did not (and why)
otherwise.  Put it behind the load balancer's health check; ``/healthz`` is for liveness probes
(restarting a process whose store is down would not help).
"""

from __future__ import annotations

import asyncio
import platform
import sys
from collections.abc import Awaitable

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from a2a_hub._logging import redact
from a2a_hub._version import __version__
from a2a_hub.server.errors import JSON
from a2a_hub.server.http import hub_of
from a2a_hub.server.scope import A2A_VERSIONS

__all__ = ["READY_TIMEOUT", "healthz", "readyz", "version"]

#: Seconds each part gets to answer ``/readyz``.
READY_TIMEOUT = 2.0
_PROBE = "__readyz__"

_enc = msgspec.json.Encoder()


async def healthz(request: Request) -> Response:
    """``GET /healthz``: ok, and the ids of the hosted agents (the process answers)."""
    agents = sorted(hub_of(request).agents)
    return Response(_enc.encode({"status": "ok", "agents": agents}), media_type=JSON)


async def _check(probe: Awaitable[object], within: float) -> str | None:
    """None if ``probe`` answered in time, else why not."""
    try:
        async with asyncio.timeout(within):
            await probe
    except TimeoutError:
        return f"no answer within {within:g} s"
    except Exception as exc:
        return redact(f"{type(exc).__name__}: {exc}")  # a driver's message may hold a URL
    return None


async def readyz(request: Request) -> Response:
    """``GET /readyz``: 200 if the store and the coordinator answer, else 503 naming them."""
    hub = hub_of(request)
    timeout = READY_TIMEOUT
    store = hub.store
    parts: dict[str, Awaitable[object]] = {
        "store": store.get_task_record(_PROBE, _PROBE),
        "coordinator": hub.cluster.coordinator.lease_owner(_PROBE, _PROBE),
    }
    if hub.turns is not None:  # an API node of a worker tier: Temporal too
        parts["temporal"] = hub.turns.check()
    results = await asyncio.gather(*(_check(p, timeout) for p in parts.values()))
    failing = {name: why for name, why in zip(parts, results, strict=True) if why is not None}
    checks = {name: failing.get(name, "ok") for name in parts}
    body: dict[str, object] = {
        "status": "unavailable" if failing else "ok",
        "checks": checks,
        "agents": sorted(hub.agents),
    }
    if failing:
        body["failing"] = sorted(failing)
    return Response(_enc.encode(body), 503 if failing else 200, media_type=JSON)


async def version(request: Request) -> Response:
    """``GET /version``: the a2a-hub version, the A2A versions served, Python's version."""
    body = {
        "name": "a2a-hub",
        "version": __version__,
        "a2aVersions": list(A2A_VERSIONS),
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
    }
    return Response(_enc.encode(body), media_type=JSON)
