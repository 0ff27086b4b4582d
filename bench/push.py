"""`make bench`, part 3: push notifications (skip with BENCH_PUSH=0).

1. Delivery rate of one instance: BENCH_PUSH_DELIVERIES (5,000) deliveries are put in a
   SQLite store's outbox (one task and one config each, written through the store API),
   then ``a2a-hub serve`` starts on that store and its dispatcher sends them to a local
   receiver; the rate is deliveries / (last arrival - first arrival).
2. ``SendMessage`` throughput (echo agent, memory store, BENCH_PUSH_CONCURRENCY (32)
   connections for BENCH_DURATION (5) seconds each) without and with one push config per
   task (inline in the request), the receiver answering every notification: BENCH_ROUNDS
   (3) rounds of one run each way on one server, medians compared.  A run with push
   configs is followed by a wait until every notification it queued (three per task) has
   arrived: the share sent while the sends ran and the time the rest took are reported,
   and the server's CPU time per task, its notifications included.  The ratio is the
   median of the rounds' ratios (runs made one right after the other).

The receiver and the clients are raw asyncio protocols on uvloop in this process (pinned to
the client core), answering ``200`` with keep-alive; the hub is pinned to the server core.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import uvloop
from benchlib import (
    CLIENT_CPU,
    HUB_CLI,
    PINNED,
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

DELIVERIES = env_int("BENCH_PUSH_DELIVERIES", 5_000)
CONCURRENCY = env_int("BENCH_PUSH_CONCURRENCY", 32)
DURATION = env_float("BENCH_DURATION", 5.0)
ROUNDS = env_int("BENCH_ROUNDS", 3)


class Receiver(asyncio.Protocol):
    """A minimal keep-alive HTTP/1.1 server answering 200 to every request."""

    arrivals: list[float] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            length = 0
            for line in self.buf[:head_end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            end = head_end + 4 + length
            if len(self.buf) < end:
                return
            self.buf = self.buf[end:]
            Receiver.arrivals.append(time.perf_counter())
            self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")


def hub(store: str, port: int) -> Server:
    argv = [
        str(HUB_CLI), "serve", "--agent", "echo", "--store", store, "--host", "127.0.0.1",
        "--port", str(port), "--log-level", "warning", "--push-allow-hosts", "127.0.0.1",
    ]  # fmt: skip
    return Server(f"a2a-hub-push-{port}", argv, port, "/healthz")


async def fill_outbox(store_url: str, hook: str, count: int) -> None:
    from a2a_hub.protocol.types import (
        Message,
        Part,
        Role,
        StreamResponse,
        Task,
        TaskPushNotificationConfig,
        TaskState,
        TaskStatus,
        TaskStatusUpdateEvent,
    )
    from a2a_hub.stores import open_store
    from a2a_hub.stores.base import Delivery, TaskEvent

    store = open_store(store_url)
    await store.open()
    try:
        for i in range(count):
            tid = f"t{i}"
            msg = Message(message_id=f"m{i}", role=Role.USER, parts=[Part(text="x")])
            task = Task(id=tid, context_id="c", status=TaskStatus(state=TaskState.SUBMITTED),
                        history=[msg])  # fmt: skip
            await store.save_task("echo", task, [TaskEvent(1, StreamResponse(task=task))])
            await store.set_push_config(
                "echo", tid, TaskPushNotificationConfig(url=hook, id="p", task_id=tid)
            )
            done = TaskStatus(state=TaskState.COMPLETED)
            update = TaskStatusUpdateEvent(task_id=tid, context_id="c", status=done)
            await store.save_task(
                "echo",
                Task(id=tid, context_id="c", status=done, history=[msg]),
                [TaskEvent(2, StreamResponse(status_update=update))],
                deliveries=[Delivery(agent_id="echo", task_id=tid, config_id="p", seq=2)],
            )
    finally:
        await store.close()


async def delivery_rate(hook_port: int) -> dict[str, Any]:
    hook = f"http://127.0.0.1:{hook_port}/hook"
    with tempfile.TemporaryDirectory() as tmp:
        store = f"sqlite:///{Path(tmp) / 'push.db'}"
        await fill_outbox(store, hook, DELIVERIES)
        Receiver.arrivals = []
        server = hub(store, free_port())
        why = await asyncio.to_thread(server.start)
        if why:
            raise RuntimeError(f"a2a-hub did not start: {why}")
        try:
            for _ in range(6000):  # at most 5 minutes
                if len(Receiver.arrivals) >= DELIVERIES:
                    break
                await asyncio.sleep(0.05)
        finally:
            await asyncio.to_thread(server.stop)
    got = Receiver.arrivals
    span = (got[-1] - got[0]) if len(got) > 1 else 0.0
    return {
        "deliveries": len(got),
        "expected": DELIVERIES,
        "seconds": span,
        "per_second": (len(got) - 1) / span if span else 0.0,
        "command": " ".join(server.argv),
    }


def send_request(with_push: bool, hook: str, n: int) -> bytes:
    params: dict[str, Any] = {
        "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    }
    if with_push:
        params["configuration"] = {"taskPushNotificationConfig": {"url": hook}}
    body = json.dumps(
        {"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": params}
    ).encode()
    return (
        b"POST /a2a/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


async def client_loop(port: int, with_push: bool, hook: str, stop: float, done: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    n = 0
    try:
        while time.perf_counter() < stop:
            writer.write(send_request(with_push, hook, n))
            n += 1
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await reader.readexactly(length)
            if b'"result"' in body:
                done[0] += 1
    finally:
        writer.close()


async def drained(expected: int, within: float = 120.0) -> float | None:
    """Seconds until the receiver holds ``expected`` notifications (None: not within)."""
    start = time.perf_counter()
    while len(Receiver.arrivals) < expected:
        if time.perf_counter() - start > within:
            return None
        await asyncio.sleep(0.01)
    return time.perf_counter() - start


async def send_rate(hook_port: int) -> dict[str, Any]:
    """BENCH_ROUNDS rounds, each one run without and one with a push config (the order
    rotating), on one server; after a run with push configs, the next run starts only once
    every notification it queued has arrived (so no run pays for another's deliveries)."""
    hook = f"http://127.0.0.1:{hook_port}/hook"
    server = hub("memory://", free_port())
    why = await asyncio.to_thread(server.start)
    if why:
        raise RuntimeError(f"a2a-hub did not start: {why}")
    runs: dict[str, list[float]] = {"without": [], "with_push": []}
    cpu: dict[str, list[float]] = {"without": [], "with_push": []}
    ratios: list[float] = []
    during: list[float] = []
    lag: list[float] = []
    out: dict[str, Any] = {"command": " ".join(server.argv), "concurrency": CONCURRENCY}
    try:
        await asyncio.sleep(1.0)
        for r in range(ROUNDS):
            order = [("without", False), ("with_push", True)]
            for label, with_push in order if r % 2 == 0 else order[::-1]:
                Receiver.arrivals = []
                done = [0]
                used = proc_cpu_seconds(server.pid)
                start = time.perf_counter()
                stop = start + DURATION
                await asyncio.gather(
                    *(
                        client_loop(server.port, with_push, hook, stop, done)
                        for _ in range(CONCURRENCY)
                    )
                )
                runs[label].append(done[0] / (time.perf_counter() - start))
                if with_push:
                    # working, the echo artifact, completed: three notifications a task
                    expected = 3 * done[0]
                    during.append(len(Receiver.arrivals) / expected if expected else 0.0)
                    waited = await drained(expected)
                    if waited is None:
                        raise RuntimeError(
                            f"only {len(Receiver.arrivals):,} of {expected:,} notifications arrived"
                        )
                    lag.append(waited)
                # the server's CPU per task, its notifications included (sent by now)
                cpu[label].append((proc_cpu_seconds(server.pid) - used) / max(done[0], 1))
                console.print(
                    f"  round {r + 1}/{ROUNDS} {label:9} {runs[label][-1]:8,.0f} sends/s "
                    f"{cpu[label][-1] * 1e6:6.0f} µs CPU a task"
                )
            ratios.append(runs["with_push"][-1] / runs["without"][-1])
    finally:
        await asyncio.to_thread(server.stop)
    out["without"] = statistics.median(runs["without"])
    out["with_push"] = statistics.median(runs["with_push"])
    out["rounds"] = runs
    out["ratio"] = statistics.median(ratios)
    out["cpu_us"] = {k: statistics.median(v) * 1e6 for k, v in cpu.items()}
    out["delivered_during"] = statistics.median(during)
    out["drain_seconds"] = statistics.median(lag)
    return out


async def run() -> tuple[dict[str, Any], dict[str, Any]]:
    loop = asyncio.get_running_loop()
    hook_port = free_port()
    receiver = await loop.create_server(Receiver, "127.0.0.1", hook_port)
    try:
        rate = await delivery_rate(hook_port)
        sends = await send_rate(hook_port)
    finally:
        receiver.close()
    return rate, sends


def main() -> int:
    if os.environ.get("BENCH_PUSH", "1") == "0":
        console.print("BENCH_PUSH=0: the push part is skipped")
        return 0
    if PINNED:
        os.sched_setaffinity(0, {int(CLIENT_CPU)})
    console.print(
        f"[bold]Push[/bold]: {DELIVERIES:,} deliveries from one instance; SendMessage with "
        f"and without a push config ({CONCURRENCY} connections, {DURATION:g} s)"
    )
    rate, sends = uvloop.run(run())
    data = load_results()
    data["push"] = {"delivery": rate, "send": sends}
    save_results(data)
    table = Table(title="a2a-hub push notifications (one process, one uvicorn worker)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("target", justify="right")
    table.add_row(
        "deliveries per second to a local receiver (SQLite outbox)",
        f"{rate['per_second']:,.0f} ({rate['deliveries']:,} of {rate['expected']:,} "
        f"in {rate['seconds']:.1f} s)",
        ">= 1,000",
    )
    table.add_row("SendMessage/s without push config", f"{sends['without']:,.0f}", "")
    table.add_row("SendMessage/s with one push config per task", f"{sends['with_push']:,.0f}", "")
    table.add_row("ratio (median of the rounds' ratios)", f"{sends['ratio']:.0%}", ">= 70 %")
    table.add_row(
        "server CPU a task, without / with its 3 notifications",
        f"{sends['cpu_us']['without']:.0f} / {sends['cpu_us']['with_push']:.0f} µs",
        "",
    )
    table.add_row(
        "notifications sent while the sends ran / time to send the rest after",
        f"{sends['delivered_during']:.0%} / {sends['drain_seconds']:.1f} s",
        "",
    )
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
