"""Several ``a2a-hub serve`` processes sharing real Redis or PostgreSQL behave as one server.

Needs the machine's Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432, database
``test``); without them these tests skip, and under ``CI=true`` they fail.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from tests.support.processes import ROOT, wait_http
from tests.support.servers import PostgresServer, RedisServer, StoreServer
from tests.support.stores import POSTGRES_URL as POSTGRES
from tests.support.stores import PURGE_AT_EXIT, SESSION_PREFIX, missing_service

REDIS = "redis://127.0.0.1:6379/0"
V10 = {"A2A-Version": "1.0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def require(name: str, port: int) -> None:
    if not reachable("127.0.0.1", port):
        missing_service(f"{name} is not running on 127.0.0.1:{port}")


class Instance:
    """One ``a2a-hub serve`` process."""

    def __init__(
        self, cwd: Path, store: str, agents: list[str], *extra: str, orphan_timeout: float = 2
    ) -> None:
        for attempt in range(3):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self.log = cwd / f"hub-{self.port}.log"
            args = [
                sys.executable,
                "-m",
                "a2a_hub",
                "serve",
                "--port",
                str(self.port),
                "--store",
                store,
                "--orphan-timeout",
                f"{orphan_timeout:g}",
                *extra,
            ]
            for agent in agents:
                args += ["--agent", agent]
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            }
            with self.log.open("wb") as out:
                self.proc = subprocess.Popen(
                    args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
                )
            try:
                wait_http(f"{self.url}/healthz", self.proc, self.log, timeout=30)
                return
            except BaseException:
                self.stop()  # not left running (nor its Popen to be collected in another test)
                # the free port was taken by another test's process before this one bound it
                if attempt < 2 and "is already in use" in self.log.read_text(errors="replace"):
                    continue
                raise

    def rpc(
        self, agent: str, method: str, params: dict[str, Any], **headers: str
    ) -> dict[str, Any]:
        r = httpx.post(
            f"{self.url}/a2a/{agent}",
            timeout=20,
            headers={**V10, **headers},
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        )
        assert r.status_code == 200, r.text
        return r.json()  # type: ignore[no-any-return]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait()


def shared_store(kind: str, prefix: str) -> str:
    """The URL of the machine's Redis (under a fresh key prefix) or PostgreSQL; the test
    skips (fails under ``CI=true``) when that server is not running."""
    if kind == "redis":
        require("Redis", 6379)
        url = f"{REDIS}?prefix={SESSION_PREFIX}{prefix}-{uuid.uuid4().hex[:8]}"
        PURGE_AT_EXIT.append(url)  # its keys are deleted when the session ends
        return url
    require("PostgreSQL", 5432)
    return POSTGRES


@contextlib.contextmanager
def instances(
    cwd: Path, store: str, agents: list[str], count: int = 2, *, orphan_timeout: float = 2
) -> Iterator[list[Instance]]:
    """``count`` instances sharing ``store``, all stopped on the way out, whatever failed."""
    started: list[Instance] = []
    try:
        for _ in range(count):
            started.append(Instance(cwd, store, agents, orphan_timeout=orphan_timeout))
        yield started
    finally:
        for inst in started:
            inst.stop()


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **extra}


def send_later(inst: Instance, agent: str, text: str) -> dict[str, Any]:
    out = inst.rpc(
        agent,
        "SendMessage",
        {"message": message(text), "configuration": {"returnImmediately": True}},
    )
    return out["result"]["task"]  # type: ignore[no-any-return]


def wait_state(
    inst: Instance, agent: str, task_id: str, state: str, seconds: float = 30
) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        task = inst.rpc(agent, "GetTask", {"id": task_id})["result"]
        if task["status"]["state"] == state or time.monotonic() > deadline:
            return task  # type: ignore[no-any-return]
        time.sleep(0.2)


def read_sse_ids(inst: Instance, agent: str, task_id: str, last_event_id: int) -> list[int]:
    ids = []
    with httpx.stream(
        "POST",
        f"{inst.url}/a2a/{agent}",
        timeout=30,
        headers={**V10, "Last-Event-ID": str(last_event_id)},
        json={"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}},
    ) as r:
        for line in r.iter_lines():
            if line.startswith("id: "):
                ids.append(int(line[4:]))
    return ids


@pytest.fixture(params=["redis", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> str:
    return shared_store(request.param, "mp")


@pytest.fixture
def pair(store_url: str, tmp_path: Path) -> Iterator[tuple[Instance, Instance, dict[str, str]]]:
    tag = uuid.uuid4().hex[:6]
    names = {"slow": f"slow-{tag}", "chatty": f"chatty-{tag}"}
    agents = [
        f"{names['slow']}=tests.support.agents:SlowExecutor?marker={tmp_path}",
        f"{names['chatty']}=tests.support.agents:ChattyExecutor?chunks=300&pause_every=2",
    ]
    with instances(tmp_path, store_url, agents) as (a, b):
        yield a, b, names


def test_send_on_a_get_list_subscribe_cancel_on_b(
    pair: tuple[Instance, Instance, dict[str, str]], tmp_path: Path
) -> None:
    a, b, names = pair
    chatty, slow = names["chatty"], names["slow"]
    task = send_later(a, chatty, "go")
    got = b.rpc(chatty, "GetTask", {"id": task["id"]})["result"]
    assert got["id"] == task["id"]
    listed = b.rpc(chatty, "ListTasks", {})["result"]
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]
    # subscribe on B with replay from the start while A is still producing
    assert read_sse_ids(b, chatty, task["id"], 0) == list(range(1, 304))
    assert wait_state(b, chatty, task["id"], "TASK_STATE_COMPLETED")["artifacts"]

    running = send_later(a, slow, "work")
    time.sleep(0.3)  # the executor has started on A
    canceled = b.rpc(slow, "CancelTask", {"id": running["id"]})["result"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    marker = tmp_path / f"{running['id']}.canceled"
    assert marker.exists(), "the cancel reached the executor"
    assert int(marker.read_text()) == a.proc.pid, "… the one running on A"


def test_kill_9_of_a_mid_task_and_b_fails_the_task(
    pair: tuple[Instance, Instance, dict[str, str]],
) -> None:
    a, b, names = pair
    task = send_later(a, names["slow"], "work")
    time.sleep(0.3)
    a.kill9()
    failed = wait_state(b, names["slow"], task["id"], "TASK_STATE_FAILED")
    assert failed["status"]["state"] == "TASK_STATE_FAILED"
    reason = failed["status"]["message"]["parts"][0]["text"]
    assert "stopped" in reason and "no heartbeat" in reason
    # a blocking task acknowledged before the crash is still there
    done = b.rpc(names["chatty"], "SendMessage", {"message": message("x")})["result"]["task"]
    assert (
        b.rpc(names["chatty"], "GetTask", {"id": done["id"]})["result"]["status"]["state"]
        == "TASK_STATE_COMPLETED"
    )


def test_workers_need_a_shared_store(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "a2a_hub",
            "serve",
            "--agent",
            "echo",
            "--workers",
            "2",
            "--store",
            "memory://",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "--workers 2 needs a store" in out.stderr


def test_workers_share_redis(tmp_path: Path) -> None:
    store = shared_store("redis", "mp")
    inst = Instance(tmp_path, store, ["echo"], "--workers", "2")
    try:
        tasks = [
            inst.rpc("echo", "SendMessage", {"message": message(f"m{i}")})["result"]["task"]
            for i in range(20)
        ]
        for task in tasks:
            got = inst.rpc("echo", "GetTask", {"id": task["id"]})["result"]
            assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        inst.stop()


@pytest.mark.parametrize("kind", ["redis", "postgresql"])
def test_store_restart_during_traffic_loses_nothing_acknowledged(tmp_path: Path, kind: str) -> None:
    """The store's server stops and starts again: what was acknowledged before is there,
    a send during the outage is the store error naming the server, the process stays up
    and works again by itself."""
    store: StoreServer = RedisServer(tmp_path) if kind == "redis" else PostgresServer(tmp_path)
    try:
        store.start()
        _restart_during_traffic(tmp_path, store)
    finally:
        store.close()


def _restart_during_traffic(tmp_path: Path, store: StoreServer) -> None:
    url, port = store.url, store.port
    a = Instance(tmp_path, url, ["echo"])
    b = Instance(tmp_path, url, ["echo"])
    acked: list[str] = []
    try:
        for i in range(10):
            acked.append(
                a.rpc("echo", "SendMessage", {"message": message(f"before {i}")})["result"]["task"][
                    "id"
                ]
            )
        store.stop()
        failed = a.rpc("echo", "SendMessage", {"message": message("during")})
        assert failed["error"]["code"] == -32603
        assert f"127.0.0.1:{port}" in failed["error"]["message"]
        assert httpx.get(f"{a.url}/healthz").status_code == 200, "the process stays up"
        store.start()
        deadline = time.monotonic() + 20
        while True:  # it recovers by itself
            out = b.rpc("echo", "SendMessage", {"message": message("after")})
            if "result" in out or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        acked.append(out["result"]["task"]["id"])
        for task_id in acked:
            for inst in (a, b):
                got = inst.rpc("echo", "GetTask", {"id": task_id})
                assert got["result"]["status"]["state"] == "TASK_STATE_COMPLETED", got
    finally:
        a.stop()
        b.stop()


@contextlib.contextmanager
def own_database() -> Iterator[str]:
    """A fresh database on the machine's PostgreSQL, dropped afterwards; its URL.  A test
    that terminates every connection to its database thus reaches no other test's (tests
    run in parallel)."""
    import asyncio

    import asyncpg

    name = f"a2a_test_{uuid.uuid4().hex[:12]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(POSTGRES)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield urlunsplit(urlsplit(POSTGRES)._replace(path=f"/{name}"))
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_postgres_connections_terminated_during_traffic(tmp_path: Path) -> None:
    require("PostgreSQL", 5432)
    with own_database() as database:
        _connections_terminated_during_traffic(tmp_path, database)


def _connections_terminated_during_traffic(tmp_path: Path, database: str) -> None:
    agent = f"echo-{uuid.uuid4().hex[:6]}"
    a = Instance(tmp_path, database, [f"{agent}=echo"])
    b = Instance(tmp_path, database, [f"{agent}=echo"])
    acked: list[str] = []
    errors = 0
    try:
        for i in range(30):
            if i == 10:
                import asyncio

                import asyncpg

                async def terminate() -> None:
                    conn = await asyncpg.connect(database)
                    await conn.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    )
                    await conn.close()

                asyncio.run(terminate())
            out = (a if i % 2 else b).rpc(agent, "SendMessage", {"message": message(f"{i}")})
            if "result" in out:
                acked.append(out["result"]["task"]["id"])
            else:
                errors += 1
                assert out["error"]["code"] == -32603 and "unavailable" in out["error"]["message"]
        assert len(acked) >= 20, f"it recovered by itself ({errors} requests failed)"
        for task_id in acked:
            got = a.rpc(agent, "GetTask", {"id": task_id})["result"]
            assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        a.stop()
        b.stop()
