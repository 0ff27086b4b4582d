"""A2A 1.1 preview across ``a2a-hub serve`` processes sharing Redis or PostgreSQL: every
instance answers the same ``generation`` for a task and its events (it is the seq of the
shared event log), a long-polling ``GetTask`` on one instance wakes when the task moves on
another, and ``ifGenerationMatch`` is checked against the shared generation.

Needs the machine's Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432); without them
these tests skip, and under ``CI=true`` they fail.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import hub_process
from tests.support.stores import POSTGRES_URL as POSTGRES
from tests.support.stores import PURGE_AT_EXIT, missing_service, redis_test_url

V11 = {"A2A-Version": "1.1"}


def _reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(params=["redis", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> str:
    if request.param == "redis":
        if not _reachable(6379):
            missing_service("Redis is not running on 127.0.0.1:6379")
        url = redis_test_url()
        PURGE_AT_EXIT.append(url)
        return url
    if not _reachable(5432):
        missing_service("PostgreSQL is not running on 127.0.0.1:5432")
    return POSTGRES


@pytest.fixture
def pair(store_url: str, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """Two instances over one store, serving the same pizza agent; (a, b, agent id)."""
    agent = f"pizza-{uuid.uuid4().hex[:6]}"
    spec = f"{agent}=tests.support.agents:PizzaExecutor"
    options = ("--long-poll-timeout", "120")
    with (
        hub_process(spec, cwd=tmp_path, store=store_url, options=options) as a,
        hub_process(spec, cwd=tmp_path, store=store_url, options=options) as b,
    ):
        yield a, b, agent


def rpc(base: str, agent: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    r = httpx.post(f"{base}/a2a/{agent}", json=body, headers=V11, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def message(text: str, task_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER"}
    msg["parts"] = [{"text": text}]
    if task_id:
        msg["taskId"] = task_id
    return msg


def replayed_generations(base: str, agent: str, task_id: str) -> list[int]:
    """The generations of the task's events, replayed from the start over REST SSE."""
    r = httpx.get(
        f"{base}/a2a/{agent}/tasks/{task_id}:subscribe",
        headers={**V11, "Last-Event-ID": "0"},
        timeout=60,
    )
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    return [next(iter(e.values()))["generation"] for e in events]


def test_two_instances_agree_on_generation(pair: tuple[str, str, str]) -> None:
    a, b, agent = pair
    task = rpc(a, agent, "SendMessage", {"message": message("pizza")})["result"]["task"]
    assert task["generation"] == 3
    assert rpc(b, agent, "GetTask", {"id": task["id"]})["result"]["generation"] == 3

    with ThreadPoolExecutor(1) as pool:
        # B long-polls while the task waits for input; A moves it on
        poll = pool.submit(rpc, b, agent, "GetTask", {"id": task["id"], "currentGeneration": 3})
        assert not poll.done()
        stale = {"message": message("x", task["id"]), "configuration": {"ifGenerationMatch": 2}}
        refused = rpc(b, agent, "SendMessage", stale)["error"]
        assert refused["code"] == -32010
        assert refused["data"][0]["metadata"]["currentGeneration"] == "3"
        assert not poll.done()  # a refused send moves nothing
        params = {
            "message": message("funghi", task["id"]),
            "configuration": {"ifGenerationMatch": 3},
        }
        done = rpc(a, agent, "SendMessage", params)["result"]["task"]
        assert done["generation"] == 7
        woke = poll.result(timeout=60)["result"]  # the poll's own timeout is 120 s
    assert 3 < woke["generation"] <= 7

    assert rpc(b, agent, "GetTask", {"id": task["id"]})["result"]["generation"] == 7
    assert replayed_generations(a, agent, task["id"]) == [1, 2, 3, 5, 6, 7]
    assert replayed_generations(b, agent, task["id"]) == [1, 2, 3, 5, 6, 7]
    again = {"message": message("more", task["id"]), "configuration": {"ifGenerationMatch": 3}}
    assert rpc(b, agent, "SendMessage", again)["error"]["code"] == -32010
