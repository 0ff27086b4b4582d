"""Agent cards: the 1.0 card (with 0.3 fields) and the legacy 0.1 card, with HTTP caching.

The 1.0 card also carries the 0.3 top-level fields ``url``, ``preferredTransport`` and
``protocolVersion``: a 0.3 client reads a card as 0.3 and needs them to find the agent at
all, while 1.0 clients ignore fields they do not know.  A deployment that wants a strictly
1.0 card turns them off with the setting ``card_v03_fields = false``
(``A2A_HUB_CARD_V03_FIELDS=false``); 0.3 clients then need a 1.0-aware card resolver.

Caching (spec section 8.6): ``Cache-Control``, a weak ``ETag`` (hash of the body) and
``Last-Modified`` (when the agent's card last changed in this process: start-up, or the
gRPC port being bound).  ``If-None-Match`` is honoured, else ``If-Modified-Since``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from email.utils import formatdate, parsedate_to_datetime
from urllib.parse import urlsplit

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
    "card_headers",
    "legacy_agent_card",
    "legacy_card_bytes",
    "not_modified",
]

CARD_CACHE_CONTROL = "public, max-age=300"
_enc = msgspec.json.Encoder()


def build_card(agent: HostedAgent, base_url: str) -> AgentCard:
    """The 1.0 card of ``agent`` at ``base_url``: JSON-RPC 1.0 first, then REST, then 0.3
    (then gRPC when it is on)."""
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
    interfaces = [
        AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version="1.0"),
        AgentInterface(url=base_url, protocol_binding="HTTP+JSON", protocol_version="1.0"),
        AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version="0.3"),
    ]
    if agent.grpc_port is not None:
        interfaces.append(
            AgentInterface(
                url=_grpc_address(base_url, agent.grpc_port),
                protocol_binding="GRPC",
                protocol_version="1.0",
                tenant=agent.id,
            )
        )
    legacy = agent.card_v03_fields
    return AgentCard(
        name=spec.name or executor.name or spec.id,
        description=spec.description
        or executor.description
        or (type(executor).__doc__ or "").strip()
        or f"A2A agent {spec.id}",
        supported_interfaces=interfaces,
        version=spec.version,
        capabilities=AgentCapabilities(
            streaming=agent.streaming,
            push_notifications=False,
            extensions=agent.extensions or None,
            extended_agent_card=False,
        ),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=skills,
        url=base_url if legacy else None,
        preferred_transport="JSONRPC" if legacy else None,
        protocol_version="0.3.0" if legacy else None,
    )


def _grpc_address(base_url: str, port: int) -> str:
    """``host:port`` of the gRPC binding: the card's host (as clients reach it), gRPC's port."""
    host = urlsplit(base_url).hostname or "localhost"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


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


def card_headers(agent: HostedAgent, etag: str) -> dict[str, str]:
    """The caching headers of a card response."""
    return {
        "ETag": etag,
        "Last-Modified": formatdate(agent.card_modified, usegmt=True),
        "Cache-Control": CARD_CACHE_CONTROL,
    }


def not_modified(headers: Mapping[str, str], etag: str, modified: float) -> bool:
    """True if the request's ``If-None-Match`` (or, without it, ``If-Modified-Since``)
    says the client's copy is current (RFC 9110 section 13.2.2)."""
    if_none_match = headers.get("if-none-match")
    if if_none_match is not None:
        return if_none_match.strip() == "*" or etag in if_none_match
    since = headers.get("if-modified-since")
    if not since:
        return False
    try:
        when = parsedate_to_datetime(since).timestamp()
    except (TypeError, ValueError, IndexError):
        return False  # not an HTTP date: ignored, as RFC 9110 says
    return int(modified) <= when


async def _serve(request: Request, legacy: bool) -> Response:
    hub = hub_of(request)
    agent = agent_of(request, hub)
    aliased = "agent_id" not in request.scope["path_params"]  # the root alias: the root's URL
    url = base_url(request, hub, None if aliased else agent)
    body, etag = legacy_card_bytes(agent, url) if legacy else card_bytes(agent, url)
    headers = card_headers(agent, etag)
    if not_modified(request.headers, etag, agent.card_modified):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=JSON, headers=headers)


@guarded
async def agent_card(request: Request) -> Response:
    """``GET /.well-known/agent-card.json``: the 1.0 card (``If-None-Match`` and
    ``If-Modified-Since`` honoured)."""
    return await _serve(request, legacy=False)


@guarded
async def legacy_agent_card(request: Request) -> Response:
    """``GET /.well-known/agent.json``: the 0.1 card."""
    return await _serve(request, legacy=True)
