"""Agent cards: 1.0 (+0.3 fields), legacy 0.1, ETags, root aliases."""

from __future__ import annotations

import httpx

from a2a_hub import create_app
from tests.support.hub import make_hub


async def test_card_lists_three_interfaces(client: httpx.AsyncClient) -> None:
    r = await client.get("/a2a/echo/.well-known/agent-card.json")
    assert r.status_code == 200
    card = r.json()
    base = "http://hub.test/a2a/echo"
    assert card["supportedInterfaces"] == [
        {"url": base, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": base, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    ]
    assert card["url"] == base and card["preferredTransport"] == "JSONRPC"
    assert card["protocolVersion"] == "0.3.0"
    assert card["name"] == "Echo" and card["skills"][0]["id"] == "echo"
    assert card["capabilities"]["pushNotifications"] is True
    assert r.headers["etag"].startswith('W/"') and "max-age" in r.headers["cache-control"]
    again = await client.get(
        "/a2a/echo/.well-known/agent-card.json", headers={"If-None-Match": r.headers["etag"]}
    )
    assert again.status_code == 304 and again.content == b""


async def test_legacy_card(client: httpx.AsyncClient) -> None:
    r = await client.get("/a2a/pizza/.well-known/agent.json")
    card = r.json()
    assert card["url"] == "http://hub.test/a2a/pizza" and card["name"] == "Pizza"
    assert "supportedInterfaces" not in card and "capabilities" in card
    assert r.headers["etag"]


async def test_unknown_agent_is_a_json_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/a2a/ghost/.well-known/agent-card.json")
    assert r.status_code == 404 and "ghost" in r.json()["error"]["message"]
    r = await client.post("/a2a/ghost", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"})
    assert r.status_code == 404 and r.json()["error"]["message"].startswith("No agent 'ghost'")


async def test_root_aliases_with_a_single_agent() -> None:
    hub = make_hub({"solo": "echo"})
    await hub.start()
    try:
        transport = httpx.ASGITransport(app=create_app(hub))
        async with httpx.AsyncClient(transport=transport, base_url="http://h") as c:
            card = (await c.get("/.well-known/agent-card.json")).json()
            assert card["url"] == "http://h"
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {
                    "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "root"}]}
                },
            }
            r = await c.post("/", json=body, headers={"A2A-Version": "1.0"})
            task = r.json()["result"]["task"]
            r = await c.get(f"/a2a/solo/tasks/{task['id']}")
            assert r.json()["id"] == task["id"]
            r = await c.post("/message:send", json=body["params"])
            assert r.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        await hub.close()


async def test_no_root_agent_when_several(client: httpx.AsyncClient) -> None:
    r = await client.get("/.well-known/agent-card.json")
    assert r.status_code == 404 and "--default-agent" in r.json()["error"]["message"]
    index = (await client.get("/")).json()
    assert {a["id"] for a in index["agents"]} == {"echo", "echo-msg", "pizza", "slow"}
