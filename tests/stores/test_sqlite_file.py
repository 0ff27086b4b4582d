"""A SQLite file that cannot be written, or that is deleted or replaced while the hub serves
(issue 18 item 5): the documented store error (JSON-RPC -32603 STORE_UNAVAILABLE, REST 503),
``/readyz`` 503 naming the store, one log line and no traceback."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_hub import AgentSpec, Hub, Settings, create_app
from a2a_hub.stores.sql.store import SqlStore

JSON = {"content-type": "application/json", "A2A-Version": "1.0"}


def _message(n: int) -> dict[str, Any]:
    return {"messageId": f"m{n}", "role": "ROLE_USER", "parts": [{"text": "hi"}]}


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Hub, httpx.AsyncClient, Path]]:
    path = tmp_path / "data" / "hub.db"
    settings = Settings.from_flat(
        agents=[AgentSpec(id="echo", kind="echo")], store=f"sqlite:///{path}"
    )
    hub = Hub(settings)
    await hub.start()
    transport = httpx.ASGITransport(app=create_app(hub))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            yield hub, c, path
    finally:
        await hub.close()


async def _send(c: httpx.AsyncClient, n: int) -> tuple[httpx.Response, httpx.Response]:
    """One JSON-RPC and one REST send."""
    rpc = await c.post(
        "/a2a/echo",
        json={
            "jsonrpc": "2.0",
            "id": n,
            "method": "SendMessage",
            "params": {"message": _message(n)},
        },
        headers=JSON,
    )
    rest = await c.post(
        "/a2a/echo/message:send", json={"message": _message(n + 1000)}, headers=JSON
    )
    return rpc, rest


def _assert_store_error(rpc: httpx.Response, rest: httpx.Response, words: str) -> None:
    assert rpc.status_code == 200, rpc.text
    err = rpc.json()["error"]
    assert err["code"] == -32603 and err["data"][0]["reason"] == "STORE_UNAVAILABLE", err
    assert words in err["message"], err["message"]
    assert rest.status_code == 503, rest.text
    assert rest.json()["error"]["details"][0]["reason"] == "STORE_UNAVAILABLE"


def _quiet(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The records above debug level; none carries a traceback."""
    loud = [r for r in caplog.records if r.levelno > logging.DEBUG]
    assert not [r for r in loud if r.exc_info], [r.getMessage() for r in loud]
    return loud


async def test_a_file_that_cannot_be_written_is_the_store_error(
    served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    hub, c, path = served
    rpc, rest = await _send(c, 1)
    assert "task" in rpc.json()["result"] and rest.status_code == 200
    store = hub.store
    assert isinstance(store, SqlStore)
    if os.geteuid() == 0:
        # root writes through any file mode: make the writer's connection read-only instead,
        # which fails each write exactly as a read-only file does (SQLITE_READONLY)
        writer: Any = store._writer
        writer._connection().execute("PRAGMA query_only=ON")
    else:
        for p in path.parent.iterdir():
            p.chmod(0o444)
        path.parent.chmod(0o555)
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    rpc, rest = await _send(c, 2)
    _assert_store_error(rpc, rest, "readonly")
    loud = _quiet(caplog)
    assert len([r for r in loud if "is down" in r.getMessage()]) == 1
    if os.geteuid() != 0:
        path.parent.chmod(0o755)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_file_deleted_or_replaced_while_serving_fails_loudly(
    served: Any, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    _, c, path = served
    rpc, _ = await _send(c, 1)
    task_id = rpc.json()["result"]["task"]["id"]
    assert (await c.get(f"/a2a/echo/tasks/{task_id}", headers=JSON)).status_code == 200
    assert (await c.get("/readyz")).status_code == 200
    if how == "deleted":
        shutil.rmtree(path.parent)
    else:
        other = path.with_name("other.db")
        sqlite3.connect(other).close()
        os.replace(other, path)
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    rpc, rest = await _send(c, 2)
    _assert_store_error(rpc, rest, how)
    r = await c.get(f"/a2a/echo/tasks/{task_id}", headers=JSON)
    assert r.status_code == 503
    ready = await c.get("/readyz")
    assert ready.status_code == 503 and ready.json()["failing"] == ["store"]
    assert how in ready.json()["checks"]["store"] and str(path) in ready.json()["checks"]["store"]
    loud = _quiet(caplog)
    assert len([r for r in loud if "is down" in r.getMessage()]) == 1, [
        r.getMessage() for r in loud
    ]
