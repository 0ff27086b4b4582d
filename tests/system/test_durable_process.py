"""Durable before visible, with real processes sharing Redis or PostgreSQL (issue 18).

* item 1: ``kill -9`` of the instance running a streamed task; a client resuming on the
  other instance with any id it was given gets what follows, the reaper's failure
  included, and no id names two different events;
* item 2: a client following a task live hops between two instances 500 times with its
  last id: never refused, nothing lost, nothing doubled;
* item 4: 200 followers of tasks running elsewhere, through one instance on Redis: the
  instance keeps answering and its own running task is never reaped.

Needs the machine's Redis (127.0.0.1:6379) and PostgreSQL (``A2A_HUB_TEST_POSTGRES_URL``);
without them these tests skip, and under ``CI=true`` they fail.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.sse import frames, rpc_body
from tests.system.test_multiprocess import Instance, instances, message, shared_store

V10 = {"A2A-Version": "1.0"}
#: A task that streams for minutes: an artifact chunk every 3 ms or so.
CHATTY = "tests.support.agents:ChattyExecutor?chunks=100000&pause_every=1&pause=0.003"
SLOW = "tests.support.agents:SlowExecutor"


@pytest.fixture(params=["redis", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> str:
    return shared_store(request.param, "durable")


@pytest.fixture
def agent() -> str:
    return f"chatty-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def pair(store_url: str, agent: str, tmp_path: Path) -> Iterator[tuple[Instance, Instance]]:
    with instances(tmp_path, store_url, [f"{agent}={CHATTY}"]) as (a, b):
        yield a, b


def payload(data: Any) -> Any:
    """The StreamResponse of a frame (JSON-RPC wraps it in ``result``, REST does not)."""
    assert isinstance(data, dict) and "error" not in data, f"refused: {data}"
    return data.get("result", data)


def state_of(event: dict[str, Any]) -> str | None:
    for key in ("statusUpdate", "task"):
        if key in event:
            return str(event[key]["status"]["state"])
    return None


async def events(response: httpx.Response) -> AsyncIterator[tuple[int, dict[str, Any]]]:
    """(id, StreamResponse) of each event; raises on an error answer."""
    if response.status_code != 200:
        await response.aread()
        raise AssertionError(f"refused: HTTP {response.status_code} {response.text}")
    async for frame in frames(response):
        if frame.comment:
            continue
        assert frame.id is not None, f"an event without an id: {frame.data}"
        yield frame.id, payload(frame.data)


def subscribe(
    client: httpx.AsyncClient, inst: Instance, agent: str, task_id: str, after: int, rest: bool
) -> Any:
    headers = {**V10, "Last-Event-ID": str(after)}
    if rest:
        url = f"{inst.url}/a2a/{agent}/tasks/{task_id}:subscribe"
        return client.stream("POST", url, headers=headers)
    body = rpc_body("SubscribeToTask", {"id": task_id})
    return client.stream("POST", f"{inst.url}/a2a/{agent}", headers=headers, json=body)


async def start_stream(
    client: httpx.AsyncClient, inst: Instance, agent: str, count: int
) -> tuple[str, dict[int, dict[str, Any]]]:
    """Start a streamed task on ``inst``; read ``count`` events live, then hang up."""
    seen: dict[int, dict[str, Any]] = {}
    body = rpc_body("SendStreamingMessage", {"message": message("go")})
    async with client.stream("POST", f"{inst.url}/a2a/{agent}", headers=V10, json=body) as r:
        async for seq, event in events(r):
            seen[seq] = event
            if len(seen) >= count:
                break
    task = seen[1]["task"]
    return str(task["id"]), seen


@pytest.mark.timeout(300)
async def test_kill_9_mid_stream_then_resume_anywhere_on_the_other_instance(
    pair: tuple[Instance, Instance], agent: str
) -> None:
    a, b = pair
    async with httpx.AsyncClient(timeout=60) as client:
        seen: dict[int, dict[str, Any]] = {}
        body = rpc_body("SendStreamingMessage", {"message": message("go")})
        async with client.stream("POST", f"{a.url}/a2a/{agent}", headers=V10, json=body) as r:
            async for seq, event in events(r):
                seen[seq] = event
                if len(seen) >= 200:
                    a.kill9()  # while it streams: events are being produced and written
                    break
        task_id = str(seen[1]["task"]["id"])
        last = max(seen)
        assert sorted(seen) == list(range(1, last + 1))
        # resume on B with the last id seen (before the reaper acted, most likely)
        after_last = []
        async with subscribe(client, b, agent, task_id, last, rest=False) as r:
            async for seq, event in events(r):
                after_last.append((seq, event))
        ids = [seq for seq, _ in after_last]
        assert ids == list(range(last + 1, last + 1 + len(ids))), "ids continue, no gap"
        assert state_of(after_last[-1][1]) == "TASK_STATE_FAILED"
        # resume anywhere: every id the client was given names the event it was shown
        for after in [0, *random.sample(range(1, last + 1), 5)]:
            async with subscribe(client, b, agent, task_id, after, rest=after % 2 == 1) as r:
                replay = [(seq, event) async for seq, event in events(r)]
            assert [seq for seq, _ in replay] == list(range(after + 1, ids[-1] + 1))
            for seq, event in replay:
                if seq in seen:
                    assert event == seen[seq], f"id {seq} names two different events"
                else:
                    assert (seq, event) in after_last


@pytest.mark.timeout(600)  # 500 connections: slow on a busy machine, never a failure for it
async def test_500_resumes_across_two_instances_are_never_refused_lost_or_doubled(
    pair: tuple[Instance, Instance], agent: str
) -> None:
    a, b = pair
    rng = random.Random(18)
    refused: list[str] = []
    lost = doubled = 0
    async with httpx.AsyncClient(timeout=60) as client:
        task_id, seen = await start_stream(client, a, agent, 3)
        last = max(seen)
        for _ in range(500):
            inst = rng.choice((a, b))
            want = rng.randint(1, 8)
            got = 0
            try:
                async with subscribe(
                    client, inst, agent, task_id, last, rest=rng.random() < 0.5
                ) as r:
                    async for seq, _event in events(r):
                        if seq <= last:
                            doubled += 1
                        elif seq > last + 1:
                            lost += seq - last - 1
                        last = max(last, seq)
                        got += 1
                        if got >= want:
                            break
            except AssertionError as exc:
                refused.append(str(exc)[:300])
        await client.post(
            f"{a.url}/a2a/{agent}", headers=V10, json=rpc_body("CancelTask", {"id": task_id})
        )
    assert (refused, lost, doubled) == ([], 0, 0)


#: The orphan timeout of :func:`redis_pair`'s instances.  Long enough that an instance
#: busy serving 200 followers on a loaded machine (CI runs four test workers on two
#: cores) still renews its leases in time (every ``0.75 * ORPHAN / 3`` s, a lease lasting
#: ``0.75 * ORPHAN``): with 2 s, one stall of a second cost a live instance its task.
ORPHAN = 8.0


@pytest.fixture
def redis_pair(agent: str, tmp_path: Path) -> Iterator[tuple[Instance, Instance]]:
    store = shared_store("redis", "durable")
    with instances(tmp_path, store, [f"{agent}={SLOW}"], orphan_timeout=ORPHAN) as (a, b):
        yield a, b


@pytest.mark.timeout(600)
async def test_200_followers_through_one_instance_on_redis(
    redis_pair: tuple[Instance, Instance], agent: str
) -> None:
    a, b = redis_pair
    # a connection idle for longer than 1 s is not reused: uvicorn closes idle keep-alive
    # connections after 5 s, and a request sent on one just as the server closes it fails
    # with ReadError (seen in CI when waiting for the 200 followers took over 5 s)
    limits = httpx.Limits(
        max_connections=None, max_keepalive_connections=None, keepalive_expiry=1.0
    )
    later = {"returnImmediately": True}

    async def send_later(inst: Instance) -> str:
        body = rpc_body("SendMessage", {"message": message("work"), "configuration": later})
        r = await client.post(f"{inst.url}/a2a/{agent}", headers=V10, json=body)
        return str(r.json()["result"]["task"]["id"])

    async def follow(task_id: str) -> str | None:
        """Follow a task of B's through A; the state the stream ended with."""
        end = None
        async with subscribe(client, a, agent, task_id, 1, rest=False) as r:
            async for _seq, event in events(r):
                end = state_of(event) or end
        return end

    async def get(inst: Instance, task_id: str) -> dict[str, Any]:
        body = rpc_body("GetTask", {"id": task_id})
        r = await client.post(f"{inst.url}/a2a/{agent}", headers=V10, json=body)
        return r.json()  # type: ignore[no-any-return]

    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        mine = await send_later(a)  # runs on A all along: A renews its lease
        theirs = [await send_later(b) for _ in range(20)]
        followers = [asyncio.ensure_future(follow(theirs[n % 20])) for n in range(200)]
        try:
            errors = 0
            # well past the orphan timeout: A answers, and keeps its lease
            loop = asyncio.get_running_loop()
            until = loop.time() + 1.5 * ORPHAN
            while loop.time() < until:
                answer = await get(a, theirs[0])
                errors += "error" in answer
                answer = await get(b, mine)
                errors += "error" in answer
                assert answer["result"]["status"]["state"] == "TASK_STATE_WORKING", (
                    "a task of a live instance was reaped"
                )
                await asyncio.sleep(0.2)
            assert not any(f.done() for f in followers), "no follower was dropped"
            for task_id in theirs:
                r = await client.post(
                    f"{b.url}/a2a/{agent}",
                    headers=V10,
                    json=rpc_body("CancelTask", {"id": task_id}),
                )
                errors += "error" in r.json()
            ends = await asyncio.wait_for(asyncio.gather(*followers), 60)
        finally:
            for f in followers:
                f.cancel()
        assert errors == 0
        assert ends == ["TASK_STATE_CANCELED"] * 200
        assert (await get(a, mine))["result"]["status"]["state"] == "TASK_STATE_WORKING"
    assert "Too many connections" not in a.log.read_text()
