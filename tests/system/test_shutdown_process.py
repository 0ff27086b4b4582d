"""Graceful shutdown of real ``a2a-hub serve`` processes sharing a Redis store.

SIGTERM ends open SSE streams cleanly (the client resumes on another instance with
Last-Event-ID and misses nothing), lets running tasks finish within
``--graceful-timeout``, and fails those still running at the deadline with a message
saying the server shut down; no traceback is printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import child_env, free_port
from tests.support.stores import purge_redis, redis_test_url

CLI = [sys.executable, "-m", "a2a_hub.cli"]

pytestmark = pytest.mark.timeout(120)


class Instance:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, wait: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


@contextmanager
def serve(store: str, *args: str, cwd: Path) -> Iterator[Instance]:
    port = free_port()
    env = child_env()
    log = cwd / f"serve-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*CLI, "serve", "--port", str(port), "--store", store, "--orphan-timeout", "2", *args],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its group: with --workers, uvicorn's workers too
        )
    url = f"http://127.0.0.1:{port}"
    instance = Instance(proc, url, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited early:\n{instance.output()}")
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server did not start in 60 s"
            time.sleep(0.1)
        yield instance
    finally:
        # the whole group: a server that failed to start (or was killed) leaves its
        # uvicorn workers behind otherwise (seen after "server did not start in 60 s")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def events(response: httpx.Response) -> Iterator[tuple[int | None, Any]]:
    """(id, data) of each SSE event; an ``event: error`` frame fails the test."""
    event_id: int | None = None
    kind = None
    data: list[str] = []
    for line in response.iter_lines():
        if line == "":
            if data:
                assert kind != "error", data
                yield event_id, json.loads("\n".join(data))
            event_id, kind, data = None, None, []
        elif line.startswith("id:"):
            event_id = int(line[3:].strip())
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def message() -> dict[str, Any]:
    return {
        "message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "go"}]}
    }


@pytest.fixture
def store() -> Iterator[str]:
    import asyncio

    url = redis_test_url()
    yield url
    asyncio.run(purge_redis(url))


def test_sigterm_ends_streams_cleanly_and_the_client_resumes_elsewhere(
    store: str, tmp_path: Path
) -> None:
    agent = "tick=tests.support.agents:Ticker?ticks=40&interval=0.1"
    with (
        serve(store, "--agent", agent, cwd=tmp_path) as a,
        serve(store, "--agent", agent, cwd=tmp_path) as b,
    ):
        seen: dict[int, Any] = {}
        task_id = None
        with httpx.stream(
            "POST", f"{a.url}/a2a/tick/message:stream", json=message(), timeout=30
        ) as r:
            assert r.status_code == 200
            for event_id, data in events(r):
                if event_id is not None:
                    seen[event_id] = data
                task_id = task_id or (data.get("task") or {}).get("id")
                if len(seen) == 4:
                    a.proc.send_signal(signal.SIGTERM)
        # the stream ended (cleanly: iter_lines raised nothing) long before the task did
        assert task_id is not None
        last = max(seen)
        assert not any("TASK_STATE_COMPLETED" in json.dumps(d) for d in seen.values())
        with httpx.stream(
            "GET",
            f"{b.url}/a2a/tick/tasks/{task_id}:subscribe",
            headers={"Last-Event-ID": str(last)},
            timeout=30,
        ) as r:
            assert r.status_code == 200
            for event_id, data in events(r):
                assert event_id is not None and event_id not in seen
                seen[event_id] = data
        ids = sorted(seen)
        assert ids == list(range(1, len(ids) + 1))  # nothing lost, nothing twice
        final = seen[ids[-1]]["statusUpdate"]["status"]["state"]
        assert final == "TASK_STATE_COMPLETED"  # finished within the graceful timeout on a
        assert a.stop() in (0, -signal.SIGTERM)
        assert "Traceback" not in a.output()


def test_a_task_still_running_at_the_deadline_fails_with_the_shutdown_message(
    store: str, tmp_path: Path
) -> None:
    agent = "tick=tests.support.agents:Ticker?ticks=600&interval=0.1"
    with (
        serve(store, "--agent", agent, "--graceful-timeout", "1", cwd=tmp_path) as a,
        serve(store, "--agent", agent, cwd=tmp_path) as b,
    ):
        body = {**message(), "configuration": {"returnImmediately": True}}
        r = httpx.post(f"{a.url}/a2a/tick/message:send", json=body, timeout=10)
        assert r.status_code == 200, r.text
        task_id = r.json()["task"]["id"]
        a.proc.send_signal(signal.SIGINT)  # Ctrl+C
        a.proc.wait(60)
        task = httpx.get(f"{b.url}/a2a/tick/tasks/{task_id}", timeout=10).json()
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        text = json.dumps(task["status"])
        assert "shut down" in text
        assert "Traceback" not in a.output()


def test_metrics_sum_every_worker(store: str, tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    with serve(store, "--agent", "echo", "--workers", "2", cwd=tmp_path) as hub:
        with httpx.Client(timeout=10) as client:  # new connections: both workers get some
            for _ in range(20):
                r = httpx.post(f"{hub.url}/a2a/echo/message:send", json=message(), timeout=10)
                assert r.status_code == 200
            text = client.get(f"{hub.url}/metrics").text
        sends = tasks = 0.0
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if (
                    s.name == "a2a_http_request_duration_seconds_count"
                    and s.labels.get("route") == "/a2a/{agent_id}/message:send"
                ):
                    sends += s.value
                if s.name == "a2a_tasks_total" and s.labels.get("state") == "completed":
                    tasks += s.value
        assert sends == 20
        assert tasks == 20
        assert hub.stop() in (0, -signal.SIGTERM)
