"""API keys: 401/403 on every binding, per-caller visibility, revocation, the registry.

Everything runs against a real uvicorn server on a loopback socket.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.registry import Registry
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import PizzaExecutor, SlowExecutor
from tests.support.hub import LiveServer
from tests.support.stores import POSTGRES_URL, missing_service

V10 = {"A2A-Version": "1.0"}


def msg10(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "message": {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}]}
        | extra
    }


def msg03(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "message": {
            "kind": "message",
            "messageId": f"m-{text}",
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
        }
        | extra
    }


async def eventually(
    attempt: Callable[[], Awaitable[httpx.Response]], done: Callable[[httpx.Response], bool]
) -> httpx.Response:
    """Repeat ``attempt`` until ``done`` (or 30 s): polled, so no timing decides the test."""
    for _ in range(300):
        r = await attempt()
        if done(r):
            break
        await asyncio.sleep(0.1)
    return r


def make_hub(tmp_path: Path, *, registry: str | None = None, **flat: Any) -> Hub:
    specs = [
        AgentSpec(id="locked", kind="echo", auth="api-key"),
        AgentSpec(id="other", kind="echo", auth="api-key"),
        AgentSpec(id="pizza", kind="python", executor="x:y", auth="api-key"),
        AgentSpec(id="slow", kind="python", executor="x:y", auth="api-key"),
        AgentSpec(id="open", kind="echo"),
        AgentSpec(id="chat", kind="echo", auth="api-key", options={"reply": "message"}),
    ]
    settings = Settings.from_flat(
        agents=specs,
        store="memory://",
        registry=registry or f"sqlite:///{tmp_path}/registry.db",
        **flat,
    )
    return Hub(
        settings,
        store=MemoryStore(),
        executors={"pizza": PizzaExecutor(), "slow": SlowExecutor()},
    )


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[LiveServer]:
    # the admin API may name this command and reach this host (issue 30 items 15, 19)
    hub = make_hub(tmp_path, admin_allow_commands=["mcp-files"], outbound_allow_hosts=["127.0.0.1"])
    async with LiveServer(hub) as server:
        yield server


async def new_key(hub: Hub, **options: Any) -> str:
    assert hub.registry is not None
    key, _ = await hub.registry.create_key(**options)
    return key


async def test_missing_or_bad_key_is_401_on_every_binding(served: LiveServer) -> None:
    base = f"{served.url}/a2a/locked"
    async with httpx.AsyncClient(timeout=30) as http:
        for headers in ({}, {"X-API-Key": "a2ah_nope"}, {"Authorization": "Bearer wrong"}):
            # JSON-RPC 1.0, 0.3, 0.1
            for method, params, version in (
                ("SendMessage", msg10("hi"), "1.0"),
                ("message/send", msg03("hi"), "0.3"),
                ("message/stream", msg03("hi"), "0.3"),
                ("tasks/send", {"id": "t1", "message": msg03("hi")["message"]}, "0.3"),
            ):
                r = await http.post(
                    base,
                    json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                    headers={"A2A-Version": version, **headers},
                )
                assert r.status_code == 401, (method, r.text)
                assert r.headers["www-authenticate"].startswith("Bearer")
                body = r.json()
                assert body["jsonrpc"] == "2.0" and body["error"]["code"] == -32600
                assert body["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
            # REST and SSE
            for verb, path in (
                ("POST", "/message:send"),
                ("POST", "/message:stream"),
                ("GET", "/tasks"),
                ("GET", "/tasks/t1"),
                ("POST", "/tasks/t1:cancel"),
                ("GET", "/tasks/t1:subscribe"),
            ):
                r = await http.request(verb, base + path, json=msg10("x"), headers=headers)
                assert r.status_code == 401, (path, r.text)
                assert "www-authenticate" in r.headers
                assert r.json()["error"]["details"][0]["reason"] == "UNAUTHENTICATED"
        # the card stays public and lists the schemes (1.0 and 0.3)
        card = (await http.get(base + "/.well-known/agent-card.json")).json()
        assert card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"] == "X-API-Key"
        assert card["securitySchemes"]["apiKey"]["in"] == "header"
        assert card["securitySchemes"]["bearer"]["type"] == "http"
        assert {"schemes": {"bearer": {}}} in card["securityRequirements"]
        assert {"apiKey": []} in card["security"]
        open_card = (await http.get(f"{served.url}/a2a/open/.well-known/agent-card.json")).json()
        assert "securitySchemes" not in open_card and "security" not in open_card


async def test_key_for_another_agent_is_403_and_a_good_key_works(served: LiveServer) -> None:
    key = await new_key(served.hub, agents=["other"], name="alice")
    base = f"{served.url}/a2a/locked"
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.post(
            base,
            json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": msg10("hi")},
            headers={**V10, "X-API-Key": key},
        )
        assert r.status_code == 403
        assert r.json()["error"]["data"][0]["reason"] == "PERMISSION_DENIED"
        r = await http.get(base + "/tasks", headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 403
        for header in ({"X-API-Key": key}, {"Authorization": f"Bearer {key}"}):
            r = await http.post(
                f"{served.url}/a2a/other",
                json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": msg10("hi")},
                headers={**V10, **header},
            )
            assert r.status_code == 200 and "result" in r.json(), r.text
            r = await http.post(
                f"{served.url}/a2a/other/message:stream", json=msg10("s"), headers=header
            )
            assert r.status_code == 200 and "event: " not in r.text[:0]
        # the open agent needs no key
        r = await http.post(f"{served.url}/a2a/open/message:send", json=msg10("free"))
        assert r.status_code == 200


async def rpc(http: httpx.AsyncClient, url: str, key: str, method: str, params: Any) -> Any:
    r = await http.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={**V10, "X-API-Key": key},
    )
    assert r.status_code == 200, r.text
    return r.json()


async def test_a_caller_cannot_see_or_touch_anothers_task(served: LiveServer) -> None:
    alice = await new_key(served.hub, agents=["pizza"], principal="alice")
    bob = await new_key(served.hub, agents=["pizza"], principal="bob")
    reader = await new_key(served.hub, agents=["pizza"], principal="ops", scopes=["read-all"])
    url = f"{served.url}/a2a/pizza"
    async with httpx.AsyncClient(timeout=30) as http:
        task = (await rpc(http, url, alice, "SendMessage", msg10("pizza")))["result"]["task"]
        tid = task["id"]
        unknown = "no-such-task"

        async def both(method: str, params: dict[str, Any], other: dict[str, Any]) -> None:
            mine = await rpc(http, url, bob, method, params)
            none = await rpc(http, url, bob, method, other)
            assert "error" in mine, mine
            assert mine["error"]["code"] == none["error"]["code"]
            assert mine["error"]["data"][0]["reason"] == none["error"]["data"][0]["reason"]

        await both("GetTask", {"id": tid}, {"id": unknown})
        await both("CancelTask", {"id": tid}, {"id": unknown})
        await both(
            "SendMessage",
            msg10("margherita", taskId=tid, contextId=task["contextId"]),
            msg10("margherita", taskId=unknown, contextId=task["contextId"]),
        )
        # subscribe (SSE): bob gets the same error as for an unknown task
        streams = []
        for some in (tid, unknown):
            r = await http.post(url + f"/tasks/{some}:subscribe", headers={"X-API-Key": bob})
            streams.append((r.status_code, r.json()["error"]["details"][0]["reason"]))
        assert streams[0] == streams[1] and streams[0][0] == 404
        listed = (await rpc(http, url, bob, "ListTasks", {}))["result"]["tasks"]
        assert listed == []
        assert [
            t["id"] for t in (await rpc(http, url, alice, "ListTasks", {}))["result"]["tasks"]
        ] == [tid]
        assert (await rpc(http, url, reader, "GetTask", {"id": tid}))["result"]["id"] == tid
        # alice continues her own task
        done = await rpc(http, url, alice, "SendMessage", msg10("funghi", taskId=tid))
        assert "result" in done, done


async def test_scopes_invoke_read_all_and_admin_are_distinct(served: LiveServer) -> None:
    """invoke: call the agent, see its own tasks; read-all: see every task, call nothing;
    admin: both, and the admin API (which an invoke or read-all key cannot use)."""
    alice = await new_key(served.hub, agents=["slow"], principal="alice")
    reader = await new_key(served.hub, agents=["slow"], principal="ops", scopes=["read-all"])
    root = await new_key(served.hub, principal="root", scopes=["admin"])
    url = f"{served.url}/a2a/slow"
    immediately = {"configuration": {"returnImmediately": True}}
    async with httpx.AsyncClient(timeout=30) as http:
        task = (await rpc(http, url, alice, "SendMessage", msg10("go") | immediately))["result"]
        tid = task["task"]["id"]
        # read-all reads every task of its agents ...
        assert (await rpc(http, url, reader, "GetTask", {"id": tid}))["result"]["id"] == tid
        listed = (await rpc(http, url, reader, "ListTasks", {}))["result"]["tasks"]
        assert [t["id"] for t in listed] == [tid]
        # ... but may not call the agent: 403-equivalent on every way in
        for method, params in (
            ("SendMessage", msg10("mine")),
            ("SendMessage", msg10("more", taskId=tid)),
            ("CancelTask", {"id": tid}),
            (
                "CreateTaskPushNotificationConfig",
                {"taskId": tid, "url": "https://example.com/hook"},
            ),
        ):
            refused = await rpc(http, url, reader, method, params)
            assert refused["error"]["data"][0]["reason"] == "PERMISSION_DENIED", (method, refused)
        r = await http.post(f"{url}/message:send", json=msg10("x"), headers={"X-API-Key": reader})
        assert r.status_code == 403 and "invoke" in r.json()["error"]["message"]
        r = await http.post(f"{url}/message:stream", json=msg10("x"), headers={"X-API-Key": reader})
        assert r.status_code == 403
        # invoke and read-all keys cannot use the admin API; admin can, and may invoke
        for key in (alice, reader):
            r = await http.get(f"{served.url}/admin/v1/keys", headers={"X-API-Key": key})
            assert r.status_code == 403
        r = await http.get(f"{served.url}/admin/v1/keys", headers={"X-API-Key": root})
        assert r.status_code == 200
        assert (await rpc(http, url, root, "GetTask", {"id": tid}))["result"]["id"] == tid
        canceled = await rpc(http, url, root, "CancelTask", {"id": tid})
        assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        # the task was untouched by the refused calls: only alice's message, then canceled
        said = [m["parts"][0]["text"] for m in canceled["result"]["history"]]
        assert [m for m in canceled["result"]["history"] if m["role"] == "ROLE_USER"] == [
            canceled["result"]["history"][0]
        ] and said[0] == "go"


async def test_revoked_or_expired_key_stops(
    served: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    registry = served.hub.registry
    assert registry is not None
    key, info = await registry.create_key(agents=["locked"], name="ci")
    short, _ = await registry.create_key(agents=["locked"], expires_in=0.5)
    url = f"{served.url}/a2a/locked/message:send"
    async with httpx.AsyncClient(timeout=30) as http:
        assert (
            await http.post(url, json=msg10("a"), headers={"X-API-Key": key})
        ).status_code == 200
        await registry.revoke_key(info.id)
        served.hub.authenticator.forget()  # type: ignore[union-attr]  (this process: at once)
        r = await http.post(url, json=msg10("b"), headers={"X-API-Key": key})
        assert r.status_code == 401 and "revoked" in r.json()["error"]["message"]
        r = await eventually(
            lambda: http.post(url, json=msg10("c"), headers={"X-API-Key": short}),
            lambda r: r.status_code != 200,
        )
        assert r.status_code == 401 and "expired" in r.json()["error"]["message"]
    # the key is never stored or logged
    for path in Path(registry.url.removeprefix("sqlite:///")).parent.iterdir():
        data = path.read_bytes()
        assert key.encode() not in data and short.encode() not in data
        assert key[5:20].encode() not in data
    assert key not in caplog.text and short not in caplog.text


async def test_revocation_reaches_every_instance_sharing_a_pg_registry(
    tmp_path: Path, pg_registry: str
) -> None:
    a = make_hub(tmp_path, registry=pg_registry)
    b = make_hub(tmp_path, registry=pg_registry)
    async with LiveServer(a) as one, LiveServer(b) as two, httpx.AsyncClient(timeout=30) as http:
        assert a.registry is not None
        key, info = await a.registry.create_key(agents=["locked"])
        for server in (one, two):
            r = await http.post(
                f"{server.url}/a2a/locked/message:send", json=msg10("x"), headers={"X-API-Key": key}
            )
            assert r.status_code == 200
        await a.registry.revoke_key(info.id)
        # within auth.cache_seconds (1 s) on the other instance; polled, not timed
        for server in (one, two):
            target = f"{server.url}/a2a/locked/message:send"
            r = await eventually(
                lambda: http.post(target, json=msg10("y"), headers={"X-API-Key": key}),  # noqa: B023
                lambda r: r.status_code != 200,
            )
            assert r.status_code == 401


async def test_agent_added_on_one_instance_answers_on_the_other(
    tmp_path: Path, pg_registry: str
) -> None:
    a = make_hub(tmp_path, registry=pg_registry)
    b = make_hub(tmp_path, registry=pg_registry)
    async with LiveServer(a) as _one, LiveServer(b) as two, httpx.AsyncClient(timeout=30) as http:
        assert a.registry is not None
        await a.registry.put_agent(AgentSpec(id="fresh", kind="echo"))
        url = f"{two.url}/a2a/fresh/message:send"
        r = await eventually(
            lambda: http.post(url, json=msg10("hello")), lambda r: r.status_code != 404
        )
        assert r.status_code == 200, r.text
        assert await a.registry.delete_agent("fresh")
        r = await eventually(
            lambda: http.post(url, json=msg10("bye")), lambda r: r.status_code != 200
        )
        assert r.status_code == 404


@pytest.fixture
async def pg_registry() -> AsyncIterator[str]:
    url = POSTGRES_URL
    registry = Registry(url)
    try:
        await registry.open()
    except Exception as exc:
        missing_service(f"PostgreSQL unavailable: {exc}")
    from sqlalchemy import delete

    from a2a_hub.registry.schema import agents, api_keys

    async with registry.engine.begin() as conn:
        await conn.execute(delete(api_keys))
        await conn.execute(delete(agents))
    await registry.close()
    yield url


async def test_official_sdk_client_with_an_api_key(served: LiveServer) -> None:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.helpers import get_artifact_text, new_text_message
    from a2a.types.a2a_pb2 import Role, SendMessageRequest

    key = await new_key(served.hub, agents=["locked"])
    base = f"{served.url}/a2a/locked"
    async with httpx.AsyncClient(timeout=30, headers={"X-API-Key": key}) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        assert "apiKey" in card.security_schemes
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        request = SendMessageRequest(message=new_text_message("hello sdk", role=Role.ROLE_USER))
        events = [e async for e in client.send_message(request)]
        task = events[-1].task if events[-1].HasField("task") else events[-1]
        assert "hello sdk" in "".join(get_artifact_text(a) for a in task.artifacts)
    async with httpx.AsyncClient(timeout=30) as http:
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 401
            _ = [e async for e in client.send_message(request)]


def test_parse_agent_spec_takes_auth_out_of_the_options() -> None:
    spec = AgentSpec.parse("secret=echo?auth=api-key&reply=message")
    assert spec.auth == "api-key" and spec.options == {"reply": "message"}


async def test_admin_api(served: LiveServer) -> None:
    admin_url = f"{served.url}/admin/v1"
    plain = await new_key(served.hub, agents=["locked"])
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.get(admin_url + "/agents")
        assert r.status_code == 401 and "www-authenticate" in r.headers
        assert r.json()["error"]["details"][0]["reason"] == "UNAUTHENTICATED"
        # a POST at the admin API's root is no JSON-RPC call: the same HTTP+JSON refusal
        r = await http.post(admin_url + "/", json={}, headers={"X-API-Key": "a2ah_nope"})
        assert r.status_code == 401 and "www-authenticate" in r.headers
        assert r.json()["error"]["details"][0]["reason"] == "UNAUTHENTICATED"
        r = await http.get(admin_url + "/agents", headers={"X-API-Key": plain})
        assert r.status_code == 403
        root = await new_key(served.hub, name="root", scopes=["admin"])
        auth = {"Authorization": f"Bearer {root}"}
        ids = [
            a["id"] for a in (await http.get(admin_url + "/agents", headers=auth)).json()["agents"]
        ]
        assert {"locked", "open", "pizza"} <= set(ids)
        # agents: create answers at once here, remove stops it
        r = await http.post(
            admin_url + "/agents",
            json={"id": "made", "kind": "echo", "auth": "api-key", "options": {"reply": "message"}},
            headers=auth,
        )
        assert r.status_code == 201, r.text
        assert r.json()["hosted"] is True
        r = await http.post(admin_url + "/agents", json={"id": "bad", "kind": "nope"}, headers=auth)
        assert r.status_code == 400 and "unknown kind" in r.json()["error"]["message"]
        made = await http.post(
            f"{served.url}/a2a/made/message:send", json=msg10("hi"), headers=auth
        )
        assert made.status_code == 200 and "hi" in made.json()["message"]["parts"][0]["text"]
        # keys: create, list (no key material), revoke
        r = await http.post(
            admin_url + "/keys",
            json={"agents": ["made"], "name": "made-bot", "expires": "1d"},
            headers=auth,
        )
        assert r.status_code == 201
        created = r.json()
        assert created["key"].startswith("a2ah_") and created["agents"] == ["made"]
        listed = (await http.get(admin_url + "/keys", headers=auth)).text
        assert created["key"] not in listed and created["id"] in listed
        ok = await http.post(
            f"{served.url}/a2a/made/message:send",
            json=msg10("x"),
            headers={"X-API-Key": created["key"]},
        )
        assert ok.status_code == 200
        assert (await http.delete(admin_url + f"/keys/{created['id']}", headers=auth)).json()[
            "revokedAt"
        ]
        gone = await http.post(
            f"{served.url}/a2a/made/message:send",
            json=msg10("y"),
            headers={"X-API-Key": created["key"]},
        )
        assert gone.status_code == 401
        # tasks: search and delete
        pizza = await http.post(
            f"{served.url}/a2a/pizza/message:send",
            json=msg10("pizza"),
            headers={"X-API-Key": await new_key(served.hub, agents=["pizza"], principal="carol")},
        )
        tid = pizza.json()["task"]["id"]
        found = (
            await http.get(
                admin_url + "/tasks", params={"agent": "pizza", "owner": "carol"}, headers=auth
            )
        ).json()
        assert [t["id"] for t in found["tasks"]] == [tid]
        none = (
            await http.get(
                admin_url + "/tasks", params={"agent": "pizza", "owner": "dave"}, headers=auth
            )
        ).json()
        assert none["tasks"] == []
        assert (
            await http.delete(admin_url + f"/tasks/pizza/{tid}", headers=auth)
        ).status_code == 200
        assert (
            await http.delete(admin_url + f"/tasks/pizza/{tid}", headers=auth)
        ).status_code == 404
        # MCP servers
        r = await http.post(
            admin_url + "/mcp-servers",
            json={"name": "files", "transport": "stdio", "command": ["mcp-files", "--ro"]},
            headers=auth,
        )
        assert r.status_code == 201
        r = await http.post(
            admin_url + "/mcp-servers",
            json={"name": "sh", "transport": "stdio", "command": ["touch", "/tmp/x"]},
            headers=auth,
        )
        assert r.status_code == 400 and "admin_allow_commands" in r.json()["error"]["message"]
        r = await http.put(
            admin_url + "/mcp-servers/web",
            json={"transport": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
            headers=auth,
        )
        assert r.status_code == 200
        names = [
            s["name"]
            for s in (await http.get(admin_url + "/mcp-servers", headers=auth)).json()["mcpServers"]
        ]
        assert names == ["files", "web"]
        bad = await http.post(
            admin_url + "/mcp-servers", json={"name": "x", "transport": "stdio"}, headers=auth
        )
        assert bad.status_code == 400
        assert (
            await http.delete(admin_url + "/mcp-servers/files", headers=auth)
        ).status_code == 200
        assert (await http.get(admin_url + "/mcp-servers/files", headers=auth)).status_code == 404
        # delete the agent: it stops answering here at once
        assert (await http.delete(admin_url + "/agents/made", headers=auth)).status_code == 200
        r = await http.post(f"{served.url}/a2a/made/message:send", json=msg10("z"), headers=auth)
        assert r.status_code == 404


async def test_admin_api_is_off_without_a_registry(live: LiveServer) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.get(f"{live.url}/admin/v1/agents", headers={"X-API-Key": "a2ah_x"})
        assert r.status_code == 404 and "off" in r.json()["error"]["message"]


def test_keys_cli_creates_lists_and_revokes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from a2a_hub.cli import app

    url = f"sqlite:///{tmp_path}/reg.db"
    runner = CliRunner()
    made = runner.invoke(
        app,
        [
            "keys",
            "create",
            "--agent",
            "echo",
            "--name",
            "ci",
            "--expires",
            "30d",
            "--registry",
            url,
        ],
    )
    assert made.exit_code == 0, made.output
    key = made.stdout.strip().splitlines()[0]
    assert key.startswith("a2ah_")
    listed = runner.invoke(app, ["keys", "list", "--json", "--registry", url])
    assert listed.exit_code == 0 and key not in listed.stdout
    entry = msgspec_json(listed.stdout)[0]
    assert entry["principal"] == "ci" and entry["agents"] == ["echo"] and entry["expiresAt"]
    gone = runner.invoke(app, ["keys", "revoke", entry["id"], "--registry", url])
    assert gone.exit_code == 0, gone.output
    again = msgspec_json(runner.invoke(app, ["keys", "list", "--json", "--registry", url]).stdout)
    assert again[0]["revokedAt"]
    assert runner.invoke(app, ["keys", "create", "--registry", url]).exit_code == 2
    added = runner.invoke(app, ["agents", "add", "helper=echo?auth=api-key", "--registry", url])
    assert added.exit_code == 0, added.output
    shown = runner.invoke(app, ["agents", "list", "--registry", url])
    assert "helper" in shown.stdout and "auth=api-key" in shown.stdout
    assert runner.invoke(app, ["agents", "remove", "helper", "--registry", url]).exit_code == 0
    assert runner.invoke(app, ["agents", "remove", "helper", "--registry", url]).exit_code == 1


def msgspec_json(text: str) -> Any:
    import json

    return json.loads(text)


async def test_extended_card_for_authenticated_callers(tmp_path: Path) -> None:
    skill = {"id": "secret-sauce", "name": "Secret sauce", "description": "only for friends"}
    settings = Settings.from_flat(
        agents=[
            AgentSpec(id="ext", kind="echo", extended_skills=[skill]),
            AgentSpec(id="plain", kind="echo", auth="api-key"),
        ],
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
    )
    hub = Hub(settings, store=MemoryStore())
    async with LiveServer(hub) as server, httpx.AsyncClient(timeout=30) as http:
        key = await new_key(hub)
        ext = f"{server.url}/a2a/ext"
        public = (await http.get(ext + "/.well-known/agent-card.json")).json()
        assert public["capabilities"]["extendedAgentCard"] is True
        assert public["supportsAuthenticatedExtendedCard"] is True
        assert "secret-sauce" not in [s["id"] for s in public["skills"]]
        plain = (await http.get(f"{server.url}/a2a/plain/.well-known/agent-card.json")).json()
        assert not plain["capabilities"].get("extendedAgentCard")
        # REST: 401 without a key, the card with one
        r = await http.get(ext + "/extendedAgentCard")
        assert r.status_code == 401
        r = await http.get(ext + "/extendedAgentCard", headers={"X-API-Key": key})
        assert "secret-sauce" in [s["id"] for s in r.json()["skills"]]
        # JSON-RPC 1.0 and 0.3
        for method, version in (
            ("GetExtendedAgentCard", "1.0"),
            ("agent/getAuthenticatedExtendedCard", "0.3"),
        ):
            body = {"jsonrpc": "2.0", "id": 1, "method": method}
            refused = await http.post(ext, json=body, headers={"A2A-Version": version})
            assert refused.status_code == 401
            assert refused.headers["WWW-Authenticate"].startswith("Bearer")
            anon = refused.json()
            assert "for authenticated callers" in anon["error"]["message"]
            card = (
                await http.post(ext, json=body, headers={"A2A-Version": version, "X-API-Key": key})
            ).json()["result"]
            assert "secret-sauce" in [s["id"] for s in card["skills"]]
            none = (
                await http.post(
                    f"{server.url}/a2a/plain",
                    json=body,
                    headers={"A2A-Version": version, "X-API-Key": key},
                )
            ).json()
            assert none["error"]["code"] == -32007


async def test_conversations_keep_every_message_once_for_their_owner(served: LiveServer) -> None:
    hub = served.hub
    alice = await new_key(hub, agents=["pizza", "chat"], principal="alice")
    bob = await new_key(hub, agents=["pizza", "chat"], principal="bob")
    root = await new_key(hub, scopes=["admin"])
    async with httpx.AsyncClient(timeout=30) as http:
        a = {"X-API-Key": alice}
        url = f"{served.url}/a2a/pizza"
        first = (
            await http.post(url + "/message:send", json=msg10("pizza", contextId="c1"), headers=a)
        ).json()["task"]
        await http.post(
            url + "/message:send",
            json=msg10("funghi", taskId=first["id"], contextId="c1"),
            headers=a,
        )
        # an immediate reply (echo answers with a message) is kept too, with its question
        chat = f"{served.url}/a2a/chat"
        await http.post(
            f"{served.url}/a2a/open/message:send", json=msg10("unrelated", contextId="c1")
        )

        async def history(agent_url: str, headers: dict[str, str], **params: Any) -> Any:
            return await http.get(
                agent_url + "/contexts/c1/messages", headers=headers, params=params
            )

        r = await eventually(
            lambda: history(url, a),
            lambda r: r.status_code == 200 and len(r.json()["messages"]) >= 4,
        )
        texts = [m["parts"][0]["text"] for m in r.json()["messages"]]
        assert texts[0] == "pizza" and texts[2] == "funghi", texts
        assert len(texts) == len({m["messageId"] for m in r.json()["messages"]})
        roles = [m["role"] for m in r.json()["messages"]]
        assert roles[:2] == ["ROLE_USER", "ROLE_AGENT"]
        # paged
        page = (await history(url, a, pageSize=2)).json()
        assert len(page["messages"]) == 2 and page["nextPageToken"]
        rest = (await history(url, a, pageToken=page["nextPageToken"])).json()["messages"]
        assert [m["messageId"] for m in page["messages"] + rest] == [
            m["messageId"] for m in r.json()["messages"]
        ]
        # bob: the same answer as for an unknown conversation
        theirs = await history(url, {"X-API-Key": bob})
        unknown = await http.get(url + "/contexts/nope/messages", headers={"X-API-Key": bob})
        assert theirs.status_code == unknown.status_code == 404
        assert theirs.json()["error"]["details"] == [
            {**d, "metadata": d["metadata"]} for d in unknown.json()["error"]["details"]
        ]
        # immediate replies
        await http.post(chat + "/message:send", json=msg10("ping", contextId="c1"), headers=a)
        r = await eventually(
            lambda: history(chat, a),
            lambda r: r.status_code == 200 and len(r.json()["messages"]) == 2,
        )
        assert [m["role"] for m in r.json()["messages"]] == ["ROLE_USER", "ROLE_AGENT"]
        assert r.json()["messages"][0]["parts"][0]["text"] == "ping"
        # admin
        adm = {"X-API-Key": root}
        listed = (await http.get(f"{served.url}/admin/v1/conversations", headers=adm)).json()
        assert {("pizza", "c1"), ("chat", "c1")} <= {
            (c["agentId"], c["contextId"]) for c in listed["conversations"]
        }
        full = (
            await http.get(f"{served.url}/admin/v1/conversations/pizza/c1/messages", headers=adm)
        ).json()
        assert full["owner"] == "alice" and len(full["messages"]) >= 4


async def test_another_caller_cannot_write_into_a_conversation(served: LiveServer) -> None:
    """Issue 30 item 11: bob sending with alice's context id starts his own task there;
    nothing of his ever appears in alice's conversation (what an llm agent reads for her)."""
    hub = served.hub
    alice = {"X-API-Key": await new_key(hub, agents=["chat", "pizza"], principal="alice")}
    bob = {"X-API-Key": await new_key(hub, agents=["chat", "pizza"], principal="bob")}
    async with httpx.AsyncClient(timeout=30) as http:
        for agent in ("chat", "pizza"):  # an immediate reply, and a task
            url = f"{served.url}/a2a/{agent}"
            r = await http.post(url + "/message:send", json=msg10("mine", contextId="cx"),
                                headers=alice)  # fmt: skip
            assert r.status_code == 200, r.text

            async def history(headers: dict[str, str], url: str = url) -> httpx.Response:
                return await http.get(url + "/contexts/cx/messages", headers=headers)

            await eventually(
                lambda: history(alice),
                lambda r: r.status_code == 200 and len(r.json()["messages"]) >= 2,
            )
            r = await http.post(url + "/message:send", json=msg10("intruder", contextId="cx"),
                                headers=bob)  # fmt: skip
            assert r.status_code == 200, r.text
            # bob's own message is answered; a later message of alice's is recorded after it
            await http.post(url + "/message:send", json=msg10("later", contextId="cx"),
                            headers=alice)  # fmt: skip
            r = await eventually(
                lambda: history(alice),
                lambda r: "later" in str(r.json()),
            )
            texts = [p.get("text") for m in r.json()["messages"] for p in m["parts"]]
            assert "intruder" not in str(texts), texts
            owner_tail = await hub.links.conversations(agent, "cx", "alice", 50)
            assert owner_tail is not None
            assert all("intruder" not in str(m.parts) for m in owner_tail)


def _masked(text: str, *ids: str) -> str:
    """An answer (JSON or SSE text) with what differs from request to request by design
    (the ids the caller chose, generated ids, times) replaced, to compare two answers."""
    for value in ids:
        text = text.replace(value, "<id>")
    return re.sub(r'"(sessionId|contextId|messageId|timestamp)":\s*"[^"]*"', r'"\1":"<x>"', text)


async def test_01_sends_with_another_callers_task_id_answer_as_for_a_new_id(
    served: LiveServer,
) -> None:
    """Issue 30 item 12: tasks/send and tasks/sendSubscribe naming bob's task id answer
    alice exactly as an id that never existed (her own new task, shown with the id she
    chose); bob's task is untouched, and each sees only their own under that id."""
    hub = served.hub
    alice = {"X-API-Key": await new_key(hub, agents=["pizza"], principal="alice")}
    bob = {"X-API-Key": await new_key(hub, agents=["pizza"], principal="bob")}
    url = f"{served.url}/a2a/pizza"

    def body(method: str, task_id: str, text: str) -> dict[str, Any]:
        message = {"role": "user", "parts": [{"type": "text", "text": text}]}
        return {"jsonrpc": "2.0", "id": 1, "method": method,
                "params": {"id": task_id, "message": message}}  # fmt: skip

    async with httpx.AsyncClient(timeout=30) as http:
        for method, taken_id in (("tasks/send", "bobs"), ("tasks/sendSubscribe", "bobs2")):
            r = await http.post(url, json=body("tasks/send", taken_id, "pizza"), headers=bob)
            assert r.json()["result"]["status"]["state"] == "input-required"
            fresh_id = f"never-{taken_id}"
            taken = await http.post(url, json=body(method, taken_id, "salami"), headers=alice)
            fresh = await http.post(url, json=body(method, fresh_id, "salami"), headers=alice)
            assert taken.status_code == fresh.status_code == 200
            assert "error" not in taken.text
            assert _masked(taken.text, taken_id) == _masked(fresh.text, fresh_id), (
                taken.text,
                fresh.text,
            )
        # alice's own task under that id: her history, her answer; bob's untouched
        mine = await http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                                          "params": {"id": "bobs"}}, headers=alice)  # fmt: skip
        texts = [p["text"] for m in mine.json()["result"]["history"] for p in m["parts"]]
        assert mine.json()["result"]["id"] == "bobs" and "pizza" not in texts, texts
        theirs = await http.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
                                            "params": {"id": "bobs"}}, headers=bob)  # fmt: skip
        texts = [p["text"] for m in theirs.json()["result"]["history"] for p in m["parts"]]
        assert texts == ["pizza", "What kind of pizza?"], texts
        # bob continues his own task as before
        r = await http.post(url, json=body("tasks/send", "bobs", "funghi"), headers=bob)
        assert r.json()["result"]["status"]["state"] == "completed", r.text


async def test_keys_and_agents_cli_through_the_admin_api(served: LiveServer) -> None:
    from typer.testing import CliRunner

    from a2a_hub.cli import app

    root = await new_key(served.hub, scopes=["admin"])
    runner = CliRunner()

    def cli(*args: str) -> Any:
        return asyncio.to_thread(
            runner.invoke, app, [*args, "--url", served.url, "--admin-key", root]
        )

    made = await cli("keys", "create", "--agent", "locked", "--principal", "eve", "--json")
    assert made.exit_code == 0, made.output
    created = msgspec_json(made.stdout)
    assert created["key"].startswith("a2ah_") and created["principal"] == "eve"
    listed = await cli("keys", "list")
    assert created["id"] in listed.stdout and created["key"] not in listed.stdout
    assert (await cli("keys", "revoke", created["id"])).exit_code == 0
    assert (await cli("agents", "add", "viacli=echo?reply=message")).exit_code == 0
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.post(f"{served.url}/a2a/viacli/message:send", json=msg10("hey"))
        assert r.status_code == 200 and "message" in r.json()
    assert "viacli" in (await cli("agents", "list")).stdout
    assert (await cli("agents", "remove", "viacli")).exit_code == 0
    bad = await asyncio.to_thread(
        runner.invoke, app, ["keys", "list", "--url", served.url, "--admin-key", "a2ah_bad"]
    )
    assert bad.exit_code == 1 and "Unknown API key" in bad.output


async def test_a_generated_secret_leaves_the_registry_file_private(tmp_path: Path) -> None:
    registry = Registry(f"sqlite:///{tmp_path}/reg.db")
    await registry.open()
    try:
        key, _ = await registry.create_key()
        assert (await registry.lookup_key(key)) is not None
        assert await registry.lookup_key(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    finally:
        await registry.close()
    assert (tmp_path / "reg.db").stat().st_mode & 0o077 == 0


async def test_require_keys_locks_every_agent_and_the_registry_survives_restarts(
    tmp_path: Path,
) -> None:
    registry = f"sqlite:///{tmp_path}/registry.db"

    def hub() -> Hub:
        settings = Settings.from_flat(
            agents=[AgentSpec(id="plain", kind="echo")],
            store="memory://",
            registry=registry,
            auth_require_keys=True,
        )
        return Hub(settings, store=MemoryStore())

    first = hub()
    assert not first.auth.open
    async with LiveServer(first) as server, httpx.AsyncClient(timeout=30) as http:
        r = await http.post(f"{server.url}/a2a/plain/message:send", json=msg10("x"))
        assert r.status_code == 401
        key = await new_key(first)
        assert first.registry is not None
        await first.registry.put_agent(AgentSpec(id="later", kind="echo"))
    second = hub()
    async with LiveServer(second) as server, httpx.AsyncClient(timeout=30) as http:
        assert "later" in second.agents  # read back from the registry at start
        for agent in ("plain", "later"):
            r = await http.post(
                f"{server.url}/a2a/{agent}/message:send",
                json=msg10("x"),
                headers={"X-API-Key": key},
            )
            assert r.status_code == 200, r.text
