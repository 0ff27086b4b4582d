"""A2A 1.0 protocol details (issue 16, items 3-7) on every binding they concern.

3. JSON-RPC answers an invalid request with its ``id`` when it can be read (1.0, 0.3, 0.1).
4. 1.0 JSON requests may use the proto field names (``history_length``) as well as camelCase.
5. Extensions: declared in the card, requested with ``A2A-Extensions``, seen by the
   executor, echoed back; a missing required one is refused (gRPC: see test_grpc.py).
6. Cards: ``Last-Modified`` and ``If-Modified-Since``; the 0.3 fields can be turned off.
7. The JSON-RPC endpoint refuses a body that is not declared as JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Any

import httpx
import pytest

from a2a_hub import AgentSpec, Hub, Settings, create_app
from a2a_hub.protocol.types import AgentExtension
from a2a_hub.settings import load_settings
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import ExtensionAware
from tests.support.hub import make_hub

SHOUT = "https://example.com/ext/shout/v1"
TRACE = "https://example.com/ext/trace/v1"
SIGNED = "https://example.com/ext/signed/v1"
V10 = {"A2A-Version": "1.0"}


def rpc(method: str, params: Any, req_id: Any = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params}


def msg(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}], **extra}


@pytest.fixture
async def ext_client() -> AsyncIterator[httpx.AsyncClient]:
    """Agents ``ext`` (declares SHOUT, TRACE; the config overrides SHOUT's description) and
    ``strict`` (requires SIGNED)."""
    specs = [
        AgentSpec(
            id="ext",
            kind="python",
            executor="x:y",
            extensions=[AgentExtension(uri=SHOUT, description="from hub.toml")],
        ),
        AgentSpec(
            id="strict",
            kind="python",
            executor="x:y",
            extensions=[AgentExtension(uri=SIGNED, required=True, params={"alg": "ES256"})],
        ),
    ]
    executors = {"ext": ExtensionAware(), "strict": ExtensionAware()}
    settings = Settings.from_flat(agents=specs, store="memory://")
    hub = Hub(settings, store=MemoryStore(), executors=executors)
    await hub.start()
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        yield c
    await hub.close()


# --- 3. the JSON-RPC id of an invalid request --------------------------------------------


@pytest.mark.parametrize("version", ["1.0", "0.3", "0.1", None])
@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"jsonrpc": "2.0", "id": "req-1"}, -32600),  # no method
        ({"jsonrpc": "2.0", "id": "req-1", "method": 5}, -32600),  # method not a string
        ({"id": "req-1", "method": "GetTask", "params": {}}, -32600),  # no jsonrpc
        ({"jsonrpc": "1.0", "id": "req-1", "method": "GetTask"}, -32600),
        ({"jsonrpc": "2.0", "id": "req-1", "method": "NoSuchMethod"}, -32601),
    ],
)
async def test_invalid_request_echoes_its_id(
    client: httpx.AsyncClient, version: str | None, body: dict[str, Any], code: int
) -> None:
    headers = {"A2A-Version": version} if version else {}
    r = await client.post("/a2a/echo", json=body, headers=headers)
    answer = r.json()
    assert answer["id"] == "req-1" and answer["error"]["code"] == code, answer


@pytest.mark.parametrize(
    ("version", "method"),
    [("1.0", "SendMessage"), ("1.0", "GetTask"), ("0.3", "message/send"), ("0.1", "tasks/get")],
)
async def test_wrong_params_type_echoes_its_id(
    client: httpx.AsyncClient, version: str, method: str
) -> None:
    r = await client.post(
        "/a2a/echo", json=rpc(method, [1, 2], req_id=42), headers={"A2A-Version": version}
    )
    answer = r.json()
    assert answer["id"] == 42 and answer["error"]["code"] == -32602, answer


async def test_unreadable_id_is_null(client: httpx.AsyncClient) -> None:
    for body in (b'{"jsonrpc": "2.0", "id": {"no": 1}}', b"[1, 2]", b'{"id": 1, "method": '):
        r = await client.post("/a2a/echo", content=body, headers=V10)
        assert r.json()["id"] is None


async def test_0_3_error_shape_kept_for_an_invalid_request(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/a2a/echo", json={"jsonrpc": "2.0", "id": 3}, headers={"A2A-Version": "0.3"}
    )
    error = r.json()["error"]
    assert r.json()["id"] == 3 and not isinstance(error.get("data"), list)


# --- 4. proto field names in 1.0 JSON ------------------------------------------------------


async def test_jsonrpc_accepts_proto_field_names(client: httpx.AsyncClient) -> None:
    first = await client.post(
        "/a2a/pizza",
        json=rpc(
            "SendMessage",
            {
                "message": {
                    "message_id": "p1",
                    "role": "ROLE_USER",
                    "parts": [{"text": "pizza please", "media_type": "text/plain"}],
                    "metadata": {"snake_key": {"inner_key": 1}},
                }
            },
        ),
        headers=V10,
    )
    task = first.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    sent = task["history"][0]
    assert sent["parts"][0]["mediaType"] == "text/plain"
    assert sent["metadata"] == {"snake_key": {"inner_key": 1}}  # free-form keys untouched
    second = await client.post(
        "/a2a/pizza",
        json=rpc(
            "SendMessage",
            {
                "message": msg("margherita", task_id=task["id"], context_id=task["contextId"]),
                "configuration": {"history_length": 1, "return_immediately": False},
            },
        ),
        headers=V10,
    )
    done = second.json()["result"]["task"]
    assert done["id"] == task["id"] and done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(done["history"]) == 1
    got = await client.post(
        "/a2a/pizza", json=rpc("GetTask", {"id": task["id"], "history_length": 2}), headers=V10
    )
    assert len(got.json()["result"]["history"]) == 2
    page = await client.post(
        "/a2a/pizza",
        json=rpc("ListTasks", {"context_id": task["contextId"], "page_size": 1}),
        headers=V10,
    )
    result = page.json()["result"]
    assert [t["id"] for t in result["tasks"]] == [task["id"]] and result["pageSize"] == 1
    assert "context_id" not in json.dumps(result)  # answers stay camelCase


async def test_camel_case_wins_over_the_proto_name(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/a2a/echo",
        json=rpc("ListTasks", {"pageSize": 2, "page_size": 100}),
        headers=V10,
    )
    assert r.json()["result"]["pageSize"] == 2


async def test_non_blocking_send_with_proto_names(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/a2a/slow",
        json=rpc(
            "SendMessage", {"message": msg("w"), "configuration": {"return_immediately": True}}
        ),
        headers=V10,
    )
    task = r.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    await client.post("/a2a/slow", json=rpc("CancelTask", {"id": task["id"]}), headers=V10)


async def test_rest_accepts_proto_field_names(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/a2a/echo/message:send",
        json={
            "message": {"message_id": "r1", "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"history_length": 0},
        },
    )
    task = r.json()["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and "history" not in task
    r = await client.get(f"/a2a/echo/tasks/{task['id']}", params={"history_length": 1})
    assert len(r.json()["history"]) == 1
    r = await client.get(
        "/a2a/echo/tasks", params={"context_id": task["contextId"], "page_size": 1}
    )
    assert [t["id"] for t in r.json()["tasks"]] == [task["id"]] and r.json()["pageSize"] == 1


async def test_0_3_params_are_not_renamed(client: httpx.AsyncClient) -> None:
    """0.3 has its own names; a proto name there is just an unknown field."""
    r = await client.post(
        "/a2a/echo",
        json=rpc(
            "message/send",
            {"message": {"kind": "message", "message_id": "x", "role": "user", "parts": []}},
        ),
        headers={"A2A-Version": "0.3"},
    )
    assert r.json()["error"]["code"] == -32602


# --- 5. extensions -------------------------------------------------------------------------


async def test_card_declares_extensions(ext_client: httpx.AsyncClient) -> None:
    card = (await ext_client.get("/a2a/ext/.well-known/agent-card.json")).json()
    assert card["capabilities"]["extensions"] == [
        {"uri": SHOUT, "description": "from hub.toml"},  # the configuration wins
        {"uri": TRACE, "params": {"level": 2}},
    ]
    strict = (await ext_client.get("/a2a/strict/.well-known/agent-card.json")).json()
    assert strict["capabilities"]["extensions"][0] == {
        "uri": SIGNED,
        "required": True,
        "params": {"alg": "ES256"},
    }
    plain = (await ext_client.get("/a2a/strict/.well-known/agent.json")).json()
    assert "extensions" not in plain["capabilities"]  # 0.1 cards have no such field


async def test_extensions_header_jsonrpc_rest_and_stream(ext_client: httpx.AsyncClient) -> None:
    header = {"A2A-Extensions": f"{TRACE}, urn:unknown ,{SHOUT}", **V10}
    r = await ext_client.post(
        "/a2a/ext", json=rpc("SendMessage", {"message": msg("a")}), headers=header
    )
    assert r.json()["result"]["message"]["parts"][0]["text"] == f"active: {SHOUT},{TRACE}"
    assert r.headers["a2a-extensions"] == f"{SHOUT},{TRACE}"
    r = await ext_client.post("/a2a/ext/message:send", json={"message": msg("b")}, headers=header)
    assert r.json()["message"]["parts"][0]["text"] == f"active: {SHOUT},{TRACE}"
    assert r.headers["a2a-extensions"] == f"{SHOUT},{TRACE}"
    async with ext_client.stream(
        "POST",
        "/a2a/ext/message:stream",
        json={"message": msg("c")},
        headers={"A2A-Extensions": TRACE},
    ) as s:
        assert s.headers["a2a-extensions"] == TRACE
        body = (await s.aread()).decode()
    assert f"active: {TRACE}" in body
    r = await ext_client.post(
        "/a2a/ext", json=rpc("SendMessage", {"message": msg("d")}), headers=V10
    )
    assert r.json()["result"]["message"]["parts"][0]["text"] == "active: none"
    assert "a2a-extensions" not in r.headers


async def test_extensions_header_on_0_3_and_0_1(ext_client: httpx.AsyncClient) -> None:
    m03 = {
        "kind": "message",
        "messageId": "o1",
        "role": "user",
        "parts": [{"kind": "text", "text": "x"}],
    }
    r = await ext_client.post(
        "/a2a/ext",
        json=rpc("message/send", {"message": m03}),
        headers={"A2A-Version": "0.3", "X-A2A-Extensions": SHOUT},
    )
    assert r.json()["result"]["parts"][0]["text"] == f"active: {SHOUT}"
    assert r.headers["a2a-extensions"] == SHOUT
    r = await ext_client.post(
        "/a2a/strict",
        json=rpc(
            "tasks/send",
            {
                "id": "legacy-1",
                "message": {"role": "user", "parts": [{"type": "text", "text": "x"}]},
            },
        ),
        headers={"A2A-Version": "0.1"},
    )
    assert r.json()["error"]["code"] == -32008


async def test_required_extension_missing(ext_client: httpx.AsyncClient) -> None:
    r = await ext_client.post(
        "/a2a/strict", json=rpc("SendMessage", {"message": msg("x")}), headers=V10
    )
    error = r.json()["error"]
    assert error["code"] == -32008 and SIGNED in error["message"]
    assert error["data"][0]["reason"] == "EXTENSION_SUPPORT_REQUIRED"
    assert r.json()["id"] == 7
    r = await ext_client.post("/a2a/strict/message:send", json={"message": msg("y")})
    assert r.status_code == 400
    assert r.json()["error"]["details"][0]["reason"] == "EXTENSION_SUPPORT_REQUIRED"
    r = await ext_client.post("/a2a/strict/message:stream", json={"message": msg("z")}, headers=V10)
    assert r.status_code == 400
    r = await ext_client.post(
        "/a2a/strict",
        json=rpc("SendMessage", {"message": msg("ok")}),
        headers={"A2A-Extensions": SIGNED, **V10},
    )
    assert r.json()["result"]["message"]["parts"][0]["text"] == f"active: {SIGNED}"
    # reading tasks needs no extension
    r = await ext_client.get("/a2a/strict/tasks")
    assert r.status_code == 200


def test_extensions_from_hub_toml(tmp_path: Any) -> None:
    path = tmp_path / "hub.toml"
    path.write_text(
        '[[agents]]\nid = "e"\nkind = "echo"\n'
        '[[agents.extensions]]\nuri = "urn:x"\nrequired = true\nparams = { a = 1 }\n'
    )
    settings = load_settings(path, env={})
    assert settings.agents[0].extensions == [
        AgentExtension(uri="urn:x", required=True, params={"a": 1})
    ]


# --- 6. cards: Last-Modified, If-Modified-Since, the 0.3 fields -----------------------------


async def test_last_modified_and_if_modified_since(client: httpx.AsyncClient) -> None:
    url = "/a2a/echo/.well-known/agent-card.json"
    r = await client.get(url)
    modified = r.headers["last-modified"]
    assert modified.endswith(" GMT")
    for path in (url, "/a2a/echo/.well-known/agent.json"):
        again = await client.get(path, headers={"If-Modified-Since": modified})
        assert again.status_code == 304 and again.headers["last-modified"] == modified
    later = formatdate(time.time() + 3600, usegmt=True)
    assert (await client.get(url, headers={"If-Modified-Since": later})).status_code == 304
    earlier = formatdate(time.time() - 3600, usegmt=True)
    r = await client.get(url, headers={"If-Modified-Since": earlier})
    assert r.status_code == 200 and r.json()["name"] == "Echo"
    garbage = await client.get(url, headers={"If-Modified-Since": "yesterday"})
    assert garbage.status_code == 200
    # If-None-Match takes precedence: a stale ETag gets the card even with a fresh date
    stale = await client.get(url, headers={"If-None-Match": 'W/"old"', "If-Modified-Since": later})
    assert stale.status_code == 200


async def test_strict_1_0_card_without_the_0_3_fields() -> None:
    hub = make_hub({"echo": "echo"}, card_v03_fields=False)
    await hub.start()
    try:
        transport = httpx.ASGITransport(app=create_app(hub))
        async with httpx.AsyncClient(transport=transport, base_url="http://h") as c:
            card = (await c.get("/a2a/echo/.well-known/agent-card.json")).json()
            assert not {"url", "preferredTransport", "protocolVersion"} & card.keys()
            assert card["supportedInterfaces"][0]["url"] == "http://h/a2a/echo"
            legacy = (await c.get("/a2a/echo/.well-known/agent.json")).json()
            assert legacy["url"] == "http://h/a2a/echo"  # the 0.1 card has its own url
    finally:
        await hub.close()


def test_card_v03_fields_setting_from_the_environment() -> None:
    assert load_settings(env={}).server.card_v03_fields is True
    assert load_settings(env={"A2A_HUB_CARD_V03_FIELDS": "false"}).server.card_v03_fields is False
    assert load_settings(env={"A2A_HUB_GRPC_PORT": "50051"}).server.grpc_port == 50051
    with pytest.raises(
        ValueError, match="A2A_HUB_CARD_V03_FIELDS must be true or false; got 'maybe'"
    ):
        load_settings(env={"A2A_HUB_CARD_V03_FIELDS": "maybe"})
    with pytest.raises(
        ValueError, match="A2A_HUB_GRPC_PORT must be a whole number from 0 to 65535"
    ):
        load_settings(env={"A2A_HUB_GRPC_PORT": "70000"})


# --- 7. JSON-RPC Content-Type --------------------------------------------------------------


@pytest.mark.parametrize(
    "ctype", ["text/plain", "application/x-www-form-urlencoded", "application/xml"]
)
async def test_jsonrpc_refuses_a_non_json_body(client: httpx.AsyncClient, ctype: str) -> None:
    body = json.dumps(rpc("SendMessage", {"message": msg("x")}, req_id="ct-1"))
    r = await client.post("/a2a/echo", content=body, headers={"content-type": ctype, **V10})
    assert r.status_code == 415
    answer = r.json()
    assert answer["id"] == "ct-1" and answer["error"]["code"] == -32005
    assert ctype in answer["error"]["message"] and "application/json" in answer["error"]["message"]
    assert answer["error"]["data"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    page = await client.get("/a2a/echo/tasks")
    assert page.json()["totalSize"] == 0  # nothing was sent


@pytest.mark.parametrize(
    "ctype", ["application/json", "application/a2a+json", "application/json; charset=utf-8"]
)
async def test_jsonrpc_accepts_json_types(client: httpx.AsyncClient, ctype: str) -> None:
    body = json.dumps(rpc("SendMessage", {"message": msg("x")}))
    r = await client.post("/a2a/echo", content=body, headers={"content-type": ctype, **V10})
    assert (
        r.status_code == 200
        and r.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    )


async def test_rest_still_answers_415(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/a2a/echo/message:send", content=b"{}", headers={"content-type": "text/plain"}
    )
    assert r.status_code == 415
    assert r.json()["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
