"""The client commands of the CLI as a person uses them: real processes, a real terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.support.processes import serve

CLI = [sys.executable, "-m", "a2a_hub"]


@pytest.fixture(scope="module")
def hub_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(
        "--agent",
        "echo",
        "--agent",
        "pizza=tests.support.agents:PizzaExecutor",
        "--agent",
        "crash=tests.support.agents:CrashExecutor",
        "--agent",
        "reject=tests.support.agents:RejectExecutor",
        "--agent",
        "slow=tests.support.agents:SlowExecutor",
        "--store",
        "memory://",
        cwd=tmp_path_factory.mktemp("cli"),
    ) as url:
        yield url


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)


def test_card_send_and_tasks(hub_url: str) -> None:
    out = run("card", f"{hub_url}/a2a/echo")
    assert out.returncode == 0 and "Echo" in out.stdout and "HTTP+JSON" in out.stdout
    out = run("send", f"{hub_url}/a2a/echo", "hello there")
    assert out.returncode == 0 and "completed" in out.stdout and "echo: hello there" in out.stdout
    out = run("send", "--stream", f"{hub_url}/a2a/echo", "streamed")
    assert out.returncode == 0
    assert (
        out.stdout.index("working")
        < out.stdout.index("echo: streamed")
        < out.stdout.index("completed")
    )
    out = run("send", "--json", "--transport", "rest-1.0", f"{hub_url}/a2a/pizza", "pizza")
    assert out.returncode == 0 and '"TASK_STATE_INPUT_REQUIRED"' in out.stdout
    out = run("tasks", "list", f"{hub_url}/a2a/pizza", "--status", "input-required")
    assert out.returncode == 0 and "1 of 1 tasks" in out.stdout


def test_errors_are_one_clear_line(hub_url: str) -> None:
    out = run("tasks", "get", f"{hub_url}/a2a/echo", "no-such-task")
    assert out.returncode == 1
    assert out.stderr.strip() == "error: Task no-such-task not found (A2A error -32001)"
    out = run("send", "http://127.0.0.1:9/a2a/echo", "x")
    assert out.returncode == 1 and out.stderr.startswith("error: cannot reach")
    assert "Traceback" not in out.stderr
    out = run("send", "--transport", "grpc", f"{hub_url}/a2a/echo", "x")
    assert out.returncode == 1 and "unknown transport 'grpc'" in out.stderr


def test_chat_two_turns_in_a_terminal(hub_url: str) -> None:
    child = pexpect.spawn(
        CLI[0],
        [*CLI[1:], "chat", f"{hub_url}/a2a/pizza"],
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    try:
        child.expect("Talking to .{0,12}Pizza")
        child.expect("you> ")
        child.sendline("I would like a pizza")
        child.expect("input-required")
        child.expect("agent asks> What kind of pizza\\?")
        child.expect("you> ")
        child.sendline("quattro formaggi")
        child.expect("order: quattro formaggi")
        child.expect("completed")
        child.expect("agent> Ordered quattro formaggi after 3 messages")
        child.expect("you> ")
        child.sendline("/new")
        child.expect("new conversation")
        child.sendline("pizza again")
        child.expect("agent asks> What kind of pizza\\?")
        child.expect("you> ")
        child.sendline("/cancel")
        child.expect("canceled")
        child.expect("you> ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_help_is_for_a_newcomer() -> None:
    out = run("--help")
    assert out.returncode == 0
    for word in ("serve", "send", "chat", "card", "tasks"):
        assert word in out.stdout
    assert Path(__file__).exists()


@pytest.mark.parametrize("stream", [False, True], ids=["send", "send --stream"])
def test_send_exit_codes_follow_the_task(hub_url: str, stream: bool) -> None:
    flags = ["--stream"] if stream else []
    out = run("send", *flags, f"{hub_url}/a2a/echo", "fine")
    assert out.returncode == 0 and "completed" in out.stdout
    out = run("send", *flags, f"{hub_url}/a2a/pizza", "pizza")
    assert out.returncode == 0 and "input-required" in out.stdout  # the agent waits: fine
    out = run("send", *flags, f"{hub_url}/a2a/crash", "boom")
    assert out.returncode == 3 and "failed" in out.stdout and "the model exploded" in out.stdout
    out = run("send", *flags, f"{hub_url}/a2a/reject", "please")
    assert out.returncode == 4 and "rejected" in out.stdout


def test_send_exits_5_when_its_task_is_canceled(hub_url: str) -> None:
    sender = subprocess.Popen(
        [*CLI, "send", "--stream", "--json", f"{hub_url}/a2a/slow", "take your time"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sender.stdout is not None
        task_id = None
        while task_id is None:
            line = sender.stdout.readline()
            assert line, "send ended before its task started"
            if '"id": "' in line and task_id is None and "taskId" not in line:
                task_id = line.split('"id": "')[1].split('"')[0]
        # the first "id" of the stream's JSON is the task's (the snapshot comes first)
        canceled = run("tasks", "cancel", f"{hub_url}/a2a/slow", task_id)
        assert canceled.returncode == 0 and "canceled" in canceled.stdout
        sender.communicate(timeout=60)
    finally:
        if sender.poll() is None:
            sender.kill()
            sender.wait()
    assert sender.returncode == 5


def test_chat_leaves_at_once_on_ctrl_c_at_the_prompt(hub_url: str) -> None:
    child = pexpect.spawn(
        CLI[0],
        [*CLI[1:], "chat", f"{hub_url}/a2a/pizza"],
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    try:
        child.expect("you> ")
        # A person presses Ctrl+C well after the prompt shows.  CPython's readline prints
        # the prompt before it starts waiting for a key: a SIGINT inside that gap is only
        # seen at the next key.  So wait as a person would, then press it.
        time.sleep(0.5)
        child.sendintr()  # no Enter: the prompt itself must give way
        child.expect(pexpect.EOF)
        before = child.before or ""
    finally:
        child.close(force=True)
    assert "Traceback" not in before
    assert child.exitstatus == 0


def test_tasks_list_keeps_whole_ids_at_80_columns(hub_url: str) -> None:
    sent = run("send", "--json", f"{hub_url}/a2a/pizza", "a long order " * 10)
    task = json.loads(sent.stdout)
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run(
        [*CLI, "tasks", "list", f"{hub_url}/a2a/pizza"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 0
    assert max(len(line) for line in out.stdout.splitlines()) <= 80
    lines = out.stdout.splitlines()
    assert any(task["id"] in line for line in lines), out.stdout
    assert any(task["contextId"] in line for line in lines), out.stdout
    assert "…" not in out.stdout


def test_chat_over_the_websocket(hub_url: str) -> None:
    child = pexpect.spawn(
        CLI[0],
        [*CLI[1:], "chat", "--ws", f"{hub_url}/a2a/pizza"],
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    try:
        child.expect("Talking over the WebSocket")
        child.expect("you> ")
        child.sendline("I would like a pizza")
        child.expect("input-required: What kind of pizza\\?")
        child.expect("you> ")
        child.sendline("margherita")
        child.expect("order: margherita")
        child.expect("completed")
        child.expect("you> ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
