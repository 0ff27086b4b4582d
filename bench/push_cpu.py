"""Server CPU of SendMessage with one push config per task, A/B between source trees.

The ratio ``bench/push.py`` reports swings by ±20 points on a shared machine; the server's
CPU time per task is steadier.  Usage::

    git archive BASE src | tar -x -C /tmp/base   # the tree to compare against
    PYTHONPATH=$PWD/src .venv/bin/python bench/push_cpu.py base=/tmp/base/src new=$PWD/src

Each ``NAME=SRC[,VAR=VALUE...]`` starts one hub (memory store, echo agent, pinned to the
server core) with ``PYTHONPATH=SRC`` and the extra environment.  ``PUSH_CPU_ROUNDS`` (6)
rounds, the hubs' order alternating; in each, every hub gets ``PUSH_CPU_DURATION`` (3) s
of SendMessage without push config, then as long with one (32 connections, as in
``bench/push.py``), and the bench waits until all notifications (three per task) arrived.
Per hub, medians of the rounds: CPU per task without and with (its notifications
included), their difference per notification, CPU per notification sent after the run
(the server doing nothing else), CPU per task during the run with push (its share of
notifications sent then included) and ``without / during`` (what the throughput ratio
would be if the server were CPU-bound and alone), the throughput ratio, the share of
notifications sent during the run and the time the rest took.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from typing import Any

import push
import uvloop
from benchlib import CLIENT_CPU, PINNED, Server, env_float, env_int, free_port, proc_cpu_seconds

ROUNDS = env_int("PUSH_CPU_ROUNDS", 6)
DURATION = env_float("PUSH_CPU_DURATION", 3.0)
CONNECTIONS = 32


async def run_once(server: Server, with_push: bool, hook: str) -> dict[str, float]:
    push.Receiver.arrivals = []
    done = [0]
    used = proc_cpu_seconds(server.pid)
    start = time.perf_counter()
    stop = start + DURATION
    await asyncio.gather(
        *(push.client_loop(server.port, with_push, hook, stop, done) for _ in range(CONNECTIONS))
    )
    tasks = max(done[0], 1)
    out = {"rate": done[0] / (time.perf_counter() - start)}
    ran = proc_cpu_seconds(server.pid)
    if with_push:
        expected = 3 * done[0]
        out["during"] = len(push.Receiver.arrivals) / max(expected, 1)
        lag = await push.drained(expected)
        if lag is None:
            raise RuntimeError(f"only {len(push.Receiver.arrivals)} of {expected} arrived")
        out["lag"] = lag
        after = max(expected - round(out["during"] * expected), 1)
        out["drain_us"] = (proc_cpu_seconds(server.pid) - ran) / after * 1e6
        out["run_us"] = (ran - used) / tasks * 1e6
    out["cpu_us"] = (proc_cpu_seconds(server.pid) - used) / tasks * 1e6
    return out


async def main(variants: dict[str, str]) -> None:
    loop = asyncio.get_running_loop()
    hook_port = free_port()
    receiver = await loop.create_server(push.Receiver, "127.0.0.1", hook_port)
    hook = f"http://127.0.0.1:{hook_port}/hook"
    servers: dict[str, Server] = {}
    results: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {}
    try:
        for name, spec in variants.items():
            src, *extra = spec.split(",")
            server = push.hub("memory://", free_port())
            server.key = f"push-cpu-{name}"
            server.env = {"PYTHONPATH": src, **dict(e.split("=", 1) for e in extra)}
            why = await asyncio.to_thread(server.start)
            if why:
                raise RuntimeError(f"{name} did not start: {why}")
            servers[name] = server
            results[name] = []
        for server in servers.values():  # warm-up
            await run_once(server, True, hook)
            await run_once(server, False, hook)
        for r in range(ROUNDS):
            names = list(servers) if r % 2 == 0 else list(servers)[::-1]
            for name in names:
                without = await run_once(servers[name], False, hook)
                with_push = await run_once(servers[name], True, hook)
                results[name].append((without, with_push))
                print(
                    f"round {r + 1}/{ROUNDS} {name:8} without {without['cpu_us']:4.0f} µs/task "
                    f"| with {with_push['cpu_us']:4.0f} µs/task, during the run "
                    f"{with_push['run_us']:4.0f}; {with_push['drain_us']:4.0f} µs/notification "
                    f"after; ratio {with_push['rate'] / without['rate']:.0%}",
                    flush=True,
                )
    finally:
        for server in servers.values():
            await asyncio.to_thread(server.stop)
        receiver.close()
    med = statistics.median
    for name, rows in results.items():

        def of(which: int, key: str, rows: Any = rows) -> float:
            return float(med([row[which][key] for row in rows]))

        wo, w, run = of(0, "cpu_us"), of(1, "cpu_us"), of(1, "run_us")
        ratio = med([b["rate"] / a["rate"] for a, b in rows])
        print(
            f"{name}: CPU per task without {wo:.0f} µs, with {w:.0f} µs "
            f"({(w - wo) / 3:.0f} µs a notification); {of(1, 'drain_us'):.0f} µs a "
            f"notification sent after the run; during the run {run:.0f} µs a task "
            f"(without/during {wo / run:.0%}); throughput ratio {ratio:.0%}; sent during "
            f"{of(1, 'during'):.0%}, the rest within {of(1, 'lag'):.1f} s"
        )


if __name__ == "__main__":
    if PINNED:
        os.sched_setaffinity(0, {int(CLIENT_CPU)})
    args = dict(a.split("=", 1) for a in sys.argv[1:]) or {"this": os.path.abspath("src")}
    uvloop.run(main(args))
