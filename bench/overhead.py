"""`make bench`, part 4: what API keys and metrics cost (skip with BENCH_OVERHEAD=0).

Three a2a-hub servers on the memory store: ``keys``, with a SQLite registry and two echo
agents, ``echo`` (open) and ``keyed`` (``auth=api-key``, one key created before the run
with ``a2a-hub keys create``); ``on``, the plain ``a2a-hub serve --agent echo`` (no
registry, metrics on: the default); ``off``, the same with ``--no-metrics``.

Each comparison runs BENCH_OVERHEAD_ROUNDS (6) rounds of BENCH_OVERHEAD_DURATION (2)
seconds per variant, the variants' order rotating from round to round,
BENCH_OVERHEAD_CONCURRENCY (32) connections.  The differences sought are a few per cent
and the machine may be shared, so each round compares runs made one right after the
other: the table shows the median of the rounds' ratios, for throughput and for the
server process's CPU time per request (all its threads; the steadier of the two when
other processes compete for the cores), next to the median rates:

* ``SendMessage`` with an API key (``X-API-Key``, agent ``keyed``) against the same
  server's open agent, and against the plain hub without a registry (issue 11: at least
  90 %);
* ``SendMessage``, REST ``message:send``, ``SendStreamingMessage`` (SSE read to its end)
  and ``GetTask`` with metrics on against off (issue 15: no scenario more than 5 %
  slower);
* in this process, without I/O, the CPU the key check and each metrics step add to one
  request (see :func:`recording_cost`).

The clients are raw asyncio connections on uvloop in this process (pinned to the client
core); a response counts only if it carries the completed task and no error.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvloop
from benchlib import (
    CLIENT_CPU,
    HUB_CLI,
    PINNED,
    ROOT,
    Server,
    env_float,
    env_int,
    free_port,
    load_results,
    proc_cpu_seconds,
    save_results,
)
from rich.console import Console
from rich.table import Table

console = Console(width=200)

CONCURRENCY = env_int("BENCH_OVERHEAD_CONCURRENCY", 32)
DURATION = env_float("BENCH_OVERHEAD_DURATION", 2.0)
ROUNDS = env_int("BENCH_OVERHEAD_ROUNDS", 6)
ONLY = os.environ.get("BENCH_OVERHEAD_ONLY", "")  # "keys" or "metrics": only that part
DONE = b"TASK_STATE_COMPLETED"


@dataclass
class Variant:
    """One way of sending: a server, a path, headers and a body (``{n}``: a fresh id)."""

    label: str
    server: str
    path: str
    body: str
    headers: dict[str, str]


def send_body(method: str = "SendMessage") -> str:
    params = {"message": {"messageId": "m-{n}", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
    return json.dumps({"jsonrpc": "2.0", "id": "{n}", "method": method, "params": params})


REST_BODY = json.dumps(
    {"message": {"messageId": "m-{n}", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
)
V10 = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def request(v: Variant, n: str) -> bytes:
    body = v.body.replace("{n}", n).encode()
    head = [f"POST {v.path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    head += [f"{k}: {val}" for k, val in v.headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def read_response(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = None
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if not chunked:
        return head + await reader.readexactly(length or 0)
    parts = [head]
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return b"".join(parts)
        parts.append((await reader.readexactly(size + 2))[:-2])


async def client(port: int, v: Variant, stop: float, tag: str, counts: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    n = 0
    try:
        while time.perf_counter() < stop:
            n += 1
            writer.write(request(v, f"{tag}-{n}"))
            answer = await read_response(reader)
            if answer.startswith(b"HTTP/1.1 200") and DONE in answer and b'"error"' not in answer:
                counts[0] += 1
            else:
                counts[1] += 1
    finally:
        writer.close()


async def run_variant(server: Server, v: Variant, tag: str) -> tuple[float, float, int]:
    """Requests per second, server CPU seconds per request, bad answers."""
    counts = [0, 0]
    cpu = proc_cpu_seconds(server.pid)
    start = time.perf_counter()
    stop = start + DURATION
    await asyncio.gather(
        *(client(server.port, v, stop, f"{tag}-{c}", counts) for c in range(CONCURRENCY))
    )
    elapsed = time.perf_counter() - start
    used = proc_cpu_seconds(server.pid) - cpu
    return counts[0] / elapsed, used / max(counts[0], 1), counts[1]


def hub(key: str, port: int, registry: str | None, *extra: str) -> Server:
    argv = [
        str(HUB_CLI), "serve", "--agent", "echo", "--store", "memory://",
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", *extra,
    ]  # fmt: skip
    if registry is not None:
        argv += ["--agent", "keyed=echo?auth=api-key", "--registry", registry]
    return Server(key, argv, port, "/healthz")


def create_key(registry: str) -> str:
    out = subprocess.run(
        [str(HUB_CLI), "keys", "create", "--agent", "keyed", "--name", "bench",
         "--registry", registry, "--json"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    key: str = json.loads(out.stdout)["key"]
    return key


def first_task(port: int) -> str:
    from benchlib import http

    body = json.loads(send_body().replace("{n}", "first"))
    _status, data = http("POST", f"http://127.0.0.1:{port}/a2a/echo", body, V10)
    task_id: str = json.loads(data)["result"]["task"]["id"]
    return task_id


async def compare(
    title: str, variants: list[Variant], servers: dict[str, Server]
) -> dict[str, Any]:
    """Rounds of every variant; ratios of each variant to the first, per round."""
    rates: dict[str, list[float]] = {v.label: [] for v in variants}
    cpus: dict[str, list[float]] = {v.label: [] for v in variants}
    errors = dict.fromkeys(rates, 0)
    for r in range(ROUNDS):
        shift = r % len(variants)
        for v in variants[shift:] + variants[:shift]:
            rate, cpu, bad = await run_variant(servers[v.server], v, f"{v.label}-{r}")
            rates[v.label].append(rate)
            cpus[v.label].append(cpu)
            errors[v.label] += bad
            console.print(
                f"  {title}: round {r + 1}/{ROUNDS} {v.label:36} {rate:8,.0f} req/s "
                f"{cpu * 1e6:6.0f} µs CPU/req"
            )
    base = variants[0].label
    return {
        "median": {k: statistics.median(x) for k, x in rates.items()},
        "cpu_us": {k: statistics.median(x) * 1e6 for k, x in cpus.items()},
        # per round: rate / the first variant's rate; its CPU per request / this one's
        "rate_ratio": {
            k: statistics.median(a / b for a, b in zip(x, rates[base], strict=True) if b)
            for k, x in rates.items()
        },
        "cpu_ratio": {
            k: statistics.median(b / a for a, b in zip(x, cpus[base], strict=True) if a)
            for k, x in cpus.items()
        },
        "rounds": rates,
        "errors": errors,
    }


def get_body(task_id: str) -> str:
    return json.dumps(
        {"jsonrpc": "2.0", "id": "{n}", "method": "GetTask", "params": {"id": task_id}}
    )


async def measure(key: str, task_ids: dict[str, str], servers: dict[str, Server]) -> dict[str, Any]:
    send = send_body()
    keyed = Variant(
        "SendMessage with an API key", "keys", "/a2a/keyed", send, {**V10, "X-API-Key": key}
    )
    keys: dict[str, Any] = {"median": {}, "rounds": {}, "errors": {}}
    if ONLY != "metrics":
        keys = await compare(
            "API key",
            [
                Variant("SendMessage, open agent", "keys", "/a2a/echo", send, V10),
                keyed,
                Variant("SendMessage, hub without a registry", "on", "/a2a/echo", send, V10),
            ],
            servers,
        )
    metrics: dict[str, Any] = {}
    stream = send_body("SendStreamingMessage")
    scenarios: list[tuple[str, str, dict[str, str], dict[str, str]]] = [
        ("SendMessage", "/a2a/echo", {"on": send, "off": send}, V10),
        ("REST message:send", "/a2a/echo/message:send", {"on": REST_BODY, "off": REST_BODY}, V10),
        (
            "SendStreamingMessage (SSE)",
            "/a2a/echo",
            {"on": stream, "off": stream},
            {**V10, "Accept": "text/event-stream"},
        ),
        (
            "GetTask",
            "/a2a/echo",
            {"on": get_body(task_ids["on"]), "off": get_body(task_ids["off"])},
            V10,
        ),
    ]
    for name, path, bodies, headers in scenarios if ONLY != "keys" else []:
        metrics[name] = await compare(
            f"metrics {name}",
            [
                Variant("metrics off", "off", path, bodies["off"], headers),
                Variant("metrics on", "on", path, bodies["on"], headers),
            ],
            servers,
        )
    return {"api_key": keys, "metrics": metrics}


def recording_cost(n: int = 100_000) -> dict[str, float]:
    """Microseconds of CPU the key check and the metrics add to one request, measured in
    this process without any I/O (steady where end-to-end figures drown in the machine's
    noise): finding a request's key and its caller in the authenticator's cache, the
    app's front (its request metrics) around a bare ASGI app against the bare app, a run's
    task metrics, a stream's metrics, one store operation's histogram."""
    from a2a_hub import metrics
    from a2a_hub.server.front import Front
    from a2a_hub.server.hosts import HostCheck
    from a2a_hub.server.jsonrpc import rpc
    from a2a_hub.server.metrics import RequestMetrics

    async def bare(scope: Any, receive: Any, send: Any) -> None:
        scope["endpoint"] = rpc
        scope["path_params"] = {"agent_id": "echo"}
        scope["a2a_hub.version"] = "1.0"
        await send({"type": "http.response.start", "status": 200})
        await send({"type": "http.response.body", "body": b""})

    async def nothing(message: Any = None) -> Any:
        return None

    async def requests(app: Any) -> float:
        start = time.process_time()
        for _ in range(n):
            scope = {"type": "http", "method": "POST", "path": "/a2a/echo", "headers": []}
            await app(scope, nothing, nothing)
        return (time.process_time() - start) / n * 1e6

    async def middleware() -> float:
        labels = {rpc: ("/", "jsonrpc")}
        wrapped = Front(  # the app's front around the bare app: it takes no route itself
            bare,
            router=None,
            requests=RequestMetrics(agent_routes=labels, record=True),
            hosts=HostCheck(["*"]),
            cors=False,
            caller=None,
        )
        costs = [await requests(wrapped) - await requests(bare) for _ in range(3)]
        return statistics.median(costs)

    def per_call(step: Callable[[], None]) -> float:
        start = time.process_time()
        for _ in range(n):
            step()
        return (time.process_time() - start) / n * 1e6

    def run() -> None:
        metrics.run_ended("echo", metrics.run_began("echo"), None)

    def stream() -> None:
        metrics.STREAMS_OPEN.inc()
        metrics.STREAMS_OPEN.dec()
        metrics.STREAM_SECONDS.observe(0.001)
        metrics.STREAM_EVENTS.inc(4)

    async def key_check() -> float:
        from a2a_hub.registry import KeyInfo
        from a2a_hub.server.auth import Authenticator, key_of

        info = KeyInfo(
            id="k", prefix="a2ah_x", principal="bench", scopes=["invoke"], agents=["keyed"],
            created_at=time.time(),
        )  # fmt: skip

        class Registry:  # answers the first lookup; the rest are the cache's
            async def lookup_key(self, key: str) -> KeyInfo:
                return info

        auth = Authenticator(Registry(), cache_seconds=3600)  # type: ignore[arg-type]
        scope = {"headers": [(b"content-type", b"application/json"), (b"x-api-key", b"a2ah_x")]}
        await auth.caller("a2ah_x")
        start = time.process_time()
        for _ in range(n):
            caller = await auth.caller(key_of(scope) or "")
            assert caller.agents is not None and "keyed" in caller.agents
        return (time.process_time() - start) / n * 1e6

    return {
        "API key check (a cache hit)": asyncio.run(key_check()),
        "request middleware": asyncio.run(middleware()),
        "task metrics of a run": per_call(run),
        "stream metrics of an SSE response": per_call(stream),
        "one store operation (SQL, Redis)": per_call(
            lambda: metrics.store_op("sqlite", "save_task", 0.001)
        ),
    }


def main() -> int:
    if os.environ.get("BENCH_OVERHEAD", "1") == "0":
        console.print("BENCH_OVERHEAD=0: the API key and metrics part is skipped")
        return 0
    if PINNED:
        os.sched_setaffinity(0, {int(CLIENT_CPU)})
    console.print(
        f"[bold]Overhead[/bold]: SendMessage with and without an API key; scenarios with "
        f"metrics on and off ({CONCURRENCY} connections, {ROUNDS} x {DURATION:g} s)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        registry = f"sqlite:///{Path(tmp) / 'registry.db'}"
        key = create_key(registry)
        servers = {
            "keys": hub("a2a-hub-keys", free_port(), registry),
            "on": hub("a2a-hub-metrics-on", free_port(), None),
            "off": hub("a2a-hub-metrics-off", free_port(), None, "--no-metrics"),
        }
        started: list[Server] = []
        try:
            for server in servers.values():
                why = server.start()
                if why:
                    raise RuntimeError(f"{server.key} did not start: {why}")
                started.append(server)
            task_ids = {name: first_task(servers[name].port) for name in ("on", "off")}
            result = uvloop.run(measure(key, task_ids, servers))
        finally:
            for server in started:
                server.stop()
    result["recording_us"] = recording_cost()
    data = load_results()
    data["overhead"] = result
    save_results(data)
    report(result)
    return 0


def report(result: dict[str, Any]) -> None:
    table = Table(title="a2a-hub: API key and metrics overhead (one uvicorn worker)")
    table.add_column("comparison")
    table.add_column("req/s (medians)", justify="right")
    table.add_column("throughput ratio", justify="right")
    table.add_column("µs CPU/request", justify="right")
    table.add_column("CPU ratio", justify="right")
    table.add_column("target", justify="right")
    keys = result["api_key"]
    if keys["median"]:
        for label, rate in keys["median"].items():
            table.add_row(
                label,
                f"{rate:,.0f}",
                f"{keys['rate_ratio'][label]:.0%}",
                f"{keys['cpu_us'][label]:.0f}",
                f"{keys['cpu_ratio'][label]:.0%}",
                ">= 90 %" if "key" in label else "(baseline)" if "open" in label else "",
            )
    for name, got in result["metrics"].items():
        med, cpu = got["median"], got["cpu_us"]
        table.add_row(
            f"{name}: metrics off / on",
            f"{med['metrics off']:,.0f} / {med['metrics on']:,.0f}",
            f"{got['rate_ratio']['metrics on']:.0%}",
            f"{cpu['metrics off']:.0f} / {cpu['metrics on']:.0f}",
            f"{got['cpu_ratio']['metrics on']:.0%}",
            ">= 95 %",
        )
    console.print(table)
    costs = result["recording_us"]
    table = Table(title="CPU the key check and the metrics add per request (in-process, no I/O)")
    table.add_column("what")
    table.add_column("µs", justify="right")
    for what, us in costs.items():
        table.add_row(what, f"{us:.2f}")
    console.print(table)
    for name, got in [("API key", keys), *result["metrics"].items()]:
        for label, bad in got["errors"].items():
            if bad:
                console.print(f"[red]{name}, {label}: {bad:,} bad answers (not counted)[/red]")
    console.print(
        "ratios: median over rounds of (variant / baseline) for throughput and of "
        "(baseline CPU per request / variant's) for CPU; 100 % = no cost"
    )


if __name__ == "__main__":
    sys.exit(main())
