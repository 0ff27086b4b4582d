"""A2A 0.3 and the 0.1 legacy methods over JSON-RPC, raw JSON, in process."""

from __future__ import annotations

from typing import Any

import httpx


async def call(
    client: httpx.AsyncClient,
    agent: str,
    method: str,
    params: Any,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    r = await client.post(
        f"/a2a/{agent}",
        headers=headers or {},
        json={"jsonrpc": "2.0", "id": "r1", "method": method, "params": params},
    )
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    assert data["id"] == "r1"
    return data


def msg03(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": f"m-{text}",
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


async def test_03_send_get_cancel(client: httpx.AsyncClient) -> None:
    task = (await call(client, "echo", "message/send", {"message": msg03("hi")}))["result"]
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "echo: hi"}]
    assert task["history"][0]["kind"] == "message" and task["history"][0]["role"] == "user"
    got = await call(client, "echo", "tasks/get", {"id": task["id"], "historyLength": 0})
    assert "history" not in got["result"] and got["result"]["contextId"] == task["contextId"]
    err = (await call(client, "echo", "tasks/cancel", {"id": task["id"]}))["error"]
    assert err["code"] == -32002
    err = (await call(client, "echo", "tasks/get", {"id": "missing"}))["error"]
    assert err["code"] == -32001


async def test_03_with_explicit_header_and_message_reply(client: httpx.AsyncClient) -> None:
    data = await call(
        client, "echo-msg", "message/send", {"message": msg03("yo")}, headers={"A2A-Version": "0.3"}
    )
    assert data["result"]["kind"] == "message" and data["result"]["role"] == "agent"
    assert data["result"]["parts"][0]["text"] == "echo: yo"


async def test_03_two_turns_and_non_blocking(client: httpx.AsyncClient) -> None:
    first = (await call(client, "pizza", "message/send", {"message": msg03("pizza")}))["result"]
    assert first["status"]["state"] == "input-required"
    second = (
        await call(
            client,
            "pizza",
            "message/send",
            {"message": msg03("hawaii", taskId=first["id"], contextId=first["contextId"])},
        )
    )["result"]
    assert second["status"]["state"] == "completed" and len(second["history"]) == 4
    later = (
        await call(
            client,
            "slow",
            "message/send",
            {"message": msg03("work"), "configuration": {"blocking": False}},
        )
    )["result"]
    assert later["status"]["state"] == "submitted"
    canceled = (await call(client, "slow", "tasks/cancel", {"id": later["id"]}))["result"]
    assert canceled["status"]["state"] == "canceled"


async def test_03_unsupported_parts_are_clear(client: httpx.AsyncClient) -> None:
    bad = {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "video"}]}}
    err = (await call(client, "echo", "message/send", bad))["error"]
    assert err["code"] == -32602 and "parts[0]" in err["message"]
    for method, code in [
        ("tasks/pushNotificationConfig/set", -32602),
        ("tasks/pushNotificationConfig/get", -32001),
        ("agent/getAuthenticatedExtendedCard", -32007),
    ]:
        assert (await call(client, "echo", method, {"id": "x"}))["error"]["code"] == code


def send01(task_id: str, text: str, session: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "id": task_id,
        "message": {"role": "user", "parts": [{"type": "text", "text": text}]},
    }
    if session:
        params["sessionId"] = session
    return params


async def test_01_send_get_cancel_in_legacy_shapes(client: httpx.AsyncClient) -> None:
    task = (await call(client, "echo", "tasks/send", send01("legacy-1", "old", "s-1")))["result"]
    assert task["id"] == "legacy-1" and task["sessionId"] == "s-1"
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"type": "text", "text": "echo: old"}]
    assert "kind" not in task and "contextId" not in task
    got = (await call(client, "echo", "tasks/get", {"id": "legacy-1"}))["result"]
    assert got["sessionId"] == "s-1" and got["history"][0]["parts"][0]["type"] == "text"
    err = (await call(client, "echo", "tasks/cancel", {"id": "legacy-1"}))["error"]
    assert err["code"] == -32002


async def test_01_multi_turn_with_client_chosen_id(client: httpx.AsyncClient) -> None:
    first = (await call(client, "pizza", "tasks/send", send01("order-7", "pizza")))["result"]
    assert first["status"]["state"] == "input-required"
    assert first["status"]["message"]["parts"][0]["text"] == "What kind of pizza?"
    done = (await call(client, "pizza", "tasks/send", send01("order-7", "funghi")))["result"]
    assert done["status"]["state"] == "completed" and done["id"] == "order-7"
    assert len(done["history"]) == 4
    again = (await call(client, "pizza", "tasks/send", send01("order-7", "more")))["error"]
    assert again["code"] == -32004


async def test_01_message_reply_agent_still_answers_with_a_task(client: httpx.AsyncClient) -> None:
    task = (await call(client, "echo-msg", "tasks/send", send01("lg-2", "hey")))["result"]
    assert task["status"]["state"] == "completed"
    assert task["status"]["message"]["parts"] == [{"type": "text", "text": "echo: hey"}]


async def test_01_cancel_interrupted(client: httpx.AsyncClient) -> None:
    await call(client, "pizza", "tasks/send", send01("order-8", "pizza"))
    task = (await call(client, "pizza", "tasks/cancel", {"id": "order-8"}))["result"]
    assert task["status"]["state"] == "canceled" and task["id"] == "order-8"


async def test_01_push_answers_clearly(client: httpx.AsyncClient) -> None:
    for method, code, word in [
        ("tasks/pushNotification/set", -32602, "pushNotificationConfig"),
        ("tasks/pushNotification/get", -32001, "x"),
    ]:
        err = (await call(client, "echo", method, send01("x", "y")))["error"]
        assert err["code"] == code and word in err["message"], method
    err = (await call(client, "echo", "tasks/send", {"message": {"parts": []}}))["error"]
    assert err["code"] == -32602 and "id" in err["message"]
