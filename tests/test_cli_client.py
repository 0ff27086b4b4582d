"""The client commands of the CLI as a person uses them: real processes, a real terminal."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from test_serve_process import serve

CLI = [sys.executable, "-m", "a2a_hub"]


@pytest.fixture(scope="module")
def hub_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(
        "--agent",
        "echo",
        "--agent",
        "pizza=sample_agents:PizzaExecutor",
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
