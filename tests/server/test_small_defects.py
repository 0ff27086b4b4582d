"""The small defects of issue 30, item 9, on the server side (each failed before its fix):
the id of a refused JSON-RPC request, the access log's task and agent, a JSON access log
under plain logging, the rate of outage lines, card URLs of ids with spaces, and --agent
options holding ',' and '&'."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.settings import load_settings
from tests.server.test_ops import Proxy, running, send_params
from tests.support.hub import make_hub


def rpc_send(text: str, request_id: Any = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "SendMessage",
            "params": send_params(text)}  # fmt: skip


async def test_a_refused_jsonrpc_request_is_answered_with_its_id(tmp_path: Path) -> None:
    settings = Settings.from_flat(
        agents=[AgentSpec(id="locked", kind="echo", auth="api-key")],
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
        trusted_hosts=["localhost"],
    )
    async with running(Hub(settings)) as c:
        for request_id in (7, "req-1"):
            r = await c.post("/a2a/locked", json=rpc_send("hi", request_id))
            assert r.status_code == 401
            assert r.json()["id"] == request_id, r.json()
        r = await c.post("/a2a/locked", content=b"{not json")
        assert r.status_code == 401 and r.json()["id"] is None  # unreadable: null, as before


async def test_the_access_log_names_the_task_a_send_made_and_the_root_alias_agent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="a2a_hub.access")
    hub = make_hub({"echo": "echo"}, default_agent="echo", access_log="json")
    async with running(hub) as c:
        made = (await c.post("/a2a/echo/message:send", json=send_params("x"))).json()
        rpc = (await c.post("/", json=rpc_send("y"))).json()
    rows = [json.loads(r.getMessage()) for r in caplog.records if r.name == "a2a_hub.access"]
    rest, root = rows[0], rows[1]
    assert rest["task_id"] == made["task"]["id"] and rest["agent"] == "echo"
    assert root["path"] == "/" and root["agent"] == "echo"
    assert root["task_id"] == rpc["result"]["task"]["id"]


def test_a_json_access_log_under_plain_logging_writes_bare_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from a2a_hub._logging import configure_logging

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("info", "plain", "json")
        logging.getLogger("a2a_hub.access").info(json.dumps({"method": "GET"}))
        logging.getLogger("a2a_hub.other").warning("plain line")
        err = capsys.readouterr().err.splitlines()
        assert err[0] == '{"method": "GET"}'
        assert err[1].endswith("WARNING a2a_hub.other: plain line")
    finally:
        root.handlers[:], _ = saved[0], root.setLevel(saved[1])
        logging.getLogger("a2a_hub.access").handlers[:] = []
        logging.getLogger("a2a_hub.access").propagate = True


async def test_a_store_outage_is_not_logged_every_second(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The README: one line when it starts, one every 30 s, one when it ends; the loops
    that retry every second (the signal channel, push claims) follow the same rule."""
    from tests.support.stores import PURGE_AT_EXIT, redis_test_url

    pytest.importorskip("redis")
    caplog.set_level(logging.WARNING)
    proxy = Proxy("127.0.0.1", 6379)
    await proxy.start()
    direct = redis_test_url()
    PURGE_AT_EXIT.append(direct)  # what the hub wrote there goes at the session's end
    url = direct.replace(":6379/", f":{proxy.port}/")
    settings = Settings.from_flat(store=url, agents=["echo"], trusted_hosts=["localhost"])
    try:
        async with running(Hub(settings)) as c:
            assert (await c.get("/readyz")).status_code == 200
            await proxy.cut()
            cut = time.monotonic()
            # the outage lasts 4.5 s (every loop retried at least 3 times) while /readyz
            # is asked: each source says it once, however often it failed
            while time.monotonic() - cut < 4.5:
                assert (await c.get("/readyz")).status_code == 503
                await asyncio.sleep(0.3)
            sources = ("a2a_hub.cluster", "a2a_hub.push", "a2a_hub.stores.outage")
            lines = [r.getMessage() for r in caplog.records if r.name.startswith(sources)]
            await proxy.start()
    finally:
        if proxy.server is not None:
            await proxy.cut()
    by_source: dict[str, int] = {}
    for line in lines:
        source = line.split(":")[0] if line.startswith(("push", "cluster")) else line[:25]
        by_source[source] = by_source.get(source, 0) + 1
    assert lines and max(by_source.values()) == 1, lines


async def test_card_urls_of_an_id_with_a_space_are_encoded() -> None:
    hub = make_hub({"my bot": "echo"})
    async with running(hub) as c:
        card = (await c.get("/a2a/my%20bot/.well-known/agent-card.json")).json()
        index = (await c.get("/")).json()
    urls = [card["supportedInterfaces"][0]["url"], *(a["url"] for a in index["agents"])]
    assert all(" " not in u and "/a2a/my%20bot" in u for u in urls), urls


def test_agent_options_as_json_hold_commas_and_ampersands() -> None:
    spec = AgentSpec.parse('bot=echo?{"reply": "message", "note": "a, b & c=d"}')
    assert spec.id == "bot" and spec.options == {"reply": "message", "note": "a, b & c=d"}
    env = {"A2A_HUB_AGENTS": 'one=echo?{"note": "x,y"},two=echo?reply=message'}
    specs = load_settings(None, env=env).agents
    assert [(s.id, s.options) for s in specs] == [
        ("one", {"note": "x,y"}),
        ("two", {"reply": "message"}),
    ]
    assert AgentSpec.parse("bot=echo?note=a%2C%20b%20%26%20c").options == {"note": "a, b & c"}


async def test_the_client_speaks_jsonrpc_01_to_a2a_hub(live: Any) -> None:
    from a2a_hub.client import A2AClient

    async with await A2AClient.connect(f"{live.url}/a2a/echo", transport="jsonrpc-0.1") as c:
        assert c.transport.__class__.__name__ == "JsonRpc01Transport"
        result = await c.send("hello 0.1")
    assert "echo: hello 0.1" in json.dumps(msgspec.to_builtins(result))
