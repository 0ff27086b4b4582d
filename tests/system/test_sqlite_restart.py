"""A task running when the only instance on a SQLite file dies is failed at the next start
(issue 30 item 10): its lease lived in the dead process, so no reaper would ever see it
lapse; the restarted hub, holding the file's serving lock, fails it with the reason, and a
follower of it gets the end instead of waiting forever."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.processes import child_env, free_port, wait_http

SLOW = "slow=tests.support.agents:SlowExecutor"
V10 = {"A2A-Version": "1.0"}


def start(tmp_path: Path, port: int, log_name: str) -> tuple[subprocess.Popen[bytes], Any]:
    args = [sys.executable, "-m", "a2a_hub", "serve", "--port", str(port), "--log-level",
            "warning", "--store", f"sqlite:///{tmp_path}/hub.db", "--agent", SLOW]  # fmt: skip
    log = open(tmp_path / log_name, "wb")  # noqa: SIM115 - closed by the caller
    proc = subprocess.Popen(
        args, cwd=tmp_path, env=child_env(), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    wait_http(f"http://127.0.0.1:{port}/healthz", proc, tmp_path / log_name)
    return proc, log


def stop(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def rpc(url: str, method: str, params: dict[str, Any], timeout: float = 30) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    r = httpx.post(url, json=body, headers=V10, timeout=timeout)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_task_left_working_by_a_killed_hub_fails_at_restart(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/a2a/slow"
    proc, log = start(tmp_path, port, "first.log")
    try:
        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "work"}]}
        sent = rpc(url, "SendMessage",
                   {"message": message, "configuration": {"returnImmediately": True}})  # fmt: skip
        task_id = sent["result"]["task"]["id"]
        deadline = time.monotonic() + 30  # a hang guard: the agent says "working" at once
        while rpc(url, "GetTask", {"id": task_id})["result"]["status"]["state"] != (
            "TASK_STATE_WORKING"
        ):
            assert time.monotonic() < deadline, "the task never started working"
            time.sleep(0.05)
    finally:
        stop(proc, signal.SIGKILL)
        log.close()
    proc, log = start(tmp_path, port, "second.log")
    try:
        task = rpc(url, "GetTask", {"id": task_id})["result"]
        assert task["status"]["state"] == "TASK_STATE_FAILED", task["status"]
        reason = task["status"]["message"]["parts"][0]["text"]
        assert "stopped before it ended" in reason
        # a follower gets the end at once (the task is terminal: the snapshot only)
        with httpx.stream("POST", url, headers=V10, timeout=30, json={
            "jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id},
        }) as stream:  # fmt: skip
            body = b"".join(stream.iter_bytes())
        assert b"TASK_STATE_FAILED" in body, body  # refused at once: the task has ended
    finally:
        stop(proc, signal.SIGTERM)
        log.close()


def test_a_second_hub_on_the_same_file_does_not_fail_the_firsts_tasks(tmp_path: Path) -> None:
    """The serving lock: a hub started beside a live one on the same file leaves its
    running tasks alone."""
    port, other = free_port(), free_port()
    url = f"http://127.0.0.1:{port}/a2a/slow"
    proc, log = start(tmp_path, port, "first.log")
    try:
        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "work"}]}
        sent = rpc(url, "SendMessage",
                   {"message": message, "configuration": {"returnImmediately": True}})  # fmt: skip
        task_id = sent["result"]["task"]["id"]
        deadline = time.monotonic() + 30
        while rpc(url, "GetTask", {"id": task_id})["result"]["status"]["state"] != (
            "TASK_STATE_WORKING"
        ):
            assert time.monotonic() < deadline, "the task never started working"
            time.sleep(0.05)
        second, second_log = start(tmp_path, other, "second.log")
        stop(second, signal.SIGTERM)
        second_log.close()
        state = rpc(url, "GetTask", {"id": task_id})["result"]["status"]["state"]
        assert state == "TASK_STATE_WORKING"
    finally:
        stop(proc, signal.SIGKILL)  # its task would hold a graceful stop for its drain
        log.close()
