"""A process started by a test dies with the test process, however that one ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from tests.support.processes import ROOT


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_child_of_a_killed_test_process_is_killed_too() -> None:
    # a stand-in for a test process: installs the guard, starts a long child, says its
    # pid, and is then killed with SIGKILL (no teardown runs)
    script = textwrap.dedent(
        """
        import subprocess, sys
        from tests.support import orphans
        orphans.install()
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(child.pid, flush=True)
        sys.stdin.read()
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert _alive(child)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 30  # a hang guard: the kernel signals at once
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the child outlived the killed test process"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
        if parent.poll() is None:
            os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        for pipe in (parent.stdin, parent.stdout):
            if pipe is not None:
                pipe.close()
