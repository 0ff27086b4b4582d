"""Real processes for the tests: hubs (``a2a-hub serve``), the test MCP server, and checks
that what a test started is gone."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

SUPPORT = Path(__file__).resolve().parent
TESTS = SUPPORT.parent
ROOT = TESTS.parent
CLI = [sys.executable, "-m", "a2a_hub.cli"]
MCP_TOOLS_SERVER = SUPPORT / "mcp_tools_server.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child process: this tree's sources first (not whichever a2a_hub
    the interpreter has installed), and the repository root, so that ``--agent`` values can
    name ``tests.support.agents:Name``."""
    path = [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p), **extra}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL it if it lingers."""
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


#: The process id of each running :func:`hub_process`, by its base URL.
PIDS: dict[str, int] = {}


@contextmanager
def hub_process(
    *agents: str,
    cwd: Path,
    store: str = "memory://",
    options: tuple[str, ...] = (),
    start_timeout: float = 120,
) -> Iterator[str]:
    """``a2a-hub serve`` with ``agents`` (``--agent`` values) on a free port, over ``store``,
    with more ``serve`` options; its base URL (answering within ``start_timeout`` s: agents
    that import large frameworks take longer on a loaded machine)."""
    port = free_port()
    args = [sys.executable, "-m", "a2a_hub", "serve", "--port", str(port)]
    args += ["--store", store, "--log-level", "warning", *options]
    for agent in agents:
        args += ["--agent", agent]
    log = open(cwd / f"hub-{port}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        args, cwd=cwd, env=child_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    PIDS[url] = proc.pid
    try:
        wait_http(f"{url}/healthz", proc, cwd / f"hub-{port}.log", start_timeout)
        yield url
    finally:
        PIDS.pop(url, None)
        _stop(proc)
        log.close()


@contextmanager
def mcp_http_server(cwd: Path) -> Iterator[str]:
    """The test MCP server over streamable HTTP on a free port; its ``/mcp`` URL."""
    port = free_port()
    log = open(cwd / f"mcp-{port}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, str(MCP_TOOLS_SERVER), "http", str(port)],
        cwd=cwd,
        env=child_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_port(port, proc, cwd / f"mcp-{port}.log")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        _stop(proc)
        log.close()


def wait_http(
    url: str, proc: subprocess.Popen[Any], log: Path | None = None, timeout: float = 120
) -> None:
    """Wait until ``url`` answers 200 from ``proc`` (the port's listening socket is its
    own: a free port taken meanwhile by another test's server answers too, and ``proc``
    then fails to bind it); fail at once, with the log, if ``proc`` exits."""
    port = urlsplit(url).port
    # a hang guard, generous: a process importing an agent framework on a loaded machine
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            said = log.read_text(errors="replace") if log is not None else "(no log)"
            raise AssertionError(f"process exited early:\n{said}")
        try:
            if httpx.get(url, timeout=1).status_code == 200 and (
                port is None or listens(proc.pid, port)
            ):
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer in {timeout:g} s")
        time.sleep(0.1)


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on TCP ``port`` (Linux ``/proc``)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with suppress(OSError), open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                    inodes.add(f"socket:[{fields[9]}]")
    with suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return True
    return False


def wait_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"process exited early:\n{log.read_text(errors='replace')}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"port {port} did not open in 30 s")
        time.sleep(0.1)


@contextmanager
def serve(*args: str, cwd: Path) -> Iterator[str]:
    """``python -m a2a_hub.cli serve ARGS`` on a free port (output piped); its base URL."""
    port = free_port()
    proc = subprocess.Popen(
        [*CLI, "serve", "--port", str(port), *args],
        cwd=cwd,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                out = proc.stdout.read().decode() if proc.stdout else ""
                raise AssertionError(f"server exited early:\n{out}")
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("server did not start in 30 s")
            time.sleep(0.1)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def pids(tmp: Path) -> dict[str, int]:
    """The processes a scenario run under ``tmp`` recorded (role -> pid)."""
    return json.loads((tmp / "run" / "processes.json").read_text())  # type: ignore[no-any-return]


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def assert_all_gone(found: dict[str, int]) -> None:
    """Every recorded process has exited."""
    assert found, "the runner recorded its processes"
    for role, pid in found.items():
        assert not alive(pid), f"{role} (pid {pid}) is still running"
