"""Push notification configs on every version: set/get/list/delete, masking, visibility,
limits, and the webhook URL safety checks (no allow-list unless the test sets one)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2a_hub import Hub, create_app
from a2a_hub.engine.caller import Caller
from a2a_hub.engine.push import MASK
from a2a_hub.protocol.errors import InvalidParamsError, TaskNotFoundError
from a2a_hub.protocol.types import AuthenticationInfo, TaskPushNotificationConfig
from a2a_hub.push.urls import WebhookPolicy
from tests.support.hub import make_hub

V10 = {"A2A-Version": "1.0"}
HOOK = "https://localhost:9/a2a"  # allow-listed below; nothing listens there


@pytest.fixture
async def phub() -> AsyncIterator[Hub]:
    hub = make_hub({"echo": "echo"}, push_allow_hosts="localhost")
    await hub.start()
    yield hub
    await hub.close()


@pytest.fixture
async def pclient(phub: Hub) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(phub))
    async with httpx.AsyncClient(transport=transport, base_url="http://hub.test") as c:
        yield c


async def rpc(
    client: httpx.AsyncClient, method: str, params: Any, version: str = "1.0"
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    r = await client.post("/a2a/echo", json=body, headers={"A2A-Version": version})
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    return data


async def new_task(client: httpx.AsyncClient) -> str:
    msg = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    data = await rpc(client, "SendMessage", {"message": msg})
    task_id: str = data["result"]["task"]["id"]
    return task_id


async def test_v10_jsonrpc_create_get_list_delete_masks_secrets(
    pclient: httpx.AsyncClient,
) -> None:
    task_id = await new_task(pclient)
    config = {
        "taskId": task_id,
        "id": "c1",
        "url": HOOK,
        "token": "tok-secret",
        "authentication": {"scheme": "Bearer", "credentials": "cred-secret"},
    }
    created = (await rpc(pclient, "CreateTaskPushNotificationConfig", config))["result"]
    assert created["id"] == "c1" and created["url"] == HOOK
    got = (await rpc(pclient, "GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}))[
        "result"
    ]
    assert got["token"] == MASK and got["authentication"] == {
        "scheme": "Bearer",
        "credentials": MASK,
    }
    assert "secret" not in str(got)
    no_id = {"taskId": task_id, "url": HOOK + "/2"}
    second = (await rpc(pclient, "CreateTaskPushNotificationConfig", no_id))["result"]
    assert second["id"] and second["id"] != "c1"
    listed = (await rpc(pclient, "ListTaskPushNotificationConfigs", {"taskId": task_id}))["result"]
    assert [c["id"] for c in listed["configs"]] == ["c1", second["id"]]
    assert "secret" not in str(listed)
    deleted = await rpc(
        pclient, "DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}
    )
    assert "error" not in deleted
    gone = await rpc(pclient, "GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"})
    assert gone["error"]["code"] == -32001


async def test_v10_rest_routes(pclient: httpx.AsyncClient) -> None:
    task_id = await new_task(pclient)
    base = f"/a2a/echo/tasks/{task_id}/pushNotificationConfigs"
    r = await pclient.post(base, json={"url": HOOK, "id": "r1", "token": "t"}, headers=V10)
    assert r.status_code == 200, r.text
    assert r.json()["taskId"] == task_id and r.json()["token"] == MASK
    r = await pclient.get(base + "/r1", headers=V10)
    assert r.status_code == 200 and r.json()["id"] == "r1"
    r = await pclient.get(base, headers=V10)
    assert [c["id"] for c in r.json()["configs"]] == ["r1"]
    r = await pclient.delete(base + "/r1", headers=V10)
    assert r.status_code == 200
    r = await pclient.get(base + "/r1", headers=V10)
    assert r.status_code == 404
    r = await pclient.post(base, json={"url": "https://10.0.0.1/x"}, headers=V10)
    assert r.status_code == 400 and "private" in r.text
    r = await pclient.get("/a2a/echo/tasks/nope/pushNotificationConfigs", headers=V10)
    assert r.status_code == 404


async def test_v03_methods_and_inline_config(pclient: httpx.AsyncClient) -> None:
    msg = {
        "messageId": "m3",
        "role": "user",
        "kind": "message",
        "parts": [{"kind": "text", "text": "x"}],
    }
    inline = {"url": HOOK, "id": "inl", "token": "tk"}
    sent = await rpc(
        pclient,
        "message/send",
        {"message": msg, "configuration": {"pushNotificationConfig": inline}},
        "0.3",
    )
    task_id = sent["result"]["id"]
    listed = (await rpc(pclient, "tasks/pushNotificationConfig/list", {"id": task_id}, "0.3"))[
        "result"
    ]
    assert [c["pushNotificationConfig"]["id"] for c in listed] == ["inl"]
    assert listed[0]["pushNotificationConfig"]["token"] == MASK
    params = {"taskId": task_id, "pushNotificationConfig": {"url": HOOK, "id": "p2"}}
    setr = (await rpc(pclient, "tasks/pushNotificationConfig/set", params, "0.3"))["result"]
    assert setr == {"taskId": task_id, "pushNotificationConfig": {"id": "p2", "url": HOOK}}
    ref = {"id": task_id, "pushNotificationConfigId": "p2"}
    got = (await rpc(pclient, "tasks/pushNotificationConfig/get", ref, "0.3"))["result"]
    assert got["pushNotificationConfig"]["id"] == "p2"
    assert "error" not in await rpc(pclient, "tasks/pushNotificationConfig/delete", ref, "0.3")
    gone = await rpc(pclient, "tasks/pushNotificationConfig/get", ref, "0.3")
    assert gone["error"]["code"] == -32001


async def test_v01_set_get_and_inline(pclient: httpx.AsyncClient) -> None:
    send = {
        "id": "legacy-push",
        "message": {"role": "user", "parts": [{"type": "text", "text": "x"}]},
        "pushNotification": {"url": HOOK, "token": "abc"},
    }
    assert (await rpc(pclient, "tasks/send", send, "0.1"))["result"]["id"] == "legacy-push"
    got = (await rpc(pclient, "tasks/pushNotification/get", {"id": "legacy-push"}, "0.1"))["result"]
    assert got == {"id": "legacy-push", "pushNotificationConfig": {"url": HOOK, "token": MASK}}
    params = {"id": "legacy-push", "pushNotificationConfig": {"url": HOOK + "/v2"}}
    setr = (await rpc(pclient, "tasks/pushNotification/set", params, "0.1"))["result"]
    assert setr == {"id": "legacy-push", "pushNotificationConfig": {"url": HOOK + "/v2"}}


async def test_unsafe_urls_refused_without_allow_list(client: httpx.AsyncClient) -> None:
    msg = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": msg}}
    r = await client.post("/a2a/echo", json=body, headers=V10)
    task_id = r.json()["result"]["task"]["id"]
    for url, reason in [
        ("https://127.0.0.1/hook", "loopback"),
        ("https://10.1.2.3/hook", "private"),
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://[::1]/hook", "loopback"),
        ("https://0.0.0.0/hook", "unspecified"),
        ("https://224.0.0.1/hook", "multicast"),
        ("http://93.184.216.34/hook", "https"),
        ("https://localhost/hook", "loopback"),
        ("ftp://example.com/x", "https"),
    ]:
        params = {"taskId": task_id, "url": url}
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "CreateTaskPushNotificationConfig",
            "params": params,
        }
        err = (await client.post("/a2a/echo", json=body, headers=V10)).json()["error"]
        assert err["code"] == -32602 and reason in err["message"], (url, err)


async def test_policy_allow_list_by_name_and_cidr() -> None:
    policy = WebhookPolicy.from_setting("localhost, 10.0.0.0/8")
    await policy.check_url("http://localhost:9/x")
    await policy.check_url("https://10.9.9.9/x")
    with pytest.raises(InvalidParamsError, match="private"):
        await policy.check_url("https://192.168.1.1/x")
    with pytest.raises(InvalidParamsError, match="loopback"):
        await WebhookPolicy().resolve("https://localhost/x")
    host, ip = await policy.resolve("http://localhost:9/x")
    assert host == "localhost" and ip.is_loopback


async def test_limits_header_injection_and_visibility(phub: Hub) -> None:
    engine = phub.agents["echo"].engine
    alice = Caller(principal="alice", key_id="k1", scopes=frozenset(), agents=None)
    bob = Caller(principal="bob", key_id="k2", scopes=frozenset(), agents=None)
    from a2a_hub.protocol.types import Message, Part, Role, SendMessageRequest

    msg = Message(message_id="m", role=Role.USER, parts=[Part(text="hi")])
    task = await engine.send(SendMessageRequest(message=msg), caller=alice)
    task_id = task.id
    for n in range(10):
        await engine.set_push_config(
            TaskPushNotificationConfig(url=HOOK, id=f"c{n}", task_id=task_id), caller=alice
        )
    with pytest.raises(InvalidParamsError, match="most allowed"):
        await engine.set_push_config(
            TaskPushNotificationConfig(url=HOOK, id="c10", task_id=task_id), caller=alice
        )
    # replacing an existing id is not an eleventh config
    await engine.set_push_config(
        TaskPushNotificationConfig(url=HOOK + "/x", id="c3", task_id=task_id), caller=alice
    )
    bad = TaskPushNotificationConfig(
        url=HOOK,
        id="c3",
        task_id=task_id,
        authentication=AuthenticationInfo(scheme="Bearer", credentials="a\r\nX-Evil: 1"),
    )
    with pytest.raises(InvalidParamsError, match="CR, LF"):
        await engine.set_push_config(bad, caller=alice)
    with pytest.raises(TaskNotFoundError):
        await engine.list_push_configs(task_id, caller=bob)
    with pytest.raises(TaskNotFoundError):
        await engine.get_push_config(task_id, "c1", caller=bob)
    with pytest.raises(TaskNotFoundError):
        await engine.delete_push_config(task_id, "c1", caller=bob)
    with pytest.raises(TaskNotFoundError):
        await engine.set_push_config(
            TaskPushNotificationConfig(url=HOOK, id="b", task_id=task_id), caller=bob
        )
    assert len(await engine.list_push_configs(task_id, caller=alice)) == 10
