"""Helpers for the tests of the remote kind, the composites and tools: real processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    path = [str(TESTS), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL it if it lingers."""
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextmanager
def hub_process(*agents: str, cwd: Path) -> Iterator[str]:
    """``a2a-hub serve`` with ``agents`` (``--agent`` values) on a free port; its base URL."""
    port = free_port()
    args = [sys.executable, "-m", "a2a_hub", "serve", "--port", str(port)]
    args += ["--store", "memory://", "--log-level", "warning"]
    for agent in agents:
        args += ["--agent", agent]
    log = open(cwd / f"hub-{port}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        args, cwd=cwd, env=_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc, cwd / f"hub-{port}.log")
        yield url
    finally:
        _stop(proc)
        log.close()


@contextmanager
def mcp_http_server(cwd: Path) -> Iterator[str]:
    """The test MCP server over streamable HTTP on a free port; its ``/mcp`` URL."""
    port = free_port()
    log = open(cwd / f"mcp-{port}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, str(TESTS / "mcp_tools_server.py"), "http", str(port)],
        cwd=cwd,
        env=_env(),
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


def wait_http(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"process exited early:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer in 30 s")
        time.sleep(0.1)


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
