"""OpenID Connect callers: bearer JWTs of a real local issuer on every binding, the RFC 9728
metadata, the card's openIdConnect scheme, the AI catalog, client credentials of remote agents.

The issuer (:class:`tests.support.oidc.Issuer`) is a small HTTP server serving discovery, a
JWKS and a token endpoint; the hub is a real uvicorn server with its gRPC binding.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
import websockets

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.registry.mcp_servers import McpServer
from a2a_hub.server.grpc._generated import a2a_pb2 as pb
from a2a_hub.server.grpc._generated import a2a_pb2_grpc
from a2a_hub.stores.memory import MemoryStore
from tests.support.hub import LiveServer
from tests.support.oidc import CLIENT_ID, CLIENT_SECRET, Issuer
from tests.support.ws import connect, recv, send, terminal, until, ws_url

V10 = {"A2A-Version": "1.0"}
RPC_SUBPROTOCOL = "a2a.jsonrpc.v1"


def msg10(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "message": {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}]}
        | extra
    }


def rpc_body(method: str, params: Any, req_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with Issuer() as running:
        yield running


def oidc_hub(tmp_path: Path, issuer: Issuer, **flat: Any) -> Hub:
    specs = [
        AgentSpec(id="secure", kind="echo", auth="oidc", extended_skills=[]),
        AgentSpec(id="either", kind="echo", auth="api-key|oidc"),
        AgentSpec(id="keyed", kind="echo", auth="api-key"),
        AgentSpec(id="open", kind="echo"),
    ]
    settings = Settings.from_flat(
        agents=specs,
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
        auth_oidc_issuer=issuer.url,
        auth_oidc_audience=issuer.audience,
        auth_oidc_scopes="invoke=a2a.invoke,read-all=a2a.read,admin=a2a.admin",
        grpc_port=0,
        **flat,
    )
    hub = Hub(settings, store=MemoryStore())
    assert hub.oidc is not None
    hub.oidc.refresh_interval = 0.0  # every unknown kid refetches (rotation test)
    return hub


@pytest.fixture
async def served(tmp_path: Path, issuer: Issuer) -> AsyncIterator[LiveServer]:
    async with LiveServer(oidc_hub(tmp_path, issuer)) as server:
        yield server


def grpc_target(server: LiveServer) -> str:
    assert server.hub.grpc is not None
    return f"127.0.0.1:{server.hub.grpc.port}"


async def test_a_good_token_is_accepted_on_every_binding(
    served: LiveServer, issuer: Issuer
) -> None:
    token = issuer.token("alice", scope="a2a.invoke")
    async with httpx.AsyncClient(timeout=30, headers=bearer(token)) as http:
        for agent in ("secure", "either"):
            base = f"{served.url}/a2a/{agent}"
            # JSON-RPC 1.0 and 0.3
            r = await http.post(base, json=rpc_body("SendMessage", msg10("rpc")), headers=V10)
            assert r.status_code == 200 and "result" in r.json(), r.text
            r = await http.post(
                base,
                json=rpc_body(
                    "message/send",
                    {"message": {"kind": "message", "messageId": "m03", "role": "user",
                                 "parts": [{"kind": "text", "text": "v03"}]}},
                ),
                headers={"A2A-Version": "0.3"},
            )  # fmt: skip
            assert r.status_code == 200 and "result" in r.json(), r.text
            # REST, and SSE
            r = await http.post(f"{base}/message:send", json=msg10("rest"))
            assert r.status_code == 200, r.text
            assert r.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            r = await http.post(f"{base}/message:stream", json=msg10("sse"))
            assert r.status_code == 200 and "TASK_STATE_COMPLETED" in r.text, r.text
            # AG-UI
            r = await http.post(
                f"{base}/ag-ui",
                json={
                    "threadId": "t1",
                    "runId": "r1",
                    "messages": [{"id": "u1", "role": "user", "content": "agui"}],
                    "state": {},
                    "tools": [],
                    "context": [],
                    "forwardedProps": {},
                },
            )
            assert r.status_code == 200 and "RUN_FINISHED" in r.text, r.text
    # the WebSocket channel: the token on the upgrade, and in the first frame
    async with connect(ws_url(served, "secure"), additional_headers=bearer(token)) as ws:
        await send(ws, action="send_message", message_id="ws1", text="hola")
        assert (await until(ws, terminal))[-1]["status"] == "completed"
    async with connect(ws_url(served, "secure")) as ws:
        await send(ws, action="authenticate", api_key=token)
        assert (await recv(ws))["event"] == "authenticated"
        await send(ws, action="send_message", message_id="ws2", text="hola")
        assert (await until(ws, terminal))[-1]["status"] == "completed"
    # A2A over WebSocket (JSON-RPC frames)
    async with connect(
        ws_url(served, "secure"), subprotocols=[RPC_SUBPROTOCOL], additional_headers=bearer(token)
    ) as ws:
        await ws.send(json.dumps(rpc_body("SendMessage", msg10("wsrpc"), 7)))
        frame = json.loads(await ws.recv())
        assert frame["id"] == 7 and "result" in frame, frame
    # gRPC metadata
    async with grpc.aio.insecure_channel(grpc_target(served)) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        message = pb.Message(message_id="g1", role=pb.ROLE_USER, parts=[pb.Part(text="grpc")])
        reply = await stub.SendMessage(
            pb.SendMessageRequest(tenant="secure", message=message),
            metadata=[("authorization", f"Bearer {token}")],
        )
        assert reply.task.status.state == pb.TASK_STATE_COMPLETED


BAD = ("wrong audience", "wrong issuer", "expired", "unknown kid", "alg none", "HS256 public")


def bad_token(issuer: Issuer, what: str) -> str:
    if what == "wrong audience":
        return issuer.token("mallory", aud="someone-else")
    if what == "wrong issuer":
        return issuer.token("mallory", iss="https://evil.example")
    if what == "expired":
        return issuer.token("mallory", exp_in=-3600)
    if what == "unknown kid":
        issuer.add_key("never-published", publish=False)
        return issuer.token("mallory", kid="never-published")
    if what == "alg none":
        return issuer.forged("mallory", "none")
    assert what == "HS256 public"
    return issuer.forged("mallory", "HS256")


@pytest.mark.parametrize("what", BAD)
async def test_a_bad_token_is_401_with_the_metadata_pointer(
    served: LiveServer, issuer: Issuer, what: str
) -> None:
    token = bad_token(issuer, what)
    base = f"{served.url}/a2a/secure"
    pointer = f'resource_metadata="{served.url}/.well-known/oauth-protected-resource/a2a/secure"'
    async with httpx.AsyncClient(timeout=30, headers=bearer(token)) as http:
        r = await http.post(base, json=rpc_body("SendMessage", msg10("x")), headers=V10)
        assert r.status_code == 401, r.text
        assert pointer in r.headers["www-authenticate"], r.headers["www-authenticate"]
        assert 'error="invalid_token"' in r.headers["www-authenticate"]
        assert r.json()["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
        for verb, path in (("POST", "/message:send"), ("POST", "/message:stream"),
                           ("GET", "/tasks"), ("POST", "/ag-ui")):  # fmt: skip
            r = await http.request(verb, base + path, json=msg10("x"))
            assert r.status_code == 401, (path, r.text)
            assert pointer in r.headers["www-authenticate"]
        # the metadata the pointer names
        metadata = (
            await http.get(f"{served.url}/.well-known/oauth-protected-resource/a2a/secure")
        ).json()
        assert metadata["resource"] == base
        assert metadata["authorization_servers"] == [issuer.url]
        assert metadata["bearer_methods_supported"] == ["header"]
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with connect(ws_url(served, "secure"), additional_headers=bearer(token)):
            pass
    assert refused.value.response.status_code == 401
    assert pointer in refused.value.response.headers["www-authenticate"]
    async with grpc.aio.insecure_channel(grpc_target(served)) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        message = pb.Message(message_id="g1", role=pb.ROLE_USER, parts=[pb.Part(text="x")])
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await stub.SendMessage(
                pb.SendMessageRequest(tenant="secure", message=message),
                metadata=[("authorization", f"Bearer {token}")],
            )
        assert failed.value.code() == grpc.StatusCode.UNAUTHENTICATED
        trailers = dict(failed.value.trailing_metadata() or ())
        assert "oauth-protected-resource/a2a/secure" in str(trailers.get("www-authenticate"))


async def test_no_token_and_api_keys_on_an_oidc_agent(served: LiveServer) -> None:
    base = f"{served.url}/a2a/secure"
    assert served.hub.registry is not None
    key, _ = await served.hub.registry.create_key(agents=["secure", "either"])
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.post(f"{base}/message:send", json=msg10("x"))
        assert r.status_code == 401 and "resource_metadata=" in r.headers["www-authenticate"]
        r = await http.post(f"{base}/message:send", json=msg10("x"), headers={"X-API-Key": key})
        assert r.status_code == 401 and "tokens only" in r.text
        # an api-key|oidc agent takes both
        r = await http.post(
            f"{served.url}/a2a/either/message:send", json=msg10("k"), headers={"X-API-Key": key}
        )
        assert r.status_code == 200, r.text
        # an api-key agent gives no pointer (it takes no tokens)
        r = await http.post(f"{served.url}/a2a/keyed/message:send", json=msg10("x"))
        assert r.status_code == 401 and "resource_metadata" not in r.headers["www-authenticate"]
        r = await http.get(f"{served.url}/.well-known/oauth-protected-resource/a2a/keyed")
        assert r.status_code == 404


async def test_a_callers_token_cannot_see_anothers_task(served: LiveServer, issuer: Issuer) -> None:
    alice, bob = issuer.token("alice"), issuer.token("bob")
    reader = issuer.token("ops", scope="a2a.read")
    base = f"{served.url}/a2a/secure"
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.post(f"{base}/message:send", json=msg10("mine"), headers=bearer(alice))
        task_id = r.json()["task"]["id"]
        r = await http.get(f"{base}/tasks/{task_id}", headers=bearer(bob))
        assert r.status_code == 404, r.text
        r = await http.get(f"{base}/tasks", headers=bearer(bob))
        assert r.json().get("tasks", []) == []
        r = await http.get(f"{base}/tasks/{task_id}", headers=bearer(alice))
        assert r.status_code == 200 and r.json()["id"] == task_id
        # a token with the mapped read-all scope sees it (and cannot invoke: no invoke scope
        # given, but read-all alone only reads)
        r = await http.get(f"{base}/tasks/{task_id}", headers=bearer(reader))
        assert r.status_code == 200
        r = await http.post(f"{base}/message:send", json=msg10("nope"), headers=bearer(reader))
        assert r.status_code == 403


async def test_an_unknown_kid_refetches_the_jwks(served: LiveServer, issuer: Issuer) -> None:
    base = f"{served.url}/a2a/secure/message:send"
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.post(base, json=msg10("k1"), headers=bearer(issuer.token("alice")))
        assert r.status_code == 200
        issuer.add_key("k2")  # the issuer rotates: a new key in its JWKS
        token = issuer.token("alice", kid="k2")
        r = await http.post(base, json=msg10("k2"), headers=bearer(token))
        assert r.status_code == 200, r.text


async def test_the_card_lists_openid_connect_and_the_sdk_client_sends_a_token(
    served: LiveServer, issuer: Issuer
) -> None:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.client.card_resolver import parse_agent_card
    from a2a.helpers import get_artifact_text, new_text_message
    from a2a.types.a2a_pb2 import AgentCard, Role, SendMessageRequest
    from google.protobuf.json_format import ParseDict

    base = f"{served.url}/a2a/secure"
    discovery = f"{issuer.url}/.well-known/openid-configuration"
    token = issuer.token("alice")
    async with httpx.AsyncClient(timeout=30) as http:
        raw = (await http.get(f"{base}/.well-known/agent-card.json")).json()
        scheme = raw["securitySchemes"]["oidc"]
        assert scheme["openIdConnectSecurityScheme"]["openIdConnectUrl"] == discovery
        assert scheme["type"] == "openIdConnect"  # the 0.3 form beside the 1.0 one
        assert {"oidc": []} in raw["security"] and "apiKey" not in raw["securitySchemes"]
        parsed = parse_agent_card(raw)
        assert parsed.security_schemes["oidc"].open_id_connect_security_scheme.open_id_connect_url
        # the extended card (a 1.0 method): strictly 1.0, parsed without ignoring fields
        r = await http.post(
            base, json=rpc_body("GetExtendedAgentCard", {}), headers={**V10, **bearer(token)}
        )
        ParseDict(r.json()["result"], AgentCard(), ignore_unknown_fields=False)
    async with httpx.AsyncClient(timeout=30, headers=bearer(token)) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        assert "oidc" in card.security_schemes
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        request = SendMessageRequest(message=new_text_message("hello oidc", role=Role.ROLE_USER))
        events = [e async for e in client.send_message(request)]
        task = events[-1].task if events[-1].HasField("task") else events[-1]
        assert "hello oidc" in "".join(get_artifact_text(a) for a in task.artifacts)
        await client.close()


async def test_the_ai_catalog_lists_what_the_caller_may_reach(
    served: LiveServer, issuer: Issuer
) -> None:
    assert served.hub.registry is not None
    key, _ = await served.hub.registry.create_key(agents=["keyed"])
    await served.hub.registry.put_mcp_server(
        McpServer(
            name="tools", transport="streamable-http", url="http://t.example/mcp", public=True
        )
    )
    await served.hub.registry.put_mcp_server(
        McpServer(name="private", transport="streamable-http", url="http://p.example/mcp")
    )
    url = f"{served.url}/.well-known/ai-catalog.json"

    async def listed(headers: dict[str, str]) -> dict[str, str]:
        async with httpx.AsyncClient(timeout=30) as http:
            r = await http.get(url, headers=headers)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("application/ai-catalog+json")
        body = r.json()
        assert body["specVersion"] == "1.0"
        return {e["identifier"].rsplit(":", 1)[1]: e for e in body["entries"]}

    anonymous = await listed({})
    assert set(anonymous) == {"open", "tools"}
    entry = anonymous["open"]
    assert entry["type"] == "application/a2a-agent-card+json"
    assert entry["url"] == f"{served.url}/a2a/open/.well-known/agent-card.json"
    assert anonymous["tools"]["url"] == "http://t.example/mcp"
    assert set(await listed(bearer(issuer.token("alice")))) == {"open", "secure", "either", "tools"}
    assert set(await listed({"X-API-Key": key})) == {"open", "keyed", "tools"}
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.get(url, headers=bearer(issuer.forged("x", "none")))
        assert r.status_code == 401


async def test_a_remote_agent_presents_client_credentials(
    served: LiveServer, issuer: Issuer, tmp_path: Path
) -> None:
    caller_spec = AgentSpec(
        id="proxy",
        kind="remote",
        options={
            "url": f"{served.url}/a2a/secure",
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "token_url": f"{issuer.url}/token",
            "streaming": "false",
        },
    )
    front = Hub(Settings.from_flat(agents=[caller_spec], store="memory://"), store=MemoryStore())
    async with LiveServer(front) as proxy, httpx.AsyncClient(timeout=60) as http:
        for text in ("first", "second"):
            r = await http.post(f"{proxy.url}/a2a/proxy/message:send", json=msg10(text))
            assert r.status_code == 200, r.text
            task = r.json()["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
            assert text in json.dumps(task["artifacts"])
    assert issuer.token_requests == 1  # kept until near expiry
    # the remote's tasks belong to the client's subject
    secure = served.hub.agents["secure"].engine
    page = await secure.store.list_tasks("secure", _query())
    assert page.tasks and all(t.id for t in page.tasks)
    owners = {
        (await secure.store.get_task_record("secure", t.id)).owner  # type: ignore[union-attr]
        for t in page.tasks
    }
    assert owners == {CLIENT_ID}


def _query() -> Any:
    from a2a_hub.stores.base import TaskQuery

    return TaskQuery(page_size=50)


def test_the_issuer_must_be_https_except_on_loopback() -> None:
    from a2a_hub.server.oidc import OidcVerifier
    from a2a_hub.settings import AuthSettings, SettingsError

    for good in ("https://login.example.com/realm", "http://127.0.0.1:8080", "http://localhost"):
        OidcVerifier(AuthSettings(oidc_issuer=good, oidc_audience="a"))
    with pytest.raises(SettingsError, match="must be an https"):
        OidcVerifier(AuthSettings(oidc_issuer="http://login.example.com", oidc_audience="a"))
    with pytest.raises(SettingsError, match="oidc_scopes"):
        OidcVerifier(
            AuthSettings(oidc_issuer="https://x.example", oidc_audience="a", oidc_scopes="root=x")
        )
