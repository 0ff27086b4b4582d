"""Server CPU per request of two trees side by side, under the same load at the same time.

On a shared machine, CPU time per request measured one tree after the other varies by
more than the changes it is meant to show (other work pollutes caches and changes how many
requests each loop turn batches).  This runs both trees' ``a2a-hub serve --agent echo
--store memory://`` at once, both pinned to core 0, each loaded by its own ``wrk -c16``
on core 1 for the same seconds, and prints each server's CPU time (user + system, all
threads) divided by its requests; whatever else runs on the machine weighs on both alike.
The absolute figures are those of two servers sharing one core (higher than one alone);
compare the two columns of a round::

    python3 bench/server_cpu.py /work/main /work/wt-mine send 4 5     # A B scenario rounds s
    python3 bench/server_cpu.py /work/main /work/wt-mine stream 4 5

Each tree needs its own ``.venv`` (``make .venv/.installed-dev``).
"""

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from benchlib import free_port, proc_cpu_seconds, serve_argv

TEXT = "hello bench"
MSG = {"messageId": "@MID@", "role": "ROLE_USER", "parts": [{"text": TEXT}]}


def body(m):
    return json.dumps(
        {"jsonrpc": "2.0", "id": "@MID@", "method": m, "params": {"message": MSG}},
        separators=(",", ":"),
    )


SC = {
    "send": (body("SendMessage"), ["Content-Type: application/json", "A2A-Version: 1.0"]),
    "stream": (
        body("SendStreamingMessage"),
        ["Content-Type: application/json", "A2A-Version: 1.0", "Accept: text/event-stream"],
    ),
}
LUA = str(Path(__file__).parent / "wrk" / "a2a.lua")


port = free_port
cpu = proc_cpu_seconds  # user + system CPU of the process, all its threads


a, b, sc, rounds, secs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
bd, h = SC[sc]
path = f"/tmp/server-cpu-{os.getpid()}-{sc}.json"
open(path, "w").write(bd)
res = {a: [], b: []}
for r in range(rounds):
    procs = {}
    for t in (a, b):
        p = port()
        procs[t] = (
            p,
            subprocess.Popen(
                ["taskset", "-c", "0", *serve_argv(f"{t}/.venv/bin/a2a-hub", p)],
                env=dict(os.environ, PYTHONHASHSEED="0"),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
        )
    try:
        for t, (p, proc) in procs.items():
            for _ in range(200):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{p}/healthz", timeout=1)
                    break
                except Exception:
                    time.sleep(0.1)

        def wrk(p, d, out):
            o = subprocess.run(
                [
                    "taskset",
                    "-c",
                    "1",
                    "wrk",
                    "-t1",
                    "-c16",
                    f"-d{d}s",
                    "--timeout",
                    "10s",
                    "-s",
                    LUA,
                    f"http://127.0.0.1:{p}",
                    "--",
                    "POST",
                    "/a2a/echo",
                    path,
                    f"n{time.time_ns()}",
                    "TASK_STATE_COMPLETED",
                    *h,
                ],
                capture_output=True,
                text=True,
            ).stdout
            out.append(json.loads(o.split("WRKJSON ", 1)[1].splitlines()[0]))

        for phase in ("warm", "run"):
            outs = {t: [] for t in procs}
            c0 = {t: cpu(procs[t][1].pid) for t in procs}
            ths = [
                threading.Thread(
                    target=wrk, args=(procs[t][0], 2 if phase == "warm" else secs, outs[t])
                )
                for t in procs
            ]
            [x.start() for x in ths]
            [x.join() for x in ths]
            c1 = {t: cpu(procs[t][1].pid) for t in procs}
        for t in procs:
            w = outs[t][0]
            assert w["bad"] == 0, w
            us = (c1[t] - c0[t]) / w["requests"] * 1e6
            res[t].append(us)
            print(
                f"round {r} {os.path.basename(t)} {sc}: {us:.1f} us/req, {w['requests'] / w['duration_us'] * 1e6:.0f} req/s",
                flush=True,
            )
    finally:
        for t, (p, proc) in procs.items():
            proc.terminate()
            proc.wait()
for t in (a, b):
    print(
        f"MEDIAN {os.path.basename(t)} {sc}: {statistics.median(res[t]):.1f} us/req ({', '.join(f'{x:.1f}' for x in res[t])})"
    )
