"""Signed agent cards (issue 26 item 2): every card the hub serves verifies with the official
a2a-sdk's verifier (``create_signature_verifier`` with ``A2ACardResolver``), over a real
socket; a tampered card does not; a rotated key signs again."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.client.card_resolver import parse_agent_card
from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier
from jwt import PyJWK

from a2a_hub import AgentSpec
from a2a_hub.registry import Registry
from tests.support.hub import LiveServer, make_hub


@pytest.fixture
async def live(tmp_path: Any) -> AsyncIterator[LiveServer]:
    hub = make_hub(
        {"echo": "echo"},
        registry=f"sqlite:///{tmp_path}/reg.db",
    )
    hub.add(AgentSpec(id="locked", kind="echo", auth="api-key"))
    hub.add(
        AgentSpec(
            id="extra",
            kind="echo",
            extended_skills=[{"id": "x", "name": "X", "description": "d", "tags": []}],
        )
    )
    async with LiveServer(hub) as server:
        yield server


async def verifier_for(http: httpx.AsyncClient, jku_seen: list[str]) -> Any:
    """The a2a-sdk verifier, its keys fetched from the JWKS the signature names."""
    cache: dict[str, dict[str, Any]] = {}

    async def load(url: str) -> None:
        cache[url] = (await http.get(url)).json()

    def key_provider(kid: str | None, jku: str | None) -> Any:
        assert jku is not None and jku in cache, jku
        jku_seen.append(jku)
        for jwk in cache[jku]["keys"]:
            if jwk["kid"] == kid:
                return PyJWK.from_dict(jwk)
        raise KeyError(kid)

    return load, create_signature_verifier(key_provider, ["EdDSA", "ES256"])


def protected_header(card: dict[str, Any]) -> dict[str, Any]:
    import base64

    protected = card["signatures"][0]["protected"]
    return dict(json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4))))


@pytest.mark.parametrize("agent", ["echo", "locked", "extra"])
async def test_hub_cards_verify_with_the_a2a_sdk(live: LiveServer, agent: str) -> None:
    base = f"{live.url}/a2a/{agent}"
    async with httpx.AsyncClient() as http:
        raw = (await http.get(f"{base}/.well-known/agent-card.json")).json()
        header = protected_header(raw)
        assert header["alg"] == "EdDSA" and header["kid"]
        assert header["jku"] == f"{base}/.well-known/jwks.json"
        # the card keeps its 0.3 fields (not covered by the signature, as the README says)
        assert raw["url"] == base and raw["protocolVersion"] == "0.3.0"
        load, verify = await verifier_for(http, seen := [])
        await load(header["jku"])
        card = await A2ACardResolver(http, base).get_agent_card(signature_verifier=verify)
        assert card.name and seen == [header["jku"]]


async def test_a_tampered_card_does_not_verify(live: LiveServer) -> None:
    base = f"{live.url}/a2a/locked"
    async with httpx.AsyncClient() as http:
        raw = (await http.get(f"{base}/.well-known/agent-card.json")).json()
        load, verify = await verifier_for(http, [])
        await load(protected_header(raw)["jku"])
        verify(parse_agent_card(copy.deepcopy(raw)))  # as served: valid
        for change in (
            lambda c: c.update(name="Evil"),
            lambda c: c["supportedInterfaces"][0].update(url="https://evil.example/a2a"),
            lambda c: c["skills"].append({"id": "s", "name": "s", "description": "d", "tags": []}),
            lambda c: c["securitySchemes"].pop("apiKey"),
        ):
            tampered = copy.deepcopy(raw)
            change(tampered)
            with pytest.raises(InvalidSignaturesError):
                verify(parse_agent_card(tampered))


async def test_the_extended_card_is_signed_and_rotation_signs_again(live: LiveServer) -> None:
    registry = live.hub.registry
    assert isinstance(registry, Registry)
    key, _ = await registry.create_key(principal="p", agents=None)
    base = f"{live.url}/a2a/extra"
    async with httpx.AsyncClient() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}
        got = await http.post(base, json=body, headers={"A2A-Version": "1.0", "X-API-Key": key})
        assert "result" in got.json(), got.json()
        extended = got.json()["result"]
        assert [s["id"] for s in extended["skills"]][-1] == "x"
        load, verify = await verifier_for(http, [])
        await load(protected_header(extended)["jku"])
        verify(parse_agent_card(copy.deepcopy(extended)))

        first = (await http.get(f"{base}/.well-known/agent-card.json")).json()
        await live.hub.signing_keys.rotate()
        second = (await http.get(f"{base}/.well-known/agent-card.json")).json()
        assert protected_header(first)["kid"] != protected_header(second)["kid"]
        await load(protected_header(second)["jku"])  # both keys listed during the grace
        verify(parse_agent_card(copy.deepcopy(first)))
        verify(parse_agent_card(copy.deepcopy(second)))
