"""A blocking call in an agent is named in the server's log (issue 30, item 4): a real
``serve`` process hosts an agent whose ``execute`` calls ``time.sleep``; the log names the
agent, the call site and what to do instead, and says when the loop runs again."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.cli import MODULE, env, free_port

#: Processes start slowly on a busy machine: never a failure for that.
pytestmark = pytest.mark.timeout(900)

SLEEPY = """
import time

from a2a_hub import AgentExecutor, RequestContext, TaskUpdater


class Sleepy(AgentExecutor):
    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        time.sleep(2)  # a synchronous SDK call
        await updater.reply("slept")
"""


def test_a_blocking_agent_is_named_with_its_call_site(tmp_path: Path) -> None:
    (tmp_path / "sleepy.py").write_text(SLEEPY)
    port = free_port()
    proc = subprocess.Popen(
        [*MODULE, "serve", "--agent", "nap=sleepy:Sleepy", "--app-dir", str(tmp_path),
         "--port", str(port), "--store", "memory://"],
        cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"the server exited: {proc.communicate()[0]}"
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        body = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
        r = httpx.post(f"{url}/a2a/nap/message:send", json=body, timeout=60)
        assert r.status_code == 200, r.text
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    # (a loaded machine may delay the loop elsewhere too: only the agent's lines count)
    warnings = [line for line in out.splitlines() if "event loop is blocked" in line]
    warnings = [line for line in warnings if "'nap'" in line]
    assert len(warnings) == 1, out
    line = warnings[0]
    assert "agent 'nap' (sleepy.Sleepy)" in line, line
    assert f"{tmp_path}/sleepy.py:9 in execute: time.sleep(2)" in line, line
    assert "asyncio.to_thread" in line
    assert any("ran again after" in line for line in out.splitlines()), out
