"""Agent cards: the 1.0 card (with 0.3 fields) and the legacy 0.1 card, with ETags."""

from __future__ import annotations

import hashlib

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from a2a_hub.protocol import v01
from a2a_hub.protocol.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
)
from a2a_hub.server.errors import JSON, guarded
from a2a_hub.server.http import agent_of, base_url, hub_of
from a2a_hub.server.hub import HostedAgent

__all__ = [
    "CARD_CACHE_CONTROL",
    "agent_card",
    "build_card",
    "card_bytes",
    "jwks",
    "legacy_agent_card",
    "legacy_card_bytes",
]

CARD_CACHE_CONTROL = "public, max-age=300"
_enc = msgspec.json.Encoder()


def build_card(agent: HostedAgent, base_url: str) -> AgentCard:
    """The 1.0 card of ``agent`` at ``base_url``: JSON-RPC 1.0 first, then REST, then 0.3."""
    spec, executor = agent.spec, agent.executor
    skills = [msgspec.convert(s, AgentSkill) for s in (executor.skills or [])]
    if not skills:
        skills = [
            AgentSkill(
                id=spec.id,
                name=spec.name or spec.id,
                description=spec.description or executor.description or spec.id,
                tags=[spec.kind],
            )
        ]
    return AgentCard(
        name=spec.name or executor.name or spec.id,
        description=spec.description
        or executor.description
        or (type(executor).__doc__ or "").strip()
        or f"A2A agent {spec.id}",
        supported_interfaces=[
            AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base_url, protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        version=spec.version,
        capabilities=AgentCapabilities(
            streaming=agent.streaming, push_notifications=True, extended_agent_card=False
        ),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=skills,
        url=base_url,
        preferred_transport="JSONRPC",
        protocol_version="0.3.0",
    )


def _etag(body: bytes) -> str:
    return 'W/"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _remember(agent: HostedAgent, key: str, body: bytes) -> tuple[bytes, str]:
    if len(agent.cards) >= 32:  # base URLs come from Host headers: keep the cache bounded
        agent.cards.clear()
    agent.cards[key] = entry = (body, _etag(body))
    return entry


def card_bytes(agent: HostedAgent, base_url: str) -> tuple[bytes, str]:
    """Encoded 1.0 card and its ETag, cached per base URL."""
    key = "1.0 " + base_url
    cached = agent.cards.get(key)
    if cached is None:
        body = _enc.encode(build_card(agent, base_url))
        cached = _remember(agent, key, body)
    return cached


def legacy_card_bytes(agent: HostedAgent, base_url: str) -> tuple[bytes, str]:
    """Encoded 0.1 card (``/.well-known/agent.json``) and its ETag."""
    key = "0.1 " + base_url
    cached = agent.cards.get(key)
    if cached is None:
        body = _enc.encode(v01.encode_card(build_card(agent, base_url), base_url))
        cached = _remember(agent, key, body)
    return cached


async def _serve(request: Request, legacy: bool) -> Response:
    hub = hub_of(request)
    agent = agent_of(request, hub)
    aliased = "agent_id" not in request.scope["path_params"]  # the root alias: the root's URL
    url = base_url(request, hub, None if aliased else agent)
    body, etag = legacy_card_bytes(agent, url) if legacy else card_bytes(agent, url)
    headers = {"ETag": etag, "Cache-Control": CARD_CACHE_CONTROL}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=JSON, headers=headers)


@guarded
async def agent_card(request: Request) -> Response:
    """``GET /.well-known/agent-card.json``: the 1.0 card, ETag and ``If-None-Match`` honoured."""
    return await _serve(request, legacy=False)


@guarded
async def legacy_agent_card(request: Request) -> Response:
    """``GET /.well-known/agent.json``: the 0.1 card."""
    return await _serve(request, legacy=True)


@guarded
async def jwks(request: Request) -> Response:
    """``GET /.well-known/jwks.json`` (also under an agent's URL): the public keys that
    sign push notifications."""
    hub = hub_of(request)
    if "agent_id" in request.path_params:
        agent_of(request, hub)
    await hub.signing_keys.refresh()  # another instance may have rotated them
    body = _enc.encode(hub.signing_keys.jwks())
    return Response(body, media_type=JSON, headers={"Cache-Control": "public, max-age=60"})
