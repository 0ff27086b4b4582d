"""The HTTP face of ``a2a-hub worker --health-port N``: liveness, readiness, metrics.

A worker serves no A2A; an orchestrator still needs to know it lives and works.  This
service answers, on its own small asyncio server (no framework: three fixed GET routes):

* ``/healthz`` — 200 while the process answers;
* ``/readyz`` — 200 when the store and Temporal answer (each within 2 s), else 503 naming
  what failed;
* ``/metrics`` — the Prometheus text: the worker's running turns by agent and worker, the
  schedule-to-start latency, the store's operations.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from types import TracebackType

from a2a_hub import metrics

__all__ = ["Probes"]

#: Seconds each part of ``/readyz`` gets to answer.
READY_TIMEOUT = 2.0


class Probes:
    """The probe server (see the module docstring); ``checks`` name the parts of /readyz."""

    def __init__(
        self, host: str, port: int, checks: dict[str, Callable[[], Awaitable[object]]]
    ) -> None:
        self.host = host
        self.port = port
        self.checks = checks
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Probes:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(10):
                line = await reader.readline()
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # the headers: not needed
                parts = line.decode("latin-1").split()
                path = parts[1].split("?")[0] if len(parts) > 1 else ""
                status, body, kind = await self._answer(path)
                head = (
                    f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                )
                writer.write(head.encode() + body)
                await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _answer(self, path: str) -> tuple[str, bytes, str]:
        if path == "/healthz":
            return "200 OK", b'{"status":"ok"}', "application/json"
        if path == "/metrics":
            body, kind = metrics.exposition()
            return "200 OK", body, kind
        if path == "/readyz":
            names = list(self.checks)
            found = await asyncio.gather(*(_check(self.checks[n]()) for n in names))
            failing = {n: why for n, why in zip(names, found, strict=True) if why}
            report = {
                "status": "unavailable" if failing else "ok",
                "checks": {n: failing.get(n, "ok") for n in names},
            }
            status = "503 Service Unavailable" if failing else "200 OK"
            return status, json.dumps(report).encode(), "application/json"
        return "404 Not Found", b'{"error":"not found"}', "application/json"


async def _check(probe: Awaitable[object]) -> str | None:
    try:
        async with asyncio.timeout(READY_TIMEOUT):
            await probe
    except TimeoutError:
        return f"no answer within {READY_TIMEOUT:g} s"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None
