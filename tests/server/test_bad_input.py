"""Every bad input gets a clear protocol error, stores nothing and logs no stack trace."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from a2a_hub import Hub, create_app
from tests.support.hub import make_hub

V10 = {"A2A-Version": "1.0", "content-type": "application/json"}
GOOD = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}


@pytest.fixture
async def small() -> Any:
    hub = make_hub({"echo": "echo"}, max_body_bytes=2048)
    await hub.start()
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://h") as c:
        yield hub, c
    await hub.close()


async def _post(
    c: httpx.AsyncClient, content: bytes | str, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    r = await c.post("/a2a/echo", content=content, headers=headers or V10)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


RPC_CASES: list[tuple[str, bytes | str, int, str]] = [
    ("malformed json", b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700, "Invalid JSON"),
    ("not an object", b"[1, 2]", -32600, "not a JSON-RPC 2.0 request"),
    ("no method", b'{"jsonrpc": "2.0", "id": 1}', -32600, "method"),
    ("wrong jsonrpc", b'{"jsonrpc": "1.0", "id": 1, "method": "GetTask"}', -32600, '"2.0"'),
    (
        "unknown method",
        b'{"jsonrpc": "2.0", "id": 1, "method": "Nope", "params": {}}',
        -32601,
        "Nope",
    ),
    (
        "missing params",
        b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}',
        -32602,
        "params is required",
    ),
    (
        "missing message",
        b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}',
        -32602,
        "message",
    ),
    (
        "wrong type",
        b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": '
        b'{"message": {"messageId": 5, "role": "ROLE_USER", "parts": [{"text": "x"}]}}}',
        -32602,
        "params.message.messageId",
    ),
    (
        "bad role",
        b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": '
        b'{"message": {"messageId": "m", "role": "user", "parts": [{"text": "x"}]}}}',
        -32602,
        "params.message.role",
    ),
    (
        "empty parts",
        b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": '
        b'{"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}}',
        -32602,
        "parts",
    ),
    (
        "unknown task",
        b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t"}}',
        -32001,
        "Task t not found",
    ),
    (
        "unknown task id in message",
        b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", '
        b'"params": {"message": {"messageId": "m", "role": "ROLE_USER", "taskId": "zz", '
        b'"parts": [{"text": "x"}]}}}',
        -32001,
        "zz",
    ),
    (
        "negative history",
        b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", '
        b'"params": {"id": "t", "historyLength": -1}}',
        -32602,
        "historyLength",
    ),
    (
        "bad page token",
        b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageToken": "garbage!"}}',
        -32602,
        "pageToken",
    ),
    (
        "0.3 method under 1.0",
        b'{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}',
        -32601,
        "A2A-Version: 0.3",
    ),
]


@pytest.mark.parametrize(
    ("name", "body", "code", "words"), RPC_CASES, ids=[c[0] for c in RPC_CASES]
)
async def test_json_rpc_errors(
    small: Any, caplog: pytest.LogCaptureFixture, name: str, body: bytes, code: int, words: str
) -> None:
    hub, c = small
    with caplog.at_level(logging.DEBUG):
        data = await _post(c, body)
    assert data["error"]["code"] == code, data
    assert words in data["error"]["message"], data["error"]["message"]
    await _nothing_stored(hub)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_unsupported_version_names_the_served_ones(small: Any) -> None:
    _, c = small
    data = await _post(
        c,
        b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}',
        {**V10, "A2A-Version": "2.0"},
    )
    assert data["error"]["code"] == -32009
    assert "1.0" in data["error"]["message"] and "0.3" in data["error"]["message"]
    r = await c.get("/a2a/echo/tasks?A2A-Version=9.1")
    assert r.status_code == 400
    assert r.json()["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"


async def test_body_over_the_limit_is_413(small: Any) -> None:
    hub, c = small
    big = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x" * 5000}]}
        },
    }
    r = await c.post("/a2a/echo", json=big, headers=V10)
    assert r.status_code == 413 and "limit of 2048 bytes" in r.json()["error"]["message"]

    async def chunks() -> Any:  # no Content-Length: the limit still holds while streaming
        for _ in range(10):
            yield b"x" * 1000

    r = await c.post(
        "/a2a/echo/message:send", content=chunks(), headers={"content-type": "application/json"}
    )
    assert r.status_code == 413
    await _nothing_stored(hub)


async def test_rest_content_type_and_body(small: Any) -> None:
    hub, c = small
    r = await c.post(
        "/a2a/echo/message:send",
        content=b"message=hi",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 415
    err = r.json()["error"]
    assert err["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    assert "application/json" in err["message"]
    r = await c.post(
        "/a2a/echo/message:send", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"
    r = await c.post("/a2a/echo/message:send", json={"message": {"messageId": "m"}})
    assert r.status_code == 400 and "body.message" in r.json()["error"]["message"]
    r = await c.get("/a2a/echo/tasks", params={"pageSize": "ten"})
    assert r.status_code == 400 and "pageSize" in r.json()["error"]["message"]
    r = await c.get("/a2a/echo/tasks", params={"status": "sleeping"})
    assert r.status_code == 400
    await _nothing_stored(hub)


async def test_plain_curl_without_version_header_works(small: Any) -> None:
    """No A2A-Version with a JSON Content-Type: served.  curl's default form type and a
    missing Content-Type are refused (issue 16, issue 18 item 7: application/json only)."""
    _, c = small
    body = b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":' + (
        b'{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}'
    )
    r = await c.post("/a2a/echo", content=body, headers={"content-type": "application/json"})
    assert r.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for headers in ({"content-type": "application/x-www-form-urlencoded"}, {}):
        r = await c.post("/a2a/echo", content=body, headers=headers)
        assert r.status_code == 415 and r.json()["error"]["code"] == -32005


async def _nothing_stored(hub: Hub) -> None:
    from a2a_hub.protocol.types import ListTasksRequest

    page = await hub.agents["echo"].engine.list_tasks(ListTasksRequest())
    assert page.total_size == 0
