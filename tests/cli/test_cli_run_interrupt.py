"""Ctrl+C of ``a2a-hub run`` (``make demo``), pressed twice by an impatient person: the
agents are stopped and nothing is printed about an event loop that is closed."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests.support.cli import env, free_port


def agent_cmd(port: int, exit_after: float) -> str:
    """An echo agent that takes ``exit_after`` seconds to exit on SIGTERM (as a model does)."""
    serve = shlex.join(
        [sys.executable, "-m", "a2a_hub", "serve", "--agent", "echo", "--port", str(port)]
    )
    serve += " --store memory:// --log-level warning"
    script = f'trap "sleep {exit_after}; exit 0" TERM; {serve} & wait'
    return shlex.join(["bash", "-c", script])


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for the slow-exiting agents")
def test_two_ctrl_c_stop_every_agent_without_an_asyncio_error(tmp_path: Path) -> None:
    ports = [free_port() for _ in range(3)]
    roles = ["judge", "a", "b"]
    lines = []
    for i, (role, port) in enumerate(zip(roles, ports, strict=True)):
        table = "[green_agent]" if i == 0 else f'[[participants]]\nrole = "{role}"'
        lines += [
            table,
            f'endpoint = "http://127.0.0.1:{port}"',
            f"cmd = {json.dumps(agent_cmd(port, 0.4 + 0.3 * i))}",
        ]
    (tmp_path / "scenario.toml").write_text("\n".join([*lines, "[config]", ""]))
    child = pexpect.spawn(
        sys.executable,
        ["-m", "a2a_hub", "run", "scenario.toml", "--serve-only", "--run-dir", "run"],
        cwd=str(tmp_path),
        env=env(),
        encoding="utf-8",
        codec_errors="replace",
        timeout=90,
        dimensions=(40, 120),
    )
    try:
        child.expect("press Ctrl\\+C to stop them")
        pids = json.loads((tmp_path / "run" / "processes.json").read_text())
        child.sendintr()
        time.sleep(0.3)  # the clean-up is under way: the agents take a while to exit
        child.sendintr()
        child.expect(pexpect.EOF)
        output = child.before or ""
    finally:
        child.close(force=True)
    assert "Event loop is closed" not in output, output
    assert "Traceback" not in output and "Exception ignored" not in output, output
    assert "stopped; every agent process was terminated" in output
    assert not [pid for pid in pids.values() if pid_alive(pid)]
