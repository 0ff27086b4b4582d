"""Push notifications reach a real webhook: in order, signed (verified with PyJWT against
the JWKS fetched over HTTP), retried while the receiver is down, dead and re-queued."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import msgspec
import pytest

from a2a_hub import metrics
from a2a_hub.push import NotificationError, verify
from a2a_hub.push import dispatcher as dispatcher_module
from a2a_hub.push.sender import WebhookSender
from a2a_hub.push.urls import WebhookPolicy
from tests.support.agents import ChattyExecutor, SlowExecutor
from tests.support.hub import LiveServer, make_hub
from tests.support.push_receiver import Receiver, free_port, until

V10 = {"A2A-Version": "1.0"}
FAST = {"push_allow_hosts": "127.0.0.1", "push_retry_steps": "0.05,0.1,0.2"}


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = Receiver()
    await r.start()
    yield r
    await r.stop()


def hub_server(**settings: Any) -> LiveServer:
    hub = make_hub(
        {
            "chatty": ChattyExecutor(chunks=4, pause_every=1, delay=0.05),
            "echo": "echo",
            "slow": SlowExecutor(),
        },
        default_agent="echo",
        **{**FAST, **settings},
    )
    return LiveServer(hub)


async def send(server: LiveServer, agent: str, text: str, hook: dict[str, Any]) -> str:
    params = {
        "message": {"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"taskPushNotificationConfig": hook, "returnImmediately": True},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{server.url}/a2a/{agent}", json=body, headers=V10)
    data = r.json()
    assert "result" in data, data
    task_id: str = data["result"]["task"]["id"]
    return task_id


def states(receiver: Receiver) -> list[str]:
    out = []
    for item in receiver.got:
        ev = msgspec.json.decode(item.body)
        if "statusUpdate" in ev:
            out.append(ev["statusUpdate"]["status"]["state"])
        elif "task" in ev:
            out.append("snapshot:" + ev["task"]["status"]["state"])
        else:
            out.append("artifact")
    return out


async def test_notifications_arrive_in_order_and_verify_with_the_jwks(
    receiver: Receiver,
) -> None:
    async with hub_server() as server:
        hook = {"url": receiver.url, "token": "tok-1", "id": "h1"}
        task_id = await send(server, "chatty", "go", hook)
        # working, first chunk, whole artifact (last chunk), completed
        await receiver.wait_for(4)
        async with httpx.AsyncClient() as client:
            jwks = (await client.get(f"{server.url}/.well-known/jwks.json")).json()
            per_agent = (await client.get(f"{server.url}/a2a/chatty/.well-known/jwks.json")).json()
        assert per_agent == jwks and jwks["keys"][0]["kty"] == "OKP"
        keyset = jwt.PyJWKSet.from_dict(jwks)
        seqs, ids = [], set()
        for item in receiver.got:
            h = item.headers
            assert h["content-type"] == "application/a2a+json"
            assert h["x-a2a-notification-token"] == "tok-1"
            token = h["x-a2a-notification-jwt"]
            assert h["authorization"] == f"Bearer {token}"
            kid = jwt.get_unverified_header(token)["kid"]
            key = next(k for k in keyset.keys if k.key_id == kid)
            claims = jwt.decode(token, key, algorithms=["EdDSA"], audience=receiver.url)
            assert claims["exp"] - claims["iat"] <= 300
            assert claims["taskId"] == task_id
            assert claims["jti"] == h["x-a2a-notification-id"]
            assert claims["iss"].endswith("/a2a/chatty/.well-known/agent-card.json")
            assert claims["request_body_sha256"] == hashlib.sha256(item.body).hexdigest()
            seqs.append(int(h["x-a2a-event-seq"]))
            ids.add(h["x-a2a-notification-id"])
            checked = await verify(
                item.body,
                h,
                audience=receiver.url,
                jwks_url=f"{server.url}/.well-known/jwks.json",
                token="tok-1",
            )
            assert checked.seq == seqs[-1]
        assert seqs == sorted(seqs) and len(ids) == len(seqs)
        got = states(receiver)
        assert got[0] == "TASK_STATE_WORKING" and got[-1] == "TASK_STATE_COMPLETED"
        whole = msgspec.json.decode(receiver.got[-2].body)["artifactUpdate"]["artifact"]
        assert len(whole["parts"]) == 4  # the complete artifact, not the last chunk
        # a tampered body or a wrong token is refused by the helper
        item = receiver.got[-1]
        with pytest.raises(NotificationError, match="SHA-256"):
            await verify(item.body + b" ", item.headers, audience=receiver.url, keys=jwks)
        with pytest.raises(NotificationError, match="Token"):
            await verify(item.body, item.headers, audience=receiver.url, keys=jwks, token="x")
        with pytest.raises(NotificationError, match="JWT rejected"):
            await verify(item.body, item.headers, audience="https://other/", keys=jwks)


async def test_receiver_down_first_then_everything_arrives() -> None:
    port = free_port()
    receiver = Receiver(port=port)
    async with hub_server() as server:
        hook = {"url": f"http://127.0.0.1:{port}/hook", "id": "late"}
        await send(server, "echo", "hello", hook)
        dispatcher = server.hub.push
        assert dispatcher is not None

        async def failed_once() -> bool:
            return dispatcher.failures > 0

        await until(failed_once)
        await receiver.start()
        try:
            await receiver.wait_for(3)  # snapshot, working, completed (+ the artifact)
            async with asyncio.timeout(30):
                while "TASK_STATE_COMPLETED" not in states(receiver):
                    await receiver.arrived.wait()
                    receiver.arrived.clear()
        finally:
            await receiver.stop()
        seqs = [int(r.headers["x-a2a-event-seq"]) for r in receiver.got]
        assert seqs == sorted(seqs)
        assert len({r.headers["x-a2a-notification-id"] for r in receiver.got}) == len(seqs)


async def test_dead_deliveries_are_kept_and_requeued(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dispatcher_module, "BACKLOG_EVERY", 0.0)  # count the outbox each round

    def counted(result: str) -> float:
        return metrics.PUSH_DELIVERIES.values.get((result,), 0.0)

    def outbox(state: str) -> float | None:
        return metrics.REGISTRY.get_sample_value("a2a_push_outbox_deliveries", {"state": state})

    dead_before, delivered_before = counted("dead"), counted("delivered")
    receiver.status = 500
    async with hub_server(push_retry_horizon=0.3) as server:
        task_id = await send(server, "echo", "x", {"url": receiver.url, "id": "d"})
        dispatcher = server.hub.push
        assert dispatcher is not None
        store = server.hub.store

        async def last_is_dead() -> bool:
            record = await store.get_task_record("echo", task_id)
            if record is None or not record.task.status.state.terminal:
                return False
            return any(d.seq == record.seq for d in await dispatcher.dead())

        await until(last_is_dead)
        dead = await dispatcher.dead()
        assert all(d.last_error == "HTTP 500" and d.attempts >= 1 for d in dead)
        assert len(dead) >= 3  # snapshot, working, completed (and the artifact)
        assert counted("dead") - dead_before == len(dead)

        async def dead_counted() -> bool:
            dispatcher.wake()
            return outbox("dead") == len(dead)

        await until(dead_counted)
        receiver.status = 200
        assert await dispatcher.requeue() == len(dead)
        await receiver.wait_for(len(dead))
        assert await dispatcher.dead() == []

        async def delivered_counted() -> bool:  # counted once the receiver has answered
            return counted("delivered") - delivered_before == len(dead)

        await until(delivered_counted)
        seqs = [int(r.headers["x-a2a-event-seq"]) for r in receiver.got]
        assert seqs == sorted(seqs)


async def test_gone_deletes_the_config(receiver: Receiver) -> None:
    receiver.status = 410
    async with hub_server() as server:
        task_id = await send(server, "echo", "x", {"url": receiver.url, "id": "g"})
        store = server.hub.store

        async def deleted() -> bool:
            return not await store.list_push_configs("echo", task_id)

        await until(deleted)


async def test_connect_time_check_refuses_loopback_without_allow_list(
    receiver: Receiver,
) -> None:
    sender = WebhookSender(WebhookPolicy())
    try:
        for url in (receiver.url, f"https://localhost:{receiver.port}/hook"):
            outcome = await sender.post(url, b"{}", {})
            assert not outcome.ok and outcome.permanent
            assert "loopback" in outcome.error or "https" in outcome.error
        assert receiver.got == []
    finally:
        await sender.close()
    allowed = WebhookSender(WebhookPolicy(["127.0.0.1"]))
    try:
        assert (await allowed.post(receiver.url, b"{}", {"Content-Type": "a/b"})).ok
        assert receiver.got[0].headers["host"] == f"127.0.0.1:{receiver.port}"
    finally:
        await allowed.close()


async def test_03_and_01_configs_get_their_versions_task_shapes(receiver: Receiver) -> None:
    async with hub_server() as server:
        part = {"kind": "text", "text": "x"}
        msg03 = {"messageId": "m3", "role": "user", "kind": "message", "parts": [part]}
        send03 = {
            "message": msg03,
            "configuration": {"pushNotificationConfig": {"url": receiver.url, "token": "t3"}},
        }
        send01 = {
            "id": "legacy-push-1",
            "message": {"role": "user", "parts": [{"type": "text", "text": "y"}]},
            "pushNotification": {"url": receiver.url},
        }
        async with httpx.AsyncClient() as client:
            for method, params, version in (
                ("message/send", send03, "0.3"),
                ("tasks/send", send01, "0.1"),
            ):
                body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
                r = await client.post(
                    f"{server.url}/a2a/echo", json=body, headers={"A2A-Version": version}
                )
                assert "result" in r.json(), r.text

        async def both_completed() -> bool:
            finals = [msgspec.json.decode(i.body) for i in receiver.got]
            return sum(f.get("status", {}).get("state") == "completed" for f in finals) >= 2

        await until(both_completed)
        shapes = [msgspec.json.decode(i.body) for i in receiver.got]
        v03 = [s for s in shapes if s.get("kind") == "task"]
        v01 = [s for s in shapes if s.get("id") == "legacy-push-1"]
        assert v03 and all(
            s["status"]["state"] in ("submitted", "working", "completed") for s in v03
        )
        assert v01 and all("kind" not in s and "sessionId" in s for s in v01)
        assert all(i.headers["content-type"] == "application/json" for i in receiver.got)


async def test_a_config_registered_on_a_running_task_gets_its_snapshot_first(
    receiver: Receiver,
) -> None:
    async with hub_server() as server:
        params = {
            "message": {"messageId": "s", "role": "ROLE_USER", "parts": [{"text": "s"}]},
            "configuration": {"returnImmediately": True},
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
        async with httpx.AsyncClient() as client:
            r = await client.post(f"{server.url}/a2a/slow", json=body, headers=V10)
            task_id = r.json()["result"]["task"]["id"]
            create = {"taskId": task_id, "url": receiver.url, "id": "late"}
            body = {"jsonrpc": "2.0", "id": 2, "method": "CreateTaskPushNotificationConfig",
                    "params": create}  # fmt: skip
            assert (
                "result"
                in (await client.post(f"{server.url}/a2a/slow", json=body, headers=V10)).json()
            )
            await receiver.wait_for(1)
            cancel = {"jsonrpc": "2.0", "id": 3, "method": "CancelTask", "params": {"id": task_id}}
            await client.post(f"{server.url}/a2a/slow", json=cancel, headers=V10)
        await receiver.wait_for(2)
        got = states(receiver)
        assert got[0].startswith("snapshot:TASK_STATE_") and got[-1] == "TASK_STATE_CANCELED"


async def test_a_host_that_does_not_resolve_is_accepted_then_retried_until_dead() -> None:
    # RFC 6761: names under .invalid never resolve.  Not on the allow-list: checked for real.
    hook = {"url": "https://push-hook.invalid/a2a", "id": "dns"}
    async with hub_server(push_retry_horizon=0.3, push_allow_hosts="") as server:
        task_id = await send(server, "echo", "x", hook)  # accepted at creation
        store = server.hub.store
        assert [c.url for c in await store.list_push_configs("echo", task_id)] == [hook["url"]]
        dispatcher = server.hub.push
        assert dispatcher is not None

        async def last_is_dead() -> bool:
            record = await store.get_task_record("echo", task_id)
            if record is None or not record.task.status.state.terminal:
                return False
            return any(d.seq == record.seq for d in await dispatcher.dead())

        await until(last_is_dead)
        dead = await dispatcher.dead()
        assert dead and all(d.task_id == task_id for d in dead)
        for d in dead:
            assert d.attempts >= 2, d  # retried, not given up at the first failure
            assert d.last_error is not None
            assert "push-hook.invalid does not resolve" in d.last_error, d.last_error
        # a literal loopback address, and a name that resolves to one, are still refused at once
        async with httpx.AsyncClient() as client:
            for url in ("https://[::1]/hook", "https://localhost/hook"):
                params = {"taskId": task_id, "url": url}
                body = {"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig"}
                r = await client.post(
                    f"{server.url}/a2a/echo", json={**body, "params": params}, headers=V10
                )
                err = r.json()["error"]
                assert err["code"] == -32602 and "loopback" in err["message"], err
