"""A2A 1.0 over JSON-RPC and REST, in process."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

V10 = {"A2A-Version": "1.0"}


def send_params(text: str, **message: Any) -> dict[str, Any]:
    return {
        "message": {
            "messageId": f"m-{text}",
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **message,
        }
    }


async def rpc(
    client: httpx.AsyncClient,
    agent: str,
    method: str,
    params: Any = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
    if params is not None:
        body["params"] = params
    r = await client.post(f"/a2a/{agent}", json=body, headers=V10 if headers is None else headers)
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    assert data["jsonrpc"] == "2.0" and data["id"] == 7
    return data


async def test_send_message_returns_completed_task(client: httpx.AsyncClient) -> None:
    data = await rpc(client, "echo", "SendMessage", send_params("hi"))
    task = data["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "echo: hi"}]
    assert task["history"][0]["taskId"] == task["id"]
    got = await rpc(client, "echo", "GetTask", {"id": task["id"]})
    assert got["result"] == task


async def test_message_flow_and_context(client: httpx.AsyncClient) -> None:
    data = await rpc(client, "echo-msg", "SendMessage", send_params("yo", contextId="c-9"))
    message = data["result"]["message"]
    assert message["role"] == "ROLE_AGENT" and message["contextId"] == "c-9"
    assert message["parts"] == [{"text": "echo: yo"}]


async def test_two_turn_conversation_over_json_rpc(client: httpx.AsyncClient) -> None:
    first = (await rpc(client, "pizza", "SendMessage", send_params("pizza")))["result"]["task"]
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert first["status"]["message"]["parts"][0]["text"] == "What kind of pizza?"
    second = (
        await rpc(
            client,
            "pizza",
            "SendMessage",
            send_params("margherita", taskId=first["id"], contextId=first["contextId"]),
        )
    )["result"]["task"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(second["history"]) == 4
    again = await rpc(client, "pizza", "SendMessage", send_params("more", taskId=first["id"]))
    assert again["error"]["code"] == -32004
    assert "completed" in again["error"]["message"]


async def test_list_and_cancel(client: httpx.AsyncClient) -> None:
    t1 = (await rpc(client, "pizza", "SendMessage", send_params("a")))["result"]["task"]
    t2 = (await rpc(client, "pizza", "SendMessage", send_params("b")))["result"]["task"]
    listed = (await rpc(client, "pizza", "ListTasks", {"pageSize": 1}))["result"]
    assert listed["pageSize"] == 1 and listed["totalSize"] == 2
    assert listed["tasks"][0]["id"] == t2["id"] and listed["nextPageToken"]
    rest = (
        await rpc(
            client, "pizza", "ListTasks", {"pageSize": 1, "pageToken": listed["nextPageToken"]}
        )
    )["result"]
    assert [t["id"] for t in rest["tasks"]] == [t1["id"]] and rest["nextPageToken"] == ""
    canceled = (await rpc(client, "pizza", "CancelTask", {"id": t1["id"]}))["result"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    again = await rpc(client, "pizza", "CancelTask", {"id": t1["id"]})
    assert again["error"]["code"] == -32002
    assert again["error"]["data"][0]["reason"] == "TASK_NOT_CANCELABLE"
    empty = (await rpc(client, "pizza", "ListTasks"))["result"]
    assert empty["totalSize"] == 2


async def test_non_blocking_send(client: httpx.AsyncClient) -> None:
    params = send_params("later")
    params["configuration"] = {"returnImmediately": True}
    task = (await rpc(client, "echo", "SendMessage", params))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    for _ in range(100):
        got = (await rpc(client, "echo", "GetTask", {"id": task["id"]}))["result"]
        if got["status"]["state"] == "TASK_STATE_COMPLETED":
            break
        await asyncio.sleep(0.01)
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_cancel_a_running_task_over_rest(client: httpx.AsyncClient) -> None:
    params = send_params("work")
    params["configuration"] = {"returnImmediately": True}
    r = await client.post("/a2a/slow/message:send", json=params, headers=V10)
    assert r.status_code == 200, r.text
    task = r.json()["task"]
    r = await client.post(f"/a2a/slow/tasks/{task['id']}:cancel", headers=V10)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["state"] == "TASK_STATE_CANCELED"
    r = await client.get(f"/a2a/slow/tasks/{task['id']}")
    assert r.json()["status"]["state"] == "TASK_STATE_CANCELED"
    r = await client.post(f"/a2a/slow/tasks/{task['id']}:cancel", json={})
    assert r.status_code == 400
    assert r.json()["error"]["details"][0]["reason"] == "TASK_NOT_CANCELABLE"


async def test_rest_send_get_list(client: httpx.AsyncClient) -> None:
    r = await client.post("/a2a/echo/message:send", json=send_params("rest"), headers=V10)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/a2a+json")
    task = r.json()["task"]
    r = await client.get(f"/a2a/echo/tasks/{task['id']}", params={"historyLength": 0})
    assert r.status_code == 200 and "history" not in r.json()
    r = await client.get(
        "/a2a/echo/tasks", params={"status": "TASK_STATE_COMPLETED", "includeArtifacts": "true"}
    )
    body = r.json()
    assert body["totalSize"] == 1 and body["tasks"][0]["artifacts"]
    assert body["nextPageToken"] == ""
    r = await client.get("/a2a/echo/tasks", params={"status": "completed"})
    assert r.json()["totalSize"] == 1
    r = await client.get("/a2a/echo/tasks/nope")
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["status"] == "NOT_FOUND" and err["details"][0]["reason"] == "TASK_NOT_FOUND"


async def test_agents_are_isolated(client: httpx.AsyncClient) -> None:
    task = (await rpc(client, "echo", "SendMessage", send_params("mine")))["result"]["task"]
    other = await rpc(client, "pizza", "GetTask", {"id": task["id"]})
    assert other["error"]["code"] == -32001


async def test_push_and_extended_card_answer_clearly(client: httpx.AsyncClient) -> None:
    data = await rpc(client, "echo", "GetExtendedAgentCard", {"id": "x"})
    assert data["error"]["code"] == -32007
    assert "echo" in data["error"]["message"]
    data = await rpc(client, "echo", "CreateTaskPushNotificationConfig", {"id": "x"})
    assert data["error"]["code"] == -32602 and "url" in data["error"]["message"]
    data = await rpc(client, "echo", "GetTaskPushNotificationConfig", {"taskId": "nope", "id": "c"})
    assert data["error"]["code"] == -32001
