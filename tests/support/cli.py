"""Helpers for tests that run ``a2a-hub serve`` as a real process (start-up, README)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from tests.support.stores import missing_service

ROOT = Path(__file__).resolve().parents[2]
# -P: the current directory is NOT put on sys.path by Python, as for the installed
# a2a-hub script (whose sys.path[0] is .venv/bin): only --app-dir can make it importable.
MODULE = [sys.executable, "-P", "-m", "a2a_hub"]

MYMOD = """
from a2a_hub import AgentExecutor, RequestContext, TaskUpdater


class MyExecutor(AgentExecutor):
    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.reply(f"mine: {ctx.text}")
"""


def env(*, tests: bool = False) -> dict[str, str]:
    """This tree's sources first (and the sample agents with ``tests``)."""
    paths = [str(ROOT / "src")] + ([str(ROOT)] if tests else [])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "COLUMNS": "200"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 0), 2):
            return True
    except OSError:
        return False


def need(url: str, what: str) -> None:
    if not reachable(url):
        missing_service(f"{what} at {url} is not reachable")


@contextmanager
def serving(
    cli: list[str], *args: str, cwd: Path, tests: bool = False
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``serve`` on a free port; yields its URL and process; stops it (SIGTERM, then KILL)."""
    port = free_port()
    proc = subprocess.Popen(
        [*cli, "serve", "--port", str(port), *args],
        cwd=cwd,
        env=env(tests=tests),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited early:\n{proc.stdout.read()}")  # type: ignore[union-attr]
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server did not start in 60 s"
            time.sleep(0.1)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def say(url: str, text: str) -> dict[str, object]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": text}],
            }
        },
    }
    answer = httpx.post(url, json=body, timeout=30).json()
    assert "result" in answer, answer
    result: dict[str, object] = answer["result"]
    return result


# --- item 1: the current directory (or --app-dir) is importable ------------------------
