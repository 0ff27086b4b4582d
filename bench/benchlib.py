"""What bench/run.py and bench/scale.py share: paths, settings, pinning, server processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
WORK = BENCH / ".work"  # logs and request templates of the last run (git-ignored)
HUB_PYTHON = ROOT / ".venv" / "bin" / "python"
HUB_CLI = ROOT / ".venv" / "bin" / "a2a-hub"
SDK_PYTHON = BENCH / ".venv-sdk" / "bin" / "python"
RESULTS_JSON = BENCH / "results.json"
RESULTS_PNG = BENCH / "results.png"

SERVER_CPU = os.environ.get("BENCH_SERVER_CPU", "0")
CLIENT_CPU = os.environ.get("BENCH_CLIENT_CPU", "1")
PINNED = (os.cpu_count() or 1) >= 2 and os.environ.get("BENCH_PIN", "1") != "0"


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name, "")
    return float(value) if value.strip() else default


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


def pin(cpu: str, argv: list[str]) -> list[str]:
    """``taskset -c CPU argv`` (taskset execs, so the pid stays the program's)."""
    return ["taskset", "-c", cpu, *argv] if PINNED else argv


def show(argv: list[str]) -> str:
    """A command line as it could be pasted into a shell (repository paths made relative)."""
    text = shlex.join(argv)
    return text.replace(str(ROOT) + "/", "")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def serve_argv(cli: str | Path, port: int, *agents: str, store: str = "memory://") -> list[str]:
    """``a2a-hub serve`` as the bench runs it: ``agents`` (``--agent`` specs, the echo agent
    by default) on ``store``, on 127.0.0.1:``port``, one worker, warnings only."""
    argv = [str(cli), "serve"]
    for agent in agents or ("echo",):
        argv += ["--agent", agent]
    argv += ["--store", store, "--host", "127.0.0.1", "--port", str(port)]
    return [*argv, "--log-level", "warning", "--workers", "1"]


def raise_fd_limit() -> int:
    """Raise the soft open-files limit to the hard one (children inherit it)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = 1_048_576 if hard == resource.RLIM_INFINITY else hard
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads) so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def busy_cpu_seconds() -> float:
    """CPU time all processes of the machine have used so far (every core, from /proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def proc_rss_kib(pid: int) -> int:
    """Resident set size of a process in KiB (``VmRSS``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def http(
    method: str,
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> tuple[int, bytes]:
    """A small blocking HTTP call for setup steps (not for measuring)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@dataclass
class Server:
    """One server process, pinned to the server core, bound to 127.0.0.1."""

    key: str
    argv: list[str]  # without the pinning prefix
    port: int
    ready_path: str
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    _log: IO[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def command(self) -> list[str]:
        return pin(SERVER_CPU, self.argv)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 60.0) -> str | None:
        """Start and wait until it answers; ``None``, or why it did not come up."""
        WORK.mkdir(parents=True, exist_ok=True)
        self.log_path = WORK / f"{self.key.replace('/', '-')}.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            self.command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
            cwd=ROOT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return f"exited with code {self.proc.returncode}: {self.last_log_line()}"
            try:
                status, _ = http("GET", self.base + self.ready_path, timeout=2)
                if status == 200:
                    return None
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        return f"did not answer on {self.ready_path} within {timeout:.0f} s"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def last_log_line(self) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        lines = [
            ln.strip()
            for ln in self.log_path.read_text(errors="replace").splitlines()
            if ln.strip()
        ]
        error_lines = [ln for ln in lines if "error" in ln.lower()]
        return (error_lines or lines or [""])[-1][:300]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


def machine_info() -> dict[str, Any]:
    """Cores, CPU model, Python and package versions, wrk version."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break

    def versions(python: Path, names: list[str]) -> dict[str, str]:
        code = (
            "import importlib.metadata as m, json, platform, sys\n"
            "out = {'python': platform.python_version()}\n"
            f"for n in {names!r}:\n"
            "    try: out[n] = m.version(n)\n"
            "    except m.PackageNotFoundError: out[n] = None\n"
            "print(json.dumps(out))"
        )
        try:
            res = subprocess.run(
                [str(python), "-c", code], capture_output=True, text=True, timeout=60
            )
            parsed: dict[str, str] = json.loads(res.stdout)
            return parsed
        except (OSError, ValueError, subprocess.SubprocessError):
            return {}

    def js_versions() -> dict[str, str | None]:
        """Node.js and the npm packages bench/js/server.js runs on (from node_modules)."""
        out: dict[str, str | None] = {"node": None}
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            res = subprocess.run(["node", "--version"], capture_output=True, text=True)
            out["node"] = res.stdout.strip().removeprefix("v") or None
        for name in ("@a2a-js/sdk", "express", "@grpc/grpc-js"):
            try:
                manifest = BENCH / "js" / "node_modules" / name / "package.json"
                out[name] = json.loads(manifest.read_text())["version"]
            except (OSError, ValueError, KeyError):
                out[name] = None
        return out

    stack = ["uvicorn", "starlette", "uvloop", "httptools"]
    wrk = ""
    with contextlib.suppress(OSError):
        res = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
        wrk = (res.stdout + res.stderr).strip().splitlines()[0]
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "hub_env": versions(HUB_PYTHON, ["a2a-hub", "msgspec", *stack]),
        "sdk_env": versions(SDK_PYTHON, ["a2a-sdk", "protobuf", "sse-starlette", *stack]),
        "js_env": js_versions(),
        "wrk": wrk,
        "pinned": PINNED,
        "server_cpu": SERVER_CPU if PINNED else None,
        "client_cpu": CLIENT_CPU if PINNED else None,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def load_results() -> dict[str, Any]:
    if RESULTS_JSON.exists():
        try:
            data: dict[str, Any] = json.loads(RESULTS_JSON.read_text())
            return data
        except ValueError:
            pass
    return {}


def save_results(data: dict[str, Any]) -> None:
    RESULTS_JSON.write_text(json.dumps(data, indent=2) + "\n")


def draw_chart() -> str | None:
    """Draw bench/results.png from bench/results.json (matplotlib lives in bench/.venv-sdk)."""
    python = SDK_PYTHON if SDK_PYTHON.exists() else Path(sys.executable)
    res = subprocess.run(
        [str(python), str(BENCH / "plot.py"), str(RESULTS_JSON), str(RESULTS_PNG)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        return (res.stderr or res.stdout).strip().splitlines()[-1:][0] if res.stderr else "failed"
    return None


#: How many connections the scale benches open at once.
OPEN_PARALLEL = env_int("BENCH_SCALE_OPEN_PARALLEL", 200)

_Opened = TypeVar("_Opened")


async def open_many(
    count: int, open_one: Callable[[int], Awaitable[_Opened]], what: str
) -> tuple[list[_Opened], int]:
    """Open ``count`` connections with ``open_one(i)``, ``OPEN_PARALLEL`` at a time;
    (the open ones, how many failed), the first failure printed."""
    gate = asyncio.Semaphore(OPEN_PARALLEL)
    opened: list[_Opened] = []
    errors: list[str] = []

    async def one(i: int) -> None:
        async with gate:
            try:
                opened.append(await open_one(i))
            except Exception as exc:
                errors.append(repr(exc))

    await asyncio.gather(*(one(i) for i in range(count)))
    if errors:
        print(f"{len(errors)} {what} failed to open; first: {errors[0]}", file=sys.stderr)
    return opened, len(errors)


async def idle_memory(
    pid: int, open_n: Callable[[int], Awaitable[tuple[list[Any], int]]], count: int
) -> dict[str, Any]:
    """What ``count`` idle connections cost server ``pid``: opened with ``open_n(n)`` (the
    open ones, failures; each with ``close()`` and ``closed``) after a warm-up of 200 that
    loads their code paths; resident memory before and 3 s after, then the server's CPU
    over 5 s of idling and how many are still open."""
    warm, _ = await open_n(min(200, count))
    for conn in warm:
        conn.close()
    await asyncio.sleep(2)
    rss_before = proc_rss_kib(pid)
    t0 = time.monotonic()
    conns, failures = await open_n(count)
    open_s = time.monotonic() - t0
    await asyncio.sleep(3)
    rss_after = proc_rss_kib(pid)
    cpu0, w0 = proc_cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(5)
    idle_cpu = (proc_cpu_seconds(pid) - cpu0) / (time.monotonic() - w0)
    still_open = sum(1 for conn in conns if not conn.closed)
    for conn in conns:
        conn.close()
    opened = len(conns)
    return {
        "opened": opened,
        "failed": failures,
        "still_open_after_8s": still_open,
        "rss_before_kib": rss_before,
        "rss_after_kib": rss_after,
        "kib_each": (rss_after - rss_before) / opened if opened else float("nan"),
        "open_seconds": open_s,
        "idle_server_cpu": idle_cpu,
    }
