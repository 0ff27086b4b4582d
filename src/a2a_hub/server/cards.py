"""Agent cards: the 1.0 card (with 0.3 fields) and the legacy 0.1 card, with HTTP caching.

The 1.0 card also carries the 0.3 top-level fields ``url``, ``preferredTransport`` and
``protocolVersion``: a 0.3 client reads a card as 0.3 and needs them to find the agent at
all, while 1.0 clients ignore fields they do not know.  A deployment that wants a strictly
1.0 card turns them off with the setting ``card_v03_fields = false``
(``A2A_HUB_CARD_V03_FIELDS=false``); 0.3 clients then need a 1.0-aware card resolver.

Signatures (spec section 8.4): the 1.0 card (the one 0.3 clients read too) and the
extended card carry ``signatures``: one JWS with a detached payload, signed with the
hub's current signing key (the push notification keys: Ed25519, ``EdDSA``, rotating
with them), its protected header naming the key (``kid``) and the JWKS that lists it
(``jku``: the agent's ``/.well-known/jwks.json``).  The payload is the RFC 8785 form of
the card as a 1.0 reader parses it (:func:`a2a_hub.client.card_signature.v10_form`: the
0.3 fields and empty values left out), which is what the a2a-sdk's verifier checks.
An encoded card is cached per base URL and signing key, so it is signed again when it
changes or the key rotates.  The 0.1 card has no ``signatures`` field and is not signed.

Caching (spec section 8.6): ``Cache-Control``, a weak ``ETag`` (hash of the body) and
``Last-Modified`` (when the agent's card last changed in this process: start-up, or the
gRPC port being bound).  ``If-None-Match`` is honoured, else ``If-Modified-Since``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from email.utils import formatdate, parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from a2a_hub.client.card_signature import canonical, v10_form
from a2a_hub.engine.caller import Caller
from a2a_hub.protocol import v01
from a2a_hub.protocol.errors import InvalidParamsError, UnauthenticatedError
from a2a_hub.protocol.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a_hub.server.errors import JSON, protocol_endpoint
from a2a_hub.server.http import agent_of, base_url, hub_of
from a2a_hub.server.hub import HostedAgent

if TYPE_CHECKING:
    from a2a_hub.push.signing import SigningKey

__all__ = [
    "CARD_CACHE_CONTROL",
    "LIMITS_EXTENSION",
    "agent_card",
    "build_card",
    "card_bytes",
    "card_headers",
    "extended_card_body",
    "jwks",
    "legacy_agent_card",
    "legacy_card_bytes",
    "not_modified",
    "sign_card",
]

CARD_CACHE_CONTROL = "public, max-age=300"

#: The extension of the extended card stating the caller's ``[[limits]]`` (``params.limits``).
LIMITS_EXTENSION = "urn:a2a-hub:ext:limits:v1"
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
            push_notifications=True,
            extensions=agent.extensions or None,
            extended_agent_card=spec.extended_skills is not None,
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


#: The security schemes of an agent requiring API keys: the key in ``X-API-Key``, or
#: the same key as a bearer token (either satisfies the card's requirements).
_SCHEMES_10 = {
    "apiKey": SecurityScheme(
        api_key_security_scheme=APIKeySecurityScheme(
            location="header", name="X-API-Key", description="An a2a-hub API key (a2ah_...)"
        )
    ),
    "bearer": SecurityScheme(
        http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="Bearer", description="An a2a-hub API key (a2ah_...) as a bearer token"
        )
    ),
}
#: The 0.3 fields of the same schemes.  They say exactly what the 1.0 fields say
#: (description and scheme included): a 1.0 reader that maps 0.3 fields when it sees
#: ``type`` (the a2a-sdk's) then reads the same card as one that does not, which keeps
#: the card's signature valid for both.
_SCHEMES_03: dict[str, dict[str, Any]] = {
    "apiKey": {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": "An a2a-hub API key (a2ah_...)",
    },
    "bearer": {
        "type": "http",
        "scheme": "Bearer",
        "description": "An a2a-hub API key (a2ah_...) as a bearer token",
    },
}


def _oidc_schemes(url: str) -> tuple[SecurityScheme, dict[str, Any]]:
    """The ``openIdConnect`` scheme of an issuer's discovery ``url``: 1.0 and 0.3 forms."""
    description = "A bearer token (JWT) of this OpenID Connect issuer"
    scheme = SecurityScheme(
        open_id_connect_security_scheme={"openIdConnectUrl": url, "description": description}
    )
    # the 0.3 fields say what the 1.0 ones say (see _SCHEMES_03: signatures hold for both)
    legacy = {"type": "openIdConnect", "openIdConnectUrl": url, "description": description}
    return scheme, legacy


def secure_card(
    card: AgentCard,
    *,
    keys: bool = True,
    oidc_url: str | None = None,
    v03: bool = True,
) -> dict[str, Any]:
    """The card as JSON-ready builtins, listing the schemes the agent accepts: API keys
    (``keys``) and/or the ``openIdConnect`` scheme of ``oidc_url``.

    1.0: ``securitySchemes`` (``apiKeySecurityScheme``, ``httpAuthSecurityScheme``,
    ``openIdConnectSecurityScheme``) and ``securityRequirements`` (alternatives); with
    ``v03`` (the well-known card, read by 0.3 clients too) the same ``securitySchemes``
    entries also carry the OpenAPI-style ``type``/``in``/``name``/``scheme``/
    ``openIdConnectUrl`` fields, and ``security`` lists the alternatives (the 1.0 SDK's card
    resolver maps those legacy fields itself).  Without ``v03`` (the answer of the 1.0
    method ``GetExtendedAgentCard``) the schemes are strictly 1.0: a protobuf parser that
    rejects unknown fields reads them.
    """
    schemes: dict[str, SecurityScheme] = dict(_SCHEMES_10) if keys else {}
    legacy: dict[str, dict[str, Any]] = dict(_SCHEMES_03) if keys else {}
    if oidc_url is not None:
        schemes["oidc"], legacy["oidc"] = _oidc_schemes(oidc_url)
    card.security_schemes = schemes
    card.security_requirements = [
        SecurityRequirement(schemes={name: StringList()}) for name in schemes
    ]
    body: dict[str, Any] = msgspec.to_builtins(card)
    if v03:
        for name, extra in legacy.items():
            body["securitySchemes"][name].update(extra)
        body["security"] = [{name: []} for name in legacy]
    return body


def _etag(body: bytes) -> str:
    return 'W/"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _remember(agent: HostedAgent, key: str, body: bytes) -> tuple[bytes, str]:
    if len(agent.cards) >= 32:  # base URLs come from Host headers: keep the cache bounded
        agent.cards.clear()
    agent.cards[key] = entry = (body, _etag(body))
    return entry


def _card_json(
    card: AgentCard,
    secured: bool,
    extended: bool,
    key: SigningKey | None = None,
    *,
    keys: bool = True,
    oidc_url: str | None = None,
    v03: bool = True,
) -> Any:
    if not secured and not extended and key is None:
        return card
    body: dict[str, Any] = (
        secure_card(card, keys=keys, oidc_url=oidc_url, v03=v03)
        if secured
        else msgspec.to_builtins(card)
    )
    if extended and v03:  # the 0.3 name of capabilities.extendedAgentCard
        body["supportsAuthenticatedExtendedCard"] = True
    if key is not None:
        sign_card(body, key, _jwks_url(card))
    return body


def _schemes_of(hub: Any, agent: HostedAgent) -> tuple[bool, bool, str | None]:
    """Whether the agent needs a credential, takes API keys, and the OIDC discovery URL
    when it takes tokens."""
    policy = hub.auth
    oidc_url = policy.oidc.discovery_url if policy.accepts_tokens(agent.id) else None
    return policy.requires_key(agent.id), policy.accepts_keys(agent.id), oidc_url


def _jwks_url(card: AgentCard) -> str:
    """The JWKS beside the card: under the agent's URL (its first interface's)."""
    return card.supported_interfaces[0].url.rstrip("/") + "/.well-known/jwks.json"


def sign_card(body: dict[str, Any], key: SigningKey, jku: str) -> dict[str, Any]:
    """Add ``signatures`` to the card ``body``: one JWS (``EdDSA``, detached payload: the
    RFC 8785 form of :func:`~a2a_hub.client.card_signature.v10_form`) by ``key``."""
    body.pop("signatures", None)
    digest = hashlib.sha256(_enc.encode(body)).digest()
    cached = _SIGNED.get((key.kid, jku, digest))
    if cached is None:  # canonical JSON and Ed25519 cost ~0.3 ms: once per content and key
        header = {"alg": "EdDSA", "kid": key.kid, "jku": jku, "typ": "JOSE"}
        protected = _b64(canonical(header))
        signing_input = protected.encode() + b"." + _b64(canonical(v10_form(body))).encode()
        cached = {"protected": protected, "signature": _b64(key.private.sign(signing_input))}
        if len(_SIGNED) >= 256:
            _SIGNED.clear()
        _SIGNED[(key.kid, jku, digest)] = cached
    body["signatures"] = [dict(cached)]
    return body


#: Signatures by (key id, JWKS URL, SHA-256 of the card's JSON): the extended card, built
#: per request, is signed once per content.
_SIGNED: dict[tuple[str, str, bytes], dict[str, str]] = {}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def card_bytes(
    agent: HostedAgent,
    base_url: str,
    secured: bool = False,
    key: SigningKey | None = None,
    *,
    keys: bool = True,
    oidc_url: str | None = None,
) -> tuple[bytes, str]:
    """Encoded 1.0 card and its ETag, cached per base URL and signing key; ``secured``: the
    agent requires a credential (the card lists the schemes, see :func:`secure_card`: API
    keys with ``keys``, the ``openIdConnect`` scheme of ``oidc_url``); ``key``: the key
    signing it (``None``: unsigned)."""
    cache_key = f"1.0 {secured:d}{keys:d}{oidc_url} {key.kid if key else '-'} {base_url}"
    cached = agent.cards.get(cache_key)
    if cached is None:
        card = build_card(agent, base_url)
        extended = agent.spec.extended_skills is not None
        body = _enc.encode(_card_json(card, secured, extended, key, keys=keys, oidc_url=oidc_url))
        cached = _remember(agent, cache_key, body)
    return cached


def extended_card_body(
    request: Request, agent: HostedAgent, caller: Caller, *, v03: bool = False
) -> Any:
    """The extended card (the public one plus ``extended_skills``, and the caller's
    ``[[limits]]`` as the capability extension :data:`LIMITS_EXTENSION`) for an
    authenticated caller: -32007 when none is configured, 401 for an anonymous caller.
    Strictly 1.0 (``v03``: with the 0.3 fields, for the 0.3 method)."""
    extra = agent.spec.extended_skills
    if extra is None:
        raise agent.no_extended_card()
    if caller.anonymous:
        raise UnauthenticatedError(
            "The extended agent card is for authenticated callers: send X-API-Key: KEY or "
            "Authorization: Bearer KEY"
        )
    hub = hub_of(request)
    aliased = "agent_id" not in request.scope["path_params"]
    url = base_url(request, hub, None if aliased else agent)
    card = build_card(agent, url)
    try:
        card.skills = [*card.skills, *(msgspec.convert(s, AgentSkill) for s in extra)]
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(f"agent {agent.id!r}: bad extended_skills: {exc}") from None
    gate = agent.engine.gate
    describe = getattr(gate, "describe", None)
    if describe is not None:
        mine = describe(caller)
        if mine:
            card.capabilities.extensions = [
                *(card.capabilities.extensions or []),
                AgentExtension(
                    uri=LIMITS_EXTENSION,
                    description="The rate limits and running-task caps of this caller",
                    params={"limits": mine},
                ),
            ]
    if not v03:
        card.url = card.preferred_transport = card.protocol_version = None
    secured, keys, oidc_url = _schemes_of(hub, agent)
    key = hub.signing_keys.current
    return _card_json(card, secured, True, key, keys=keys, oidc_url=oidc_url, v03=v03)


def legacy_card_bytes(
    agent: HostedAgent, base_url: str, secured: bool = False
) -> tuple[bytes, str]:
    """Encoded 0.1 card (``/.well-known/agent.json``) and its ETag."""
    key = f"0.1 {secured:d} {base_url}"
    cached = agent.cards.get(key)
    if cached is None:
        card = build_card(agent, base_url)
        if secured:
            secure_card(card)
        body = _enc.encode(v01.encode_card(card, base_url))
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
    secured, keys, oidc_url = _schemes_of(hub, agent)
    body, etag = (
        legacy_card_bytes(agent, url, secured)
        if legacy
        else card_bytes(agent, url, secured, hub.signing_keys.current, keys=keys, oidc_url=oidc_url)
    )
    headers = card_headers(agent, etag)
    if not_modified(request.headers, etag, agent.card_modified):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=JSON, headers=headers)


@protocol_endpoint
async def agent_card(request: Request) -> Response:
    """``GET /.well-known/agent-card.json``: the 1.0 card (``If-None-Match`` and
    ``If-Modified-Since`` honoured)."""
    return await _serve(request, legacy=False)


@protocol_endpoint
async def legacy_agent_card(request: Request) -> Response:
    """``GET /.well-known/agent.json``: the 0.1 card."""
    return await _serve(request, legacy=True)


@protocol_endpoint
async def jwks(request: Request) -> Response:
    """``GET /.well-known/jwks.json`` (also under an agent's URL): the public keys that
    sign push notifications."""
    hub = hub_of(request)
    if "agent_id" in request.path_params:
        agent_of(request, hub)
    await hub.signing_keys.refresh()  # another instance may have rotated them
    body = _enc.encode(hub.signing_keys.jwks())
    return Response(body, media_type=JSON, headers={"Cache-Control": "public, max-age=60"})
