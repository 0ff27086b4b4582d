"""``a2a-hub tasks push`` and ``push dead`` as a person runs them: real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import serve

CLI = [sys.executable, "-m", "a2a_hub"]
HOOK = "https://93.184.216.34/hook"  # a public address: accepted without DNS


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    where = tmp_path_factory.mktemp("push-cli")
    with serve("--agent", "echo", "--store", f"sqlite:///{where}/hub.db", cwd=where) as url:
        yield url, where


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("transport", ["jsonrpc-1.0", "rest-1.0", "jsonrpc-0.3"])
def test_push_set_get_list_delete(hub: tuple[str, Path], transport: str) -> None:
    url = f"{hub[0]}/a2a/echo"
    sent = run("send", "--json", url, "hello")
    assert sent.returncode == 0, sent.stderr
    task_id = json.loads(sent.stdout)["id"]
    t = ("--transport", transport)
    out = run("tasks", "push", "set", *t, url, task_id, HOOK, "--id", "c1", "--token", "sekret")
    assert out.returncode == 0 and "c1" in out.stdout and "sekret" not in out.stdout, out
    out = run("tasks", "push", "list", *t, "--json", url, task_id)
    listed = json.loads(out.stdout)
    assert [c["id"] for c in listed] == ["c1"] and listed[0]["token"] == "********"
    out = run("tasks", "push", "get", *t, url, task_id, "c1")
    assert out.returncode == 0 and HOOK in out.stdout
    out = run("tasks", "push", "delete", *t, url, task_id, "c1")
    assert out.returncode == 0 and "deleted" in out.stdout
    out = run("tasks", "push", "get", *t, url, task_id, "c1")
    assert out.returncode == 1 and "not found" in out.stderr + out.stdout


def test_unsafe_webhook_is_refused_with_the_reason(hub: tuple[str, Path]) -> None:
    url = f"{hub[0]}/a2a/echo"
    task_id = json.loads(run("send", "--json", url, "x").stdout)["id"]
    out = run("tasks", "push", "set", url, task_id, "https://169.254.169.254/latest")
    assert out.returncode == 1 and "link-local" in out.stdout + out.stderr


def test_dead_list_and_requeue_on_the_store(hub: tuple[str, Path]) -> None:
    store = f"sqlite:///{hub[1]}/hub.db"
    out = run("push", "dead", "list", "--store", store)
    assert out.returncode == 0 and "no dead deliveries" in out.stdout
    out = run("push", "dead", "requeue", "--store", store)
    assert out.returncode == 0 and "requeued 0" in out.stdout
