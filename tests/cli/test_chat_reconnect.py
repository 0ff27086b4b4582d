"""Chat clients on a dying server (issue 30, item 5), against real processes: ``a2a-hub
chat`` (JSON-RPC, streaming) and ``chat --ws`` say "reconnecting (n/5)…" as soon as the
connection drops, resume where they were when the server comes back (the last event id /
``sync_state``), and end with one line, no traceback, when it does not."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.cli import MODULE, env, free_port
from tests.support.processes import wait_http

#: Processes start slowly on a busy machine: never a failure for that.
pytestmark = pytest.mark.timeout(900)

AGENT = "drip=tests.support.agents:Drip?chunks=25&interval=0.2"


@contextmanager
def server(tmp_path: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [*MODULE, "serve", "--agent", AGENT, "--port", str(port),
         "--store", f"sqlite:///{tmp_path}/hub.db"],
        cwd=tmp_path, env=env(tests=True), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class Chat:
    """``a2a-hub chat`` as a process: lines typed in, its output read as it comes (unbuffered:
    a streamed reply has no newline until it ends)."""

    def __init__(self, url: str, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [*MODULE, "chat", *flags, url], env={**env(), "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.out = ""
        self.ended = threading.Event()
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while data := os.read(fd, 65536):
            with self.changed:
                self.out += data.decode(errors="replace")
                self.changed.notify_all()
        with self.changed:
            self.ended.set()
            self.changed.notify_all()

    def type(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def wait_for(self, text: str, within: float = 90) -> float:
        """Seconds until the output holds ``text`` (fails at ``within`` or its end)."""
        began = time.monotonic()
        with self.changed:
            while text not in self.out:
                left = within - (time.monotonic() - began)
                assert left > 0, f"no {text!r} within {within} s:\n{self.out}"
                assert not self.ended.is_set(), f"the chat ended before {text!r}:\n{self.out}"
                self.changed.wait(left)
        return time.monotonic() - began

    def finish(self) -> tuple[int, str]:
        try:
            code = self.proc.wait(timeout=120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.ended.wait(10)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        return code, self.out


@pytest.mark.parametrize("flags", [(), ("--ws",)], ids=["jsonrpc", "ws"])
def test_the_chat_resumes_when_the_server_comes_back(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/a2a/drip"
    with server(tmp_path, port) as first:
        chat = Chat(url, *flags)
        chat.wait_for("Talking")
        chat.type("go")
        chat.wait_for("000002")
        first.send_signal(signal.SIGTERM)  # the task finishes there; streams end at once
        assert chat.wait_for("reconnecting (1/5)") < 15
        first.wait(120)
    with server(tmp_path, port):  # the same store: the rest is served from the log
        chat.wait_for("completed")
        chat.type("/quit")
        code, out = chat.finish()
    assert code == 0, out
    assert "Traceback" not in out
    text = "".join(out.split())
    for i in range(25):  # every chunk, once, in order
        assert text.count(f"{i:06d}") == 1, out


@pytest.mark.parametrize("flags", [(), ("--ws",)], ids=["jsonrpc", "ws"])
def test_the_chat_ends_with_one_line_when_the_server_does_not_come_back(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/a2a/drip"
    with server(tmp_path, port) as only:
        chat = Chat(url, *flags)
        chat.wait_for("Talking")
        chat.type("go")
        chat.wait_for("000002")
        os.killpg(only.pid, signal.SIGKILL)
        assert chat.wait_for("reconnecting (1/5)") < 15
        code, out = chat.finish()
    assert code == 1, out
    assert "Traceback" not in out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "5 tries" in errors[0], out
    assert "reconnecting (5/5)" in out
