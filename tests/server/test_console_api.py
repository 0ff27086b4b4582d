"""The console's server side without a browser: its files, ``--no-ui``, ``/ui/api`` (who
sees what), the agent-wide feed over SSE, a task's deliveries, the admin API's dead
deliveries, and the inspector's card checks (schema, signatures, bad input)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc.jwk import OKPKey

from a2a_hub import AgentSpec, Hub, Settings, create_app
from a2a_hub.server import sse
from a2a_hub.server.console.cardcheck import schema_findings, sign_card, signature_findings
from a2a_hub.stores.base import Delivery
from tests.support.agents import Ticker
from tests.support.hub import LiveServer, make_hub

STATIC = Path(__file__).resolve().parents[2] / "src/a2a_hub/server/console/static"
V10 = {"A2A-Version": "1.0"}


@pytest.fixture
async def keyed(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Hub, dict[str, str]]]:
    """A hub with keys (one public agent, one that needs a key) and an in-process client;
    keys of an admin, of bob and of a key limited to the public agent."""
    settings = Settings.from_flat(
        agents=[
            AgentSpec(id="echo", kind="echo"),
            AgentSpec(id="locked", kind="echo", auth="api-key"),
        ],
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
        trusted_hosts=["h"],
    )
    hub = Hub(settings)
    await hub.start()
    registry = hub.registry
    assert registry is not None
    keys = {
        "admin": (await registry.create_key(principal="root", scopes=["admin"]))[0],
        "bob": (await registry.create_key(principal="bob", scopes=["invoke"]))[0],
        "echo-only": (await registry.create_key(principal="eve", agents=["echo"]))[0],
    }
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://h") as client:
        yield client, hub, keys
    await hub.close()


def key(k: str) -> dict[str, str]:
    return {"X-API-Key": k}


async def test_the_page_and_its_files_use_relative_urls_only(client: httpx.AsyncClient) -> None:
    page = await client.get("/ui")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    refs = re.findall(r'(?:src|href)="([^"]*)"', page.text)
    assert refs and all(not r.startswith(("/", "http")) for r in refs)  # behind any prefix
    for name in sorted(p.name for p in STATIC.iterdir() if p.suffix in (".js", ".css")):
        answer = await client.get(f"/ui/{name}")
        assert answer.status_code == 200, name
        if name.endswith(".js"):
            assert "javascript" in answer.headers["content-type"]
            # every URL the scripts call is relative to the page: no leading slash, no host
            called = re.findall(r'(?:api|sse|fetch)\(\s*[`"]([^`"]*)', answer.text)
            assert all(not c.startswith(("/", "http")) for c in called), (name, called)
            assert "localStorage." not in answer.text  # secrets stay in the session
    assert (await client.get("/ui/nothing.js")).status_code == 404
    assert (await client.get("/ui/index.html")).status_code == 404
    slash = await client.get("/ui/", follow_redirects=False)
    assert slash.status_code == 307 and slash.headers["location"] == "../ui"


async def test_no_ui_leaves_the_console_out() -> None:
    hub = make_hub({"echo": "echo"}, ui=False)
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://h") as client:
        assert (await client.get("/ui")).status_code == 404
        assert (await client.get("/ui/api/session")).status_code == 404
        assert (await client.get("/ui/app.js")).status_code == 404


async def test_who_sees_which_agents_and_tasks(
    keyed: tuple[httpx.AsyncClient, Hub, dict[str, str]],
) -> None:
    client, _, keys = keyed
    anonymous = (await client.get("/ui/api/session")).json()
    assert anonymous["principal"] is None and not anonymous["tasks"] and not anonymous["admin"]
    agents = (await client.get("/ui/api/agents")).json()["agents"]
    assert [a["id"] for a in agents] == ["echo"] and agents[0]["counts"] is None
    for path in ("/ui/api/feed", "/ui/api/conversations", "/ui/api/tasks/echo/x/deliveries"):
        assert (await client.get(path)).status_code == 401, path
    inspect = await client.post("/ui/api/inspect", json={"url": "https://example.org"})
    assert inspect.status_code == 401
    assert (await client.get("/ui/api/session", headers=key("nonsense"))).status_code == 401

    bob = (await client.get("/ui/api/session", headers=key(keys["bob"]))).json()
    assert bob["principal"] == "bob" and bob["tasks"] and not bob["admin"]
    agents = (await client.get("/ui/api/agents", headers=key(keys["bob"]))).json()["agents"]
    assert [a["id"] for a in agents] == ["echo", "locked"]
    assert agents[1]["requiresKey"] and agents[1]["counts"]["completed"] == 0
    limited = (await client.get("/ui/api/agents", headers=key(keys["echo-only"]))).json()
    assert [a["id"] for a in limited["agents"]] == ["echo"]
    admin = (await client.get("/ui/api/session", headers=key(keys["admin"]))).json()
    assert admin["admin"]


async def test_task_counts_and_deliveries_follow_the_caller(
    keyed: tuple[httpx.AsyncClient, Hub, dict[str, str]],
) -> None:
    client, hub, keys = keyed
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "x"}]}},
    }
    answer = await client.post("/a2a/locked", json=body, headers={**V10, **key(keys["bob"])})
    task_id = answer.json()["result"]["task"]["id"]
    await hub.store.add_deliveries(
        [Delivery(agent_id="locked", task_id=task_id, config_id="c", seq=2, last_error="")]
    )
    agents = (await client.get("/ui/api/agents", headers=key(keys["bob"]))).json()["agents"]
    assert agents[1]["counts"]["completed"] == 1
    mine = await client.get(f"/ui/api/tasks/locked/{task_id}/deliveries", headers=key(keys["bob"]))
    assert mine.status_code == 200
    found = mine.json()
    assert [d["seq"] for d in found["pending"]] == [2] and found["dead"] == []
    other = await client.get(
        f"/ui/api/tasks/locked/{task_id}/deliveries", headers=key(keys["echo-only"])
    )
    assert other.status_code == 404  # eve's key does not open the agent: not found


async def test_admin_lists_and_requeues_dead_deliveries(
    keyed: tuple[httpx.AsyncClient, Hub, dict[str, str]],
) -> None:
    client, hub, keys = keyed
    dead = Delivery(agent_id="echo", task_id="t", config_id="c", seq=1)
    await hub.store.add_deliveries([dead])
    (claimed,) = await hub.store.claim_deliveries(10, 60)
    claimed.dead, claimed.attempts, claimed.last_error = True, 3, "HTTP 500"
    await hub.store.update_delivery(claimed)
    assert (await client.get("/admin/v1/push/dead", headers=key(keys["bob"]))).status_code == 403
    listed = (await client.get("/admin/v1/push/dead", headers=key(keys["admin"]))).json()
    (one,) = listed["deliveries"]
    assert one["id"] == dead.id and one["last_error"] == "HTTP 500" and one["attempts"] == 3
    bad = await client.get("/admin/v1/push/dead?limit=nan", headers=key(keys["admin"]))
    assert bad.status_code == 400
    requeue = "/admin/v1/push/dead:requeue"
    none = await client.post(requeue, json={"ids": ["other"]}, headers=key(keys["admin"]))
    assert none.json() == {"requeued": 0}
    done = await client.post(requeue, json={"ids": [dead.id]}, headers=key(keys["admin"]))
    assert done.json() == {"requeued": 1}
    assert (await client.get("/admin/v1/push/dead", headers=key(keys["admin"]))).json() == {
        "deliveries": []
    }


async def test_the_feed_streams_every_event_of_the_visible_tasks() -> None:
    hub = make_hub({"ticker": Ticker(ticks=3, interval=0.01), "echo": "echo"})
    async with LiveServer(hub) as live, httpx.AsyncClient(timeout=30) as client:
        frames: list[dict[str, Any]] = []
        ready = asyncio.Event()

        async def read() -> None:
            async with client.stream("GET", f"{live.url}/ui/api/feed?agent=ticker") as answer:
                assert answer.headers["content-type"].startswith("text/event-stream")
                event = ""
                async for line in answer.aiter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: ") and event == "ready":
                        ready.set()
                    elif line.startswith("data: ") and event == "task":
                        frames.append(json.loads(line[6:]))
                        if frames[-1]["state"] == "completed":
                            return

        reader = asyncio.ensure_future(read())
        async with asyncio.timeout(30):
            await ready.wait()
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {"messageId": "f1", "role": "ROLE_USER", "parts": [{"text": "x"}]}
            },
        }
        await client.post(f"{live.url}/a2a/echo", json=body, headers=V10)  # another agent
        await client.post(f"{live.url}/a2a/ticker", json=body, headers=V10)
        async with asyncio.timeout(30):
            await reader
    assert {f["agent"] for f in frames} == {"ticker"}
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    kinds = [f["kind"] for f in frames]
    assert kinds == ["task", "status", "artifact", "artifact", "artifact", "status"]
    assert frames[1]["state"] == "working" and "owner" not in frames[0]


def _card(**changes: Any) -> dict[str, Any]:
    card = {
        "name": "A",
        "description": "d",
        "version": "1",
        "supportedInterfaces": [
            {"url": "https://a.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "d", "tags": []}],
    }
    card.update(changes)
    return {k: v for k, v in card.items() if v is not None}


def test_schema_findings_name_each_problem() -> None:
    assert [f.level for f in schema_findings(_card())] == ["ok"]
    found = schema_findings(_card(version=None, skills=[{"id": "s"}]))
    texts = [f.message for f in found if f.level == "error"]
    assert any("'version' is a required property" in t for t in texts)
    assert any(t.startswith("skills/0:") and "'name'" in t for t in texts)
    scheme = {"apiKey": {"type": "apiKey", "in": "header", "name": "X"}}  # the 0.3 form only
    assert any(
        f.level == "error" and f.message.startswith("securitySchemes/apiKey")
        for f in schema_findings(_card(securitySchemes=scheme))
    )
    old = {"name": "A", "url": "https://a.example", "protocolVersion": "0.3.0"}
    assert any(f.level == "info" and "0.3.0" in f.message for f in schema_findings(old))


async def test_signatures_verify_and_tampering_shows() -> None:
    good_key = OKPKey.generate_key("Ed25519", parameters={"kid": "k1"})
    other_key = OKPKey.generate_key("Ed25519", parameters={"kid": "k1"})
    jku = "https://keys.example/jwks.json"
    fetched: list[str] = []

    async def fetch(url: str) -> Any:
        fetched.append(url)
        return {"keys": [good_key.as_dict(private=False)]}

    def signed(card: dict[str, Any], with_key: OKPKey) -> dict[str, Any]:
        protected, _, signature = sign_card(card, with_key, kid="k1", jku=jku).split(".")
        return {**card, "signatures": [{"protected": protected, "signature": signature}]}

    card = signed(_card(), good_key)
    (ok,) = await signature_findings(card, fetch)
    assert ok.level == "ok" and "keys.example" in ok.message and fetched == [jku]
    (bad,) = await signature_findings({**card, "name": "B"}, fetch)
    assert bad.level == "error" and "does not verify" in bad.message
    (forged,) = await signature_findings(signed(_card(), other_key), fetch)
    assert forged.level == "error"
    (unsigned,) = await signature_findings(_card(), fetch)
    assert unsigned.level == "info"
    none_alg = {**card, "signatures": [{"protected": "eyJhbGciOiJub25lIn0", "signature": ""}]}
    (refused,) = await signature_findings(none_alg, fetch)
    assert refused.level == "error" and "'none'" in refused.message


async def test_the_inspector_refuses_private_addresses_without_an_allow_list() -> None:
    hub = make_hub({"echo": "echo"})  # no push_allow_hosts: 127.0.0.1 is refused
    async with LiveServer(hub) as live, httpx.AsyncClient() as client:
        local = f"https://127.0.0.1:{live.port}"
        found = (await client.post(f"{live.url}/ui/api/inspect", json={"url": local})).json()
        assert found["card"] is None and "loopback" in found["error"]
        plain = (await client.post(f"{live.url}/ui/api/inspect", json={"url": live.url})).json()
        assert "https" in plain["error"]
        call = {"url": f"{local}/a2a/echo", "body": {}}
        relayed = await client.post(f"{live.url}/ui/api/inspect/call", json=call)
        assert relayed.status_code == 502 and "loopback" in relayed.json()["error"]
        bad = await client.post(f"{live.url}/ui/api/inspect", json={"url": "file:///etc/passwd"})
        assert bad.status_code == 400 and "http" in bad.json()["error"]["message"]


async def test_the_feed_ends_when_the_instance_shuts_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """A console left open does not hold a shutdown up: its feed ends like every SSE stream
    (the page reconnects, to another instance behind a proxy)."""
    monkeypatch.setattr(sse, "_ending", False)  # end_streams() marks the process; undone after
    hub = make_hub({"echo": "echo"})
    async with (
        LiveServer(hub) as live,
        httpx.AsyncClient(timeout=30) as client,
        client.stream("GET", f"{live.url}/ui/api/feed") as answer,
    ):
        lines = answer.aiter_lines()
        async with asyncio.timeout(30):
            assert await anext(lines) == "event: ready"
            sse.end_streams()
            rest = [line async for line in lines]  # the response ends
    assert all(not line.startswith("event: task") for line in rest)
