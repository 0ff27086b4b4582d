"""`make bench`, part 4: the WebSocket channel (skip with BENCH_WS=0).

1. Through one socket, for BENCH_DURATION (5) seconds each, with BENCH_WS_WINDOW (32)
   actions in flight:
   ``ping`` -> ``pong`` round trips per second (the channel alone), and
   ``send_message`` to the echo agent -> its task completed (``task_status_update``
   ``completed``), with every server event of the task read: tasks and events per second.
2. Fan-out: BENCH_FANOUT_SUBS (1,000) sockets follow one waiting task (``sync_state`` with
   ``last_seq``); BENCH_FANOUT_ROUNDS (20) times the task publishes one event, stamped with
   ``time.time()`` just before; the delay of each delivery is the socket's arrival time minus
   that stamp.  The same run measures the same fan-out over SSE (``bench/scale.py``'s
   subscribers) right after, on a fresh server, so the two sit side by side.
3. Idle sockets: BENCH_WS_IDLE (10,000) sockets, each following one of BENCH_SCALE_TASKS
   (100) waiting tasks (``sync_state`` with ``last_seq``), held by one a2a-hub process;
   resident memory per socket = (RSS with them open - RSS before) / count, measured as
   ``bench/scale.py`` measures idle SSE subscriptions (a warm-up of 200 sockets first; the
   sockets still open after 8 s and the server's CPU while they idle are reported too).

BENCH_WS_PARTS (``single,fanout,idle``) chooses the parts to run.

The server is ``a2a-hub serve`` (echo, and the bench agents ``waiter``/``trigger`` of
``bench/bench_agents.py``), memory store, one uvicorn worker pinned to core 0.  The clients
are raw asyncio protocols on uvloop in this process, pinned to core 1: an HTTP upgrade, then
unmasked server frames parsed by hand and masked client frames; no compression offered.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import struct
import sys
import time
import uuid
from typing import Any, cast

import uvloop
from benchlib import (
    CLIENT_CPU,
    PINNED,
    SERVER_CPU,
    env_float,
    env_int,
    idle_memory,
    load_results,
    open_many,
    raise_fd_limit,
    save_results,
)
from rich.console import Console
from rich.table import Table
from scale import (
    FANOUT,
    FANOUT_ROUNDS,
    MARK,
    TASKS,
    fanout_part,
    hub_scale_server,
    new_waiting_task,
    pct,
    trigger,
)

console = Console(width=200)

DURATION = env_float("BENCH_DURATION", 5.0)
WINDOW = env_int("BENCH_WS_WINDOW", 32)
IDLE = env_int("BENCH_WS_IDLE", 10_000)
PARTS = set(os.environ.get("BENCH_WS_PARTS", "single,fanout,idle").split(","))
_MASK = b"\x5a\xa5\x3c\xc3"


def client_frame(text: str | bytes, opcode: int = 1) -> bytes:
    """One masked client frame (RFC 6455 §5.3): a text, or the bytes of a control frame."""
    payload = text.encode() if isinstance(text, str) else text
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
    elif size < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
    mask = (_MASK * (size // 4 + 1))[:size]
    masked = bytes(a ^ b for a, b in zip(payload, mask, strict=True))
    return head + _MASK + masked


class Socket(asyncio.Protocol):
    """One WebSocket client: the upgrade, then each server text frame to ``on_frame``."""

    def __init__(self, path: str, port: int) -> None:
        key = base64.b64encode(os.urandom(16)).decode()
        self.request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
        self.open: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.upgraded = False
        self.closed = False
        self.arrived = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.arrived = time.time()
        self.buf += data
        if not self.upgraded:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.buf = self.buf[:end], self.buf[end + 4 :]
            if not head.startswith(b"HTTP/1.1 101"):
                self._fail(f"upgrade answered {head[:200]!r}")
                return
            self.upgraded = True
            self.open.set_result(None)
        buf = self.buf
        at = 0
        while len(buf) - at >= 2:
            opcode = buf[at] & 0x0F
            size = buf[at + 1] & 0x7F
            start = at + 2
            if size == 126:
                if len(buf) - at < 4:
                    break
                size = struct.unpack_from("!H", buf, at + 2)[0]
                start = at + 4
            elif size == 127:
                if len(buf) - at < 10:
                    break
                size = struct.unpack_from("!Q", buf, at + 2)[0]
                start = at + 10
            if len(buf) < start + size:
                break
            payload = buf[start : start + size]
            at = start + size
            if opcode == 1:
                self.on_frame(payload)
            elif opcode == 9 and self.transport is not None:  # ping: pong, same bytes
                self.transport.write(client_frame(payload, 10))
            elif opcode == 8:
                self.closed = True
        self.buf = buf[at:]

    def on_frame(self, payload: bytes) -> None:  # overridden
        pass

    def send(self, text: str) -> None:
        assert self.transport is not None
        self.transport.write(client_frame(text))

    def _fail(self, why: str) -> None:
        if not self.open.done():
            self.open.set_exception(RuntimeError(why))
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.open.done():
            self.open.set_exception(RuntimeError(f"closed before the upgrade: {exc}"))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def connect(port: int, path: str, factory: type[Socket], *args: Any) -> Any:
    loop = asyncio.get_running_loop()
    _, sock = await loop.create_connection(lambda: factory(path, port, *args), "127.0.0.1", port)
    await asyncio.wait_for(sock.open, 30)
    return sock


# --- 1. one socket ---------------------------------------------------------------------


class Pinger(Socket):
    """Keeps ``WINDOW`` pings in flight; counts pongs."""

    def __init__(self, path: str, port: int) -> None:
        super().__init__(path, port)
        self.pongs = 0
        self.events = 0
        self.running = True
        self.frame = client_frame('{"action":"ping","client_timestamp":"x"}')

    def on_frame(self, payload: bytes) -> None:
        self.events += 1
        if b'"event":"pong"' in payload:
            self.pongs += 1
            if self.running and self.transport is not None:
                self.transport.write(self.frame)


class Sender(Socket):
    """Keeps ``WINDOW`` send_message actions in flight; counts completed tasks and events."""

    def __init__(self, path: str, port: int) -> None:
        super().__init__(path, port)
        self.completed = 0
        self.failed = 0
        self.events = 0
        self.running = True

    def fire(self) -> None:
        mid = uuid.uuid4().hex
        self.send(f'{{"action":"send_message","message_id":"{mid}","text":"hello bench"}}')

    def on_frame(self, payload: bytes) -> None:
        self.events += 1
        if b'"event":"task_status_update"' not in payload:
            if b'"event":"error"' in payload:
                self.failed += 1
                if self.running:
                    self.fire()
            return
        if b'"status":"completed"' in payload:
            self.completed += 1
        elif b'"status":"failed"' in payload or b'"status":"canceled"' in payload:
            self.failed += 1
        else:
            return
        if self.running:
            self.fire()


async def one_socket(port: int) -> dict[str, Any]:
    pinger: Pinger = await connect(port, "/a2a/echo/ws", Pinger)
    for _ in range(WINDOW):
        pinger.send('{"action":"ping","client_timestamp":"x"}')
    await asyncio.sleep(1.0)  # warm-up
    p0, t0 = pinger.pongs, time.monotonic()
    await asyncio.sleep(DURATION)
    pongs = (pinger.pongs - p0) / (time.monotonic() - t0)
    pinger.running = False
    pinger.close()

    sender: Sender = await connect(port, "/a2a/echo/ws", Sender)
    for _ in range(WINDOW):
        sender.fire()
    await asyncio.sleep(1.0)
    c0, e0, t0 = sender.completed, sender.events, time.monotonic()
    await asyncio.sleep(DURATION)
    elapsed = time.monotonic() - t0
    tasks = (sender.completed - c0) / elapsed
    events = (sender.events - e0) / elapsed
    sender.running = False
    await asyncio.sleep(0.5)
    sender.close()
    return {
        "window": WINDOW,
        "pongs_per_s": pongs,
        "tasks_per_s": tasks,
        "events_per_s": events,
        "failed": sender.failed,
    }


# --- 2. fan-out ---------------------------------------------------------------------


class Follower(Socket):
    """Follows one task; records the delay of each timestamped chunk."""

    def __init__(self, path: str, port: int, task_id: str, delays: list[float]) -> None:
        super().__init__(path, port)
        self.task_id = task_id
        self.delays = delays
        self.synced: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_frame(self, payload: bytes) -> None:
        if b'"event":"sync_completed"' in payload:
            if not self.synced.done():
                self.synced.set_result(None)
            return
        at = payload.find(MARK)
        if at < 0 or b'"event":"content_stream"' not in payload:
            return
        start = at + len(MARK)
        stop = start
        while stop < len(payload) and payload[stop] in b"0123456789.":
            stop += 1
        self.delays.append(self.arrived - float(payload[start:stop]))


async def open_followers(
    port: int, task_ids: list[str], count: int, delays: list[float]
) -> tuple[list[Follower], int]:
    """Open ``count`` sockets following ``task_ids`` round-robin, each once its
    ``sync_state`` is answered; (open ones, failures)."""

    async def one(i: int) -> Follower:
        task_id = task_ids[i % len(task_ids)]
        sync = json.dumps({"action": "sync_state", "last_seq": {task_id: 1}})
        sock: Follower = await connect(port, "/a2a/waiter/ws", Follower, task_id, delays)
        sock.send(sync)
        await asyncio.wait_for(sock.synced, 30)
        return sock

    return await open_many(count, one, "sockets")


async def ws_fanout(count: int, rounds: int) -> dict[str, Any]:
    server = ws_server()
    why = server.start()
    if why is not None:
        raise RuntimeError(f"server did not start: {why}")
    try:
        task_id = await new_waiting_task(server.port)
        delays: list[float] = []
        socks, failures = await open_followers(server.port, [task_id], count, delays)
        await asyncio.sleep(1)
        to_last: list[float] = []
        missed = 0
        for _ in range(rounds):
            before = len(delays)
            await trigger(server.port, task_id, "fire")
            for _ in range(1000):  # until every socket has it (10 s at most)
                if len(delays) - before >= len(socks):
                    break
                await asyncio.sleep(0.01)
            got = delays[before:]
            missed += len(socks) - len(got)
            if got:
                to_last.append(max(got))
            await asyncio.sleep(0.2)
        await trigger(server.port, task_id, "stop")
        await asyncio.sleep(0.5)
        for s in socks:
            s.close()
        ms = [d * 1000 for d in delays]
        return {
            "sockets": len(socks),
            "failed": failures,
            "rounds": rounds,
            "deliveries": len(ms),
            "missed": missed,
            "p50_ms": pct(ms, 50),
            "p99_ms": pct(ms, 99),
            "max_ms": max(ms) if ms else float("nan"),
            "to_last_p50_ms": pct([t * 1000 for t in to_last], 50),
            "to_last_p99_ms": pct([t * 1000 for t in to_last], 99),
        }
    finally:
        server.stop()


# --- 3. idle sockets ------------------------------------------------------------------


def ws_server() -> Any:
    """The scale server, allowing ten thousand sockets to one agent."""
    server = hub_scale_server()
    server.argv += ["--ws-max-sockets", str(max(IDLE, FANOUT) + 1000)]
    return server


async def idle_part(count: int) -> dict[str, Any]:
    """Resident memory of ``count`` idle sockets following waiting tasks (see scale.py)."""
    server = ws_server()
    why = server.start()
    if why is not None:
        raise RuntimeError(f"server did not start: {why}")
    try:
        task_ids = [await new_waiting_task(server.port) for _ in range(TASKS)]
        found = await idle_memory(
            server.pid, lambda n: open_followers(server.port, task_ids, n, []), count
        )
        return {
            "sockets": found["opened"],
            "failed": found["failed"],
            "still_open_after_8s": found["still_open_after_8s"],
            "tasks": TASKS,
            "rss_before_kib": found["rss_before_kib"],
            "rss_after_kib": found["rss_after_kib"],
            "kib_per_socket": found["kib_each"],
            "open_seconds": found["open_seconds"],
            "idle_server_cpu": found["idle_server_cpu"],
        }
    finally:
        server.stop()


async def single_part() -> dict[str, Any]:
    server = hub_scale_server()
    server.argv += ["--agent", "echo"]
    why = server.start()
    if why is not None:
        raise RuntimeError(f"server did not start: {why}")
    try:
        return await one_socket(server.port)
    finally:
        server.stop()


def main() -> int:
    if os.environ.get("BENCH_WS", "1") == "0":
        console.print("BENCH_WS=0: the WebSocket part is skipped")
        return 0
    limit = raise_fd_limit()
    idle_count = IDLE
    if limit < IDLE + 500:
        idle_count = max(100, limit - 500)
        console.print(
            f"[yellow]open-files limit {limit}: {idle_count} idle sockets instead of {IDLE} "
            "(raise ulimit -n)[/yellow]"
        )
    if PINNED:
        os.sched_setaffinity(0, {int(CLIENT_CPU)})
    console.print(
        f"[bold]WebSocket[/bold] ({', '.join(sorted(PARTS))}): one socket ({WINDOW} in flight, "
        f"{DURATION:g} s); one event to {FANOUT:,} sockets x {FANOUT_ROUNDS}, then the same "
        f"over SSE; {idle_count:,} idle sockets over {TASKS} tasks"
    )
    single = uvloop.run(single_part()) if "single" in PARTS else None
    ws = sse = None
    if "fanout" in PARTS:
        ws = uvloop.run(ws_fanout(FANOUT, FANOUT_ROUNDS))
        sse = uvloop.run(fanout_part(FANOUT, FANOUT_ROUNDS))
    idle = uvloop.run(idle_part(idle_count)) if "idle" in PARTS and idle_count else None
    data = load_results()
    data["websocket"] = {
        "single": single,
        "fanout": ws,
        "sse_fanout": None if sse is None else {k: v for k, v in sse.items() if k != "command"},
        "idle": idle,
        "server_cpu": SERVER_CPU if PINNED else None,
        "client_cpu": CLIENT_CPU if PINNED else None,
        "client": "raw asyncio protocols on uvloop, one socket each, no compression",
    }
    save_results(data)

    table = Table(title="a2a-hub WebSocket (one process, one uvicorn worker, memory store)")
    table.add_column("measure")
    table.add_column("WebSocket", justify="right")
    table.add_column("SSE", justify="right")
    table.add_column("target", justify="right")
    if single is not None:
        table.add_row(
            f"one socket: ping -> pong ({WINDOW} in flight)",
            f"{single['pongs_per_s']:,.0f} /s",
            "",
            "",
        )
        table.add_row(
            "one socket: send_message -> completed (echo)",
            f"{single['tasks_per_s']:,.0f} tasks/s, {single['events_per_s']:,.0f} events/s",
            "",
            "",
        )
    if ws is not None and sse is not None:
        table.add_row(
            f"one event to {ws['sockets']:,} / {sse['subscribers']:,}: p50 / p99 / max",
            f"{ws['p50_ms']:.1f} / {ws['p99_ms']:.1f} / {ws['max_ms']:.1f} ms",
            f"{sse['p50_ms']:.1f} / {sse['p99_ms']:.1f} / {sse['max_ms']:.1f} ms",
            "p99 <= 100 ms",
        )
        table.add_row(
            f"  until the last has it (p50 / p99 of {ws['rounds']} events)",
            f"{ws['to_last_p50_ms']:.1f} / {ws['to_last_p99_ms']:.1f} ms",
            f"{sse['to_last_p50_ms']:.1f} / {sse['to_last_p99_ms']:.1f} ms",
            "",
        )
        table.add_row(
            "  deliveries / missed",
            f"{ws['deliveries']:,} / {ws['missed']}",
            f"{sse['deliveries']:,} / {sse['missed']}",
            "",
        )
    if idle is not None:
        table.add_row(
            f"idle sockets open (over {idle['tasks']} tasks)",
            f"{idle['sockets']:,} ({idle['failed']} failed, "
            f"{idle['still_open_after_8s']:,} still open after 8 s)",
            "(bench/scale.py)",
            "10,000",
        )
        table.add_row(
            "  server RSS before / with them",
            f"{idle['rss_before_kib'] / 1024:.1f} / {idle['rss_after_kib'] / 1024:.1f} MiB",
            "",
            "",
        )
        table.add_row(
            "  resident memory per idle socket",
            f"{idle['kib_per_socket']:.1f} KiB",
            "",
            "<= 12 KiB",
        )
        table.add_row(
            "  time to open them / idle server CPU",
            f"{idle['open_seconds']:.1f} s / {idle['idle_server_cpu']:.1%}",
            "",
            "",
        )
    console.print(table)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
