"""The settings of a worker tier: the executor URL, the agents' placement, the commands'
answers to bad input (one or two lines, a non-zero exit, never a traceback)."""

from __future__ import annotations

import socket
import subprocess

import pytest

from a2a_hub.settings import Settings, SettingsError, load_settings, parse_agent_spec
from a2a_hub.workers import ExecutorTarget, parse_executor
from tests.support.cli import MODULE, env
from tests.support.processes import free_port
from tests.support.stores import missing_service, redis_test_url


def test_inprocess_is_the_default_and_runs_here() -> None:
    assert Settings().server.executor == "inprocess"
    assert parse_executor("inprocess") is None


def test_a_temporal_url_names_address_namespace_queue_and_heartbeat() -> None:
    target = parse_executor(
        "temporal://temporal:7233?namespace=ns&task_queue=q&heartbeat_timeout=4"
    )
    assert target == ExecutorTarget("temporal:7233", "ns", "q", 4.0)
    assert parse_executor("temporal://t") == ExecutorTarget("t:7233", "default", "a2a-hub", 10.0)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("kafka://x:1", "say 'inprocess' or 'temporal://"),
        ("temporal://x:1?queue=q", "unknown option queue"),
        ("temporal://x:1?heartbeat_timeout=soon", "heartbeat_timeout is not a number"),
        ("temporal://x:port", "the port is not a number"),
    ],
)
def test_a_bad_executor_url_is_one_clear_error(url: str, says: str) -> None:
    with pytest.raises(SettingsError, match=says.replace("?", r"\?")):
        parse_executor(url)


def test_an_agent_spec_carries_its_placement_not_as_executor_options() -> None:
    spec = parse_agent_spec(
        "gpu=pkg.mod:Model?task_queue=gpu&retry_on_worker_loss=2&input_timeout=60&x=1"
    )
    assert (spec.task_queue, spec.retry_on_worker_loss, spec.input_timeout) == ("gpu", 2, 60.0)
    assert spec.options == {"x": "1"}


def test_the_executor_setting_comes_from_the_environment_and_needs_a_shared_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("A2A_HUB_EXECUTOR", "temporal://t:7233")
    monkeypatch.setenv("A2A_HUB_STORE", "redis://127.0.0.1:6379/0")
    assert load_settings(None, overrides={}).server.executor == "temporal://t:7233"
    monkeypatch.setenv("A2A_HUB_STORE", "memory://")
    with pytest.raises(SettingsError, match="needs a store the API nodes and the workers share"):
        load_settings(None, overrides={})


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MODULE, *args], env=env(), capture_output=True, text=True, timeout=120, check=False
    )


def test_worker_without_a_temporal_executor_says_so() -> None:
    done = _run("worker", "--agent", "echo", "--store", "redis://127.0.0.1:6379/0")
    assert done.returncode == 2
    assert "a2a-hub worker needs --executor temporal://" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2


def test_serve_fails_fast_when_temporal_is_unreachable() -> None:
    if not _listening(6379):
        missing_service("Redis is not running on 127.0.0.1:6379")
    closed = free_port()  # nothing listens there
    done = _run(
        "serve",
        "--agent",
        "echo",
        "--store",
        redis_test_url(),
        "--executor",
        f"temporal://127.0.0.1:{closed}",
        "--port",
        str(free_port()),
    )
    assert done.returncode == 1, done.stderr
    assert f"cannot reach Temporal at 127.0.0.1:{closed}: connection refused" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
