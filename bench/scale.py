"""`make bench`, part 2: scale of one a2a-hub process (skip with BENCH_SCALE=0).

1. Idle SSE subscriptions: BENCH_SCALE_SUBS (10,000) concurrent subscriptions, spread over
   BENCH_SCALE_TASKS (100) open tasks, held by one a2a-hub process; resident memory per
   subscription = (RSS with them open - RSS before) / count.
2. Fan-out: BENCH_FANOUT_SUBS (1,000) subscribers of one task; BENCH_FANOUT_ROUNDS (20) times
   the task publishes one event; the delay of each delivery is the subscriber's arrival time
   minus the time the agent stamped into the event just before publishing it (p50, p99 over
   every delivery; also the time until the last subscriber has it).

BENCH_SCALE_PARTS (``idle,fanout``) chooses the parts to run.

The server is ``a2a-hub serve --agent waiter=bench_agents:Waiter --agent
trigger=bench_agents:Trigger --store memory://`` (PYTHONPATH=bench), one uvicorn worker pinned
to core 0.  The subscribers are raw asyncio protocols on uvloop in this process, pinned to
core 1: no HTTP library, one socket each, ``GET /a2a/waiter/tasks/{id}:subscribe`` (REST,
``A2A-Version: 1.0``); a subscription counts as open once its first event (the task
snapshot) has arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
import uuid
from typing import Any, cast

import uvloop
from benchlib import (
    BENCH,
    CLIENT_CPU,
    HUB_CLI,
    PINNED,
    SERVER_CPU,
    Server,
    draw_chart,
    env_int,
    free_port,
    idle_memory,
    load_results,
    open_many,
    raise_fd_limit,
    save_results,
    serve_argv,
    show,
)
from rich.console import Console
from rich.table import Table

console = Console(width=200)

SUBS = env_int("BENCH_SCALE_SUBS", 10_000)
TASKS = env_int("BENCH_SCALE_TASKS", 100)
FANOUT = env_int("BENCH_FANOUT_SUBS", 1_000)
FANOUT_ROUNDS = env_int("BENCH_FANOUT_ROUNDS", 20)
MARK = b"bench-ts="
PARTS = set(os.environ.get("BENCH_SCALE_PARTS", "idle,fanout").split(","))


class Tally:
    """Delivery delays of all subscribers; ``done`` is set once ``goal`` of them are in."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.goal = 0
        self.done = asyncio.Event()

    def add(self, delay: float) -> None:
        self.delays.append(delay)
        if len(self.delays) >= self.goal:
            self.done.set()


class Sub(asyncio.Protocol):
    """One SSE subscription on a raw socket; records when each timestamped event arrives."""

    def __init__(self, request: bytes, tally: Tally) -> None:
        self.request = request
        self.tally = tally
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.pending = b""
        self.head_checked = False
        self.ticks = 0
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.time()
        if not self.head_checked:
            self.head_checked = True
            if not data.startswith(b"HTTP/1.1 200"):
                self._fail(f"subscribe answered {data[:200]!r}")
                return
        self.pending += data
        while True:
            end = self.pending.find(b"\n\n")
            if end < 0:
                break
            event, self.pending = self.pending[: end + 2], self.pending[end + 2 :]
            if b"data:" not in event:
                continue
            if not self.ready.done():
                self.ready.set_result(None)
            at = event.find(MARK)
            if at >= 0:
                start = at + len(MARK)
                stop = start
                while stop < len(event) and event[stop] in b"0123456789.":
                    stop += 1
                self.ticks += 1
                self.tally.add(now - float(event[start:stop]))

    def _fail(self, why: str) -> None:
        if not self.ready.done():
            self.ready.set_exception(RuntimeError(why))
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.ready.done():
            self.ready.set_exception(RuntimeError(f"connection closed before an event: {exc}"))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def post_json(port: int, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """One JSON POST on its own connection (setup and triggers; not measured)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    raw = json.dumps(body).encode()
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"A2A-Version: 1.0\r\nContent-Length: {len(raw)}\r\nConnection: close\r\n\r\n".encode()
        + raw
    )
    data = await reader.read()
    writer.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        out, rest = b"", payload
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            out, rest = out + rest[:size], rest[size + 2 :]
        payload = out
    result: dict[str, Any] = json.loads(payload)
    return result


def send_body(text: str, *, immediately: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {
        "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    }
    if immediately:
        params["configuration"] = {"returnImmediately": True}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}


async def new_waiting_task(port: int) -> str:
    answer = await post_json(port, "/a2a/waiter", send_body("wait", immediately=True))
    task_id: str = answer["result"]["task"]["id"]
    return task_id


async def trigger(port: int, task_id: str, command: str) -> None:
    answer = await post_json(port, "/a2a/trigger", send_body(f"{task_id} {command}"))
    text = answer["result"]["message"]["parts"][0]["text"]
    if text != "ok":
        raise RuntimeError(f"trigger {command} for {task_id}: {text}")


def subscribe_request(task_id: str) -> bytes:
    return (
        f"GET /a2a/waiter/tasks/{task_id}:subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Accept: text/event-stream\r\nA2A-Version: 1.0\r\n\r\n"
    ).encode()


async def open_subs(
    port: int, task_ids: list[str], count: int, tally: Tally
) -> tuple[list[Sub], int]:
    """Open ``count`` subscriptions round-robin over ``task_ids``; (open ones, failures)."""
    loop = asyncio.get_running_loop()

    async def one(i: int) -> Sub:
        request = subscribe_request(task_ids[i % len(task_ids)])
        _, sub = await loop.create_connection(lambda: Sub(request, tally), "127.0.0.1", port)
        await asyncio.wait_for(sub.ready, 30)
        return sub

    return await open_many(count, one, "subscriptions")


def hub_scale_server() -> Server:
    port = free_port()
    argv = serve_argv(
        HUB_CLI, port, "waiter=bench_agents:Waiter?max_wait=900", "trigger=bench_agents:Trigger"
    )
    pythonpath = os.pathsep.join(p for p in (str(BENCH), os.environ.get("PYTHONPATH")) if p)
    return Server("a2a-hub-scale", argv, port, "/healthz", env={"PYTHONPATH": pythonpath})


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


async def idle_part(count: int) -> dict[str, Any]:
    server = hub_scale_server()
    why = server.start()
    if why is not None:
        raise RuntimeError(f"scale server did not start: {why}")
    try:
        task_ids = [await new_waiting_task(server.port) for _ in range(TASKS)]
        found = await idle_memory(
            server.pid, lambda n: open_subs(server.port, task_ids, n, Tally()), count
        )
        return {
            "subscriptions": found["opened"],
            "failed": found["failed"],
            "still_open_after_8s": found["still_open_after_8s"],
            "tasks": TASKS,
            "rss_before_kib": found["rss_before_kib"],
            "rss_after_kib": found["rss_after_kib"],
            "kib_per_subscription": found["kib_each"],
            "open_seconds": found["open_seconds"],
            "idle_server_cpu": found["idle_server_cpu"],
            "command": show(server.command),
        }
    finally:
        server.stop()


async def fanout_part(count: int, rounds: int) -> dict[str, Any]:
    server = hub_scale_server()
    why = server.start()
    if why is not None:
        raise RuntimeError(f"scale server did not start: {why}")
    try:
        task_id = await new_waiting_task(server.port)
        tally = Tally()
        subs, failures = await open_subs(server.port, [task_id], count, tally)
        delays = tally.delays
        await asyncio.sleep(1)
        to_last: list[float] = []
        missed = 0
        for _ in range(rounds):
            before = len(delays)
            tally.goal = before + len(subs)
            tally.done.clear()
            await trigger(server.port, task_id, "fire")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(tally.done.wait(), 10)
            got = delays[before:]
            missed += len(subs) - len(got)
            if got:
                to_last.append(max(got))
            await asyncio.sleep(0.2)
        await trigger(server.port, task_id, "stop")
        await asyncio.sleep(0.5)
        for s in subs:
            s.close()
        ms = [d * 1000 for d in delays]
        return {
            "subscribers": len(subs),
            "failed": failures,
            "rounds": rounds,
            "deliveries": len(ms),
            "missed": missed,
            "p50_ms": pct(ms, 50),
            "p99_ms": pct(ms, 99),
            "max_ms": max(ms) if ms else float("nan"),
            "to_last_p50_ms": statistics.median(to_last) * 1000 if to_last else float("nan"),
            "to_last_p99_ms": pct([t * 1000 for t in to_last], 99),
            "command": show(server.command),
        }
    finally:
        server.stop()


def main() -> int:
    if os.environ.get("BENCH_SCALE", "1") == "0":
        console.print("BENCH_SCALE=0: the scale part is skipped")
        return 0
    limit = raise_fd_limit()
    count = SUBS
    if limit < SUBS + 500:
        count = max(100, limit - 500)
        console.print(
            f"[yellow]open-files limit {limit}: {count} subscriptions instead of {SUBS} "
            "(raise ulimit -n)[/yellow]"
        )
    if PINNED:
        os.sched_setaffinity(0, {int(CLIENT_CPU)})
    console.print(
        f"[bold]Scale[/bold]: {count:,} idle SSE subscriptions over {TASKS} tasks; "
        f"one event to {FANOUT:,} subscribers x {FANOUT_ROUNDS}"
    )
    idle = uvloop.run(idle_part(count)) if "idle" in PARTS else None
    fan = uvloop.run(fanout_part(FANOUT, FANOUT_ROUNDS)) if "fanout" in PARTS else None
    data = load_results()
    old = data.get("scale") or {}
    data["scale"] = {
        "idle": idle if idle is not None else old.get("idle"),
        "fanout": fan if fan is not None else old.get("fanout"),
        "server_cpu": SERVER_CPU if PINNED else None,
        "client_cpu": CLIENT_CPU if PINNED else None,
        "client": "raw asyncio protocols on uvloop, one socket per subscription, REST "
        "GET /a2a/waiter/tasks/{id}:subscribe",
    }
    save_results(data)

    table = Table(title="a2a-hub scale (one process, one uvicorn worker, memory store)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("target", justify="right")
    if idle is not None:
        table.add_row(
            f"idle SSE subscriptions open (over {idle['tasks']} tasks)",
            f"{idle['subscriptions']:,} ({idle['failed']} failed, "
            f"{idle['still_open_after_8s']:,} still open after 8 s)",
            "10,000",
        )
        table.add_row(
            "server RSS before / with them",
            f"{idle['rss_before_kib'] / 1024:.1f} / {idle['rss_after_kib'] / 1024:.1f} MiB",
            "",
        )
        table.add_row(
            "resident memory per subscription",
            f"{idle['kib_per_subscription']:.1f} KiB",
            "<= 12 KiB",
        )
        table.add_row(
            "time to open them / idle server CPU",
            f"{idle['open_seconds']:.1f} s / {idle['idle_server_cpu']:.1%}",
            "",
        )
    if fan is not None:
        table.add_row(
            f"one event to {fan['subscribers']:,} subscribers: delivery p50 / p99 / max",
            f"{fan['p50_ms']:.1f} / {fan['p99_ms']:.1f} / {fan['max_ms']:.1f} ms",
            "p99 <= 100 ms",
        )
        table.add_row(
            f"  until the last subscriber has it (p50 / p99 of {fan['rounds']} events)",
            f"{fan['to_last_p50_ms']:.1f} / {fan['to_last_p99_ms']:.1f} ms",
            "",
        )
        table.add_row("  deliveries / missed", f"{fan['deliveries']:,} / {fan['missed']}", "")
    console.print(table)
    command = (idle or fan or {}).get("command", "")
    console.print(f"  server: {command}  (PYTHONPATH=bench)", soft_wrap=True)
    console.print(
        f"  client: this process (bench/scale.py) pinned to core {CLIENT_CPU}; "
        + data["scale"]["client"]
    )
    why = draw_chart()
    if why:
        console.print(f"[yellow]chart failed: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
