"""`make bench`, part 4: what API keys and metrics cost (skip with BENCH_OVERHEAD=0).

Two a2a-hub servers on the memory store, each with a SQLite registry and two echo agents,
``echo`` (open) and ``keyed`` (``auth=api-key``, one key created before the run with
``a2a-hub keys create``); one with metrics on (the default), one with ``--no-metrics``.
A third server is the plain ``a2a-hub serve --agent echo`` without a registry.

Each comparison runs BENCH_ROUNDS (3) rounds of BENCH_DURATION (5) seconds per variant,
the variants' order rotating from round to round, BENCH_OVERHEAD_CONCURRENCY (32)
connections; the table shows medians and their ratio:

* ``SendMessage`` with an API key (``X-API-Key``, agent ``keyed``) against the same
  server's open agent, and against the hub without a registry (issue 11: at least 90 %);
* ``SendMessage``, REST ``message:send``, ``SendStreamingMessage`` (SSE read to its end)
  and ``GetTask`` with metrics on against off (issue 15: no scenario more than 5 %
  slower).

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
    save_results,
)
from rich.console import Console
from rich.table import Table

console = Console(width=200)

CONCURRENCY = env_int("BENCH_OVERHEAD_CONCURRENCY", 32)
DURATION = env_float("BENCH_DURATION", 5.0)
ROUNDS = env_int("BENCH_ROUNDS", 3)
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
    head = [f"POST {v.path} HTTP/1.1", "Host: bench", f"Content-Length: {len(body)}"]
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


async def run_variant(port: int, v: Variant, tag: str) -> tuple[float, int]:
    counts = [0, 0]
    start = time.perf_counter()
    stop = start + DURATION
    await asyncio.gather(*(client(port, v, stop, f"{tag}-{c}", counts) for c in range(CONCURRENCY)))
    return counts[0] / (time.perf_counter() - start), counts[1]


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


async def compare(title: str, variants: list[Variant], ports: dict[str, int]) -> dict[str, Any]:
    rates: dict[str, list[float]] = {v.label: [] for v in variants}
    errors = dict.fromkeys(rates, 0)
    for r in range(ROUNDS):
        shift = r % len(variants)
        for v in variants[shift:] + variants[:shift]:
            rate, bad = await run_variant(ports[v.server], v, f"{v.label}-{r}")
            rates[v.label].append(rate)
            errors[v.label] += bad
            console.print(f"  {title}: round {r + 1}/{ROUNDS} {v.label:34} {rate:8,.0f} req/s")
    return {
        "median": {k: statistics.median(x) for k, x in rates.items()},
        "rounds": rates,
        "errors": errors,
    }


def get_body(task_id: str) -> str:
    return json.dumps(
        {"jsonrpc": "2.0", "id": "{n}", "method": "GetTask", "params": {"id": task_id}}
    )


async def measure(key: str, task_ids: dict[str, str], ports: dict[str, int]) -> dict[str, Any]:
    send = send_body()
    keyed = Variant(
        "SendMessage with an API key", "on", "/a2a/keyed", send, {**V10, "X-API-Key": key}
    )
    keys = await compare(
        "API key",
        [
            Variant("SendMessage, open agent", "on", "/a2a/echo", send, V10),
            keyed,
            Variant("SendMessage, hub without a registry", "plain", "/a2a/echo", send, V10),
        ],
        ports,
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
    for name, path, bodies, headers in scenarios:
        metrics[name] = await compare(
            f"metrics {name}",
            [
                Variant("metrics on", "on", path, bodies["on"], headers),
                Variant("metrics off", "off", path, bodies["off"], headers),
            ],
            ports,
        )
    return {"api_key": keys, "metrics": metrics}


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
        registry_off = f"sqlite:///{Path(tmp) / 'registry-off.db'}"
        key = create_key(registry)
        servers = {
            "on": hub("a2a-hub-metrics-on", free_port(), registry),
            "off": hub("a2a-hub-metrics-off", free_port(), registry_off, "--no-metrics"),
            "plain": hub("a2a-hub-plain", free_port(), None),
        }
        started: list[Server] = []
        try:
            for server in servers.values():
                why = server.start()
                if why:
                    raise RuntimeError(f"{server.key} did not start: {why}")
                started.append(server)
            ports = {name: s.port for name, s in servers.items()}
            task_ids = {name: first_task(ports[name]) for name in ("on", "off")}
            result = uvloop.run(measure(key, task_ids, ports))
        finally:
            for server in started:
                server.stop()
    data = load_results()
    data["overhead"] = result
    save_results(data)
    report(result)
    return 0


def ratio(a: float, b: float) -> str:
    return f"{a / b:.0%}" if b else "-"


def report(result: dict[str, Any]) -> None:
    table = Table(title="a2a-hub: API key and metrics overhead (medians, one uvicorn worker)")
    table.add_column("comparison")
    table.add_column("req/s", justify="right")
    table.add_column("vs", justify="right")
    table.add_column("target", justify="right")
    keys = result["api_key"]["median"]
    base = keys["SendMessage, open agent"]
    for label, rate in keys.items():
        table.add_row(label, f"{rate:,.0f}", ratio(rate, base), ">= 90 %" if "key" in label else "")
    plain = keys["SendMessage, hub without a registry"]
    table.add_row(
        "SendMessage with an API key vs the hub without a registry",
        "",
        ratio(keys["SendMessage with an API key"], plain),
        ">= 90 %",
    )
    for name, got in result["metrics"].items():
        on, off = got["median"]["metrics on"], got["median"]["metrics off"]
        table.add_row(
            f"{name}: metrics on / off", f"{on:,.0f} / {off:,.0f}", ratio(on, off), ">= 95 %"
        )
    console.print(table)


if __name__ == "__main__":
    sys.exit(main())
