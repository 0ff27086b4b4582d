"""Push notifications across real hub processes: a hub killed with ``kill -9`` while
deliveries are pending sends them after a restart, and two instances sharing Redis or
PostgreSQL send each delivery exactly once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import msgspec
import pytest

from tests.support.push_receiver import Receiver, free_port, until
from tests.support.stores import POSTGRES_URL

ROOT = Path(__file__).resolve().parents[2]
REDIS = os.environ.get("A2A_HUB_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES = POSTGRES_URL
PUSH = ["--push-allow-hosts", "127.0.0.1", "--push-retry-steps", "0.2", "--push-claim-lease", "5"]

pytestmark = pytest.mark.timeout(120)


@asynccontextmanager
async def hub_process(
    store: str, cwd: Path, agent: str = "echo"
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "a2a_hub.cli", "serve", "--port", str(port), "--agent", agent,
        "--store", store, *PUSH,
        cwd=cwd, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:

        async def healthy() -> bool:
            if proc.returncode is not None:
                raise AssertionError("the hub exited early")
            try:
                async with httpx.AsyncClient() as c:
                    return (await c.get(f"{url}/healthz", timeout=1)).status_code == 200
            except httpx.HTTPError:
                return False

        await until(healthy, within=60)
        yield url, proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def send(url: str, hook: str, text: str) -> str:
    params = {
        # a fresh message id: a shared database keeps the claims of earlier runs
        "message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"taskPushNotificationConfig": {"url": hook, "id": "p"}},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    async with httpx.AsyncClient() as c:
        r = await c.post(f"{url}/a2a/echo", json=body, headers={"A2A-Version": "1.0"}, timeout=30)
    task_id: str = r.json()["result"]["task"]["id"]
    return task_id


def completed(receiver: Receiver) -> dict[str, list[int]]:
    """Task id -> the seqs notified, for the tasks whose completion was notified."""
    seqs: dict[str, list[int]] = {}
    done = set()
    for item in receiver.got:
        ev = msgspec.json.decode(item.body)
        update = ev.get("statusUpdate") or ev.get("artifactUpdate") or {}
        task_id = update.get("taskId") or ev.get("task", {}).get("id")
        seqs.setdefault(task_id, []).append(int(item.headers["x-a2a-event-seq"]))
        if ev.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED":
            done.add(task_id)
    return {t: s for t, s in seqs.items() if t in done}


async def test_pending_deliveries_survive_kill_9(tmp_path: Path) -> None:
    receiver = Receiver(status=503)
    await receiver.start()
    store = f"sqlite:///{tmp_path}/hub.db"
    try:
        async with hub_process(store, tmp_path) as (url, proc):
            tasks = [await send(url, receiver.url, f"m{i}") for i in range(3)]

            async def tried() -> bool:
                return receiver.hits >= 2

            await until(tried)
            proc.kill()  # kill -9: no goodbye, claims and retries left in the store
            await proc.wait()
        assert receiver.got == []
        receiver.status = 200
        async with hub_process(store, tmp_path):

            async def all_arrived() -> bool:
                return set(completed(receiver)) >= set(tasks)

            await until(all_arrived, within=60)
        for task_id, seqs in completed(receiver).items():
            assert seqs == sorted(seqs) and seqs[-1] >= 3, (task_id, seqs)
    finally:
        await receiver.stop()


@pytest.fixture(params=["redis", "postgresql"])
async def shared_store(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    if request.param == "postgresql":
        yield POSTGRES
        return
    from tests.support.stores import redis_test_url

    url = redis_test_url()
    yield url
    from tests.support.stores import purge_redis

    await purge_redis(url)


async def test_two_instances_send_each_delivery_once(tmp_path: Path, shared_store: str) -> None:
    receiver = Receiver()
    await receiver.start()
    try:
        async with (
            hub_process(shared_store, tmp_path) as (a, _),
            hub_process(shared_store, tmp_path) as (b, _),
        ):
            tasks = [await send(a if i % 2 else b, receiver.url, f"t{i}") for i in range(10)]

            async def all_arrived() -> bool:
                return set(completed(receiver)) >= set(tasks)

            await until(all_arrived, within=60)
        ids = [r.headers["x-a2a-notification-id"] for r in receiver.got]
        assert len(ids) == len(set(ids)), "a delivery was sent twice"
        for task_id in tasks:
            seqs = completed(receiver)[task_id]
            assert seqs == sorted(seqs)
    finally:
        await receiver.stop()


async def rpc(url: str, method: str, params: dict[str, object]) -> dict[str, object]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with httpx.AsyncClient() as c:
        r = await c.post(url, json=body, headers={"A2A-Version": "1.0"}, timeout=30)
    answer: dict[str, object] = r.json()
    assert "result" in answer, answer
    return answer


async def test_a_config_stored_on_another_instance_reaches_the_running_task_at_once(
    tmp_path: Path, shared_store: str
) -> None:
    """A task streams on instance A; its webhook is registered through instance B: A's run
    learns of it within the same turn (a signal), sends the snapshot, then every change."""
    receiver = Receiver()
    await receiver.start()
    chatty = "chatty=tests.support.agents:Drip?chunks=40&interval=0.1"  # 4 s of chunks
    try:
        async with (
            hub_process(shared_store, tmp_path, chatty) as (a, _),
            hub_process(shared_store, tmp_path, chatty) as (b, _),
        ):
            message = {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": "go"}],
            }
            sent = await rpc(
                f"{a}/a2a/chatty",
                "SendMessage",
                {"message": message, "configuration": {"returnImmediately": True}},
            )
            task_id = sent["result"]["task"]["id"]  # type: ignore[index]
            config = {"taskId": task_id, "id": "late", "url": receiver.url}
            await rpc(f"{b}/a2a/chatty", "CreateTaskPushNotificationConfig", config)

            async def finished() -> bool:
                return task_id in completed(receiver)

            await until(finished, within=60)
        first = msgspec.json.decode(receiver.got[0].body)
        assert first["task"]["id"] == task_id  # the snapshot on registration comes first
        seqs = completed(receiver)[task_id]
        assert seqs == sorted(seqs)
    finally:
        await receiver.stop()
