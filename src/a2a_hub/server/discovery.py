"""Discovery documents of the hub: the AI catalog and the RFC 9728 resource metadata.

``GET /.well-known/ai-catalog.json`` (``application/ai-catalog+json``, the AI Catalog
format of the Agent-Card project that A2A points hosts of many agents to): one entry per
agent the caller may see — without credentials the open ones, with an API key or token
also those it can reach (a key naming agents reaches those; ``auth = "oidc"`` agents
need a token, ``auth = "api-key"`` ones a key) — each with its card's URL and media type
(``application/a2a-agent-card+json``), then the registry's MCP servers marked public
(streamable HTTP ones: their URL, type ``application/mcp-server+json``).

``GET /.well-known/oauth-protected-resource/a2a/{agent_id}`` (RFC 9728): for an agent
taking OpenID Connect tokens, its resource URL, the issuer as authorization server, the
token scopes that grant something here, and the bearer method (the header).  A 401 of
that agent points here (``WWW-Authenticate: Bearer resource_metadata="…"``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from a2a_hub.engine.caller import Caller
from a2a_hub.protocol.errors import AgentNotFoundError
from a2a_hub.server.auth import KeyPolicy, key_of
from a2a_hub.server.errors import JSON, protocol_endpoint
from a2a_hub.server.http import base_url, hub_of
from a2a_hub.server.hub import HostedAgent

__all__ = ["AI_CATALOG", "CARD_TYPE", "ai_catalog", "protected_resource", "reachable"]

#: The catalog's media type.
AI_CATALOG = "application/ai-catalog+json"
#: The type of an A2A agent card entry.
CARD_TYPE = "application/a2a-agent-card+json"
#: The type of an MCP server entry (its streamable HTTP endpoint).
MCP_TYPE = "application/mcp-server+json"

_enc = msgspec.json.Encoder()


def reachable(policy: KeyPolicy, agent: HostedAgent, caller: Caller, token: bool) -> bool:
    """Whether ``caller`` (identified by a token when ``token``, else by a key or nobody)
    may call ``agent``."""
    if not policy.requires_key(agent.id):
        return True
    if caller.anonymous:
        return False
    if token:
        return policy.accepts_tokens(agent.id)
    if not policy.accepts_keys(agent.id):
        return False
    return caller.agents is None or agent.id in caller.agents


@protocol_endpoint
async def ai_catalog(request: Request) -> Response:
    """``GET /.well-known/ai-catalog.json``: the agents the caller may reach, the public MCP
    servers (see the module's docstring); a bad credential is 401."""
    hub = hub_of(request)
    policy: KeyPolicy = hub.auth
    credential = key_of(request.scope)
    caller = await policy.key_caller(credential)
    token = credential is not None and caller.key_id is None and not caller.anonymous
    root = base_url(request, hub, None)
    domain = urlsplit(root).hostname or "localhost"
    entries: list[dict[str, Any]] = []
    for agent in sorted(hub.agents.values(), key=lambda a: a.id):
        if not reachable(policy, agent, caller, token):
            continue
        spec = agent.spec
        entry: dict[str, Any] = {
            "identifier": f"urn:air:{domain}:a2a:{agent.id}",
            "displayName": spec.name or agent.executor.name or agent.id,
            "type": CARD_TYPE,
            "url": f"{root}/a2a/{agent.id}/.well-known/agent-card.json",
            "tags": ["a2a", spec.kind],
        }
        description = spec.description or agent.executor.description
        if description:
            entry["description"] = description
        entries.append(entry)
    if hub.registry is not None:
        for server in await hub.registry.list_mcp_servers():
            if server.public and server.url:
                entries.append(
                    {
                        "identifier": f"urn:air:{domain}:mcp:{server.name}",
                        "displayName": server.name,
                        "type": MCP_TYPE,
                        "url": server.url,
                        "tags": ["mcp"],
                    }
                )
    body = {"specVersion": "1.0", "host": {"displayName": "a2a-hub"}, "entries": entries}
    return Response(
        _enc.encode(body),
        media_type=AI_CATALOG,
        headers={"Cache-Control": "private, max-age=30", "Vary": "Authorization, X-API-Key"},
    )


@protocol_endpoint
async def protected_resource(request: Request) -> Response:
    """``GET /.well-known/oauth-protected-resource/a2a/{agent_id}``: RFC 9728 metadata."""
    hub = hub_of(request)
    policy: KeyPolicy = hub.auth
    agent_id = request.path_params["agent_id"]
    agent = hub.agent(agent_id)
    if policy.oidc is None or not policy.accepts_tokens(agent_id):
        raise AgentNotFoundError(
            f"Agent {agent_id!r} takes no OAuth tokens (auth = 'oidc' or 'api-key|oidc')",
            data={"agentId": agent_id},
        )
    body = {
        "resource": base_url(request, hub, agent),
        "authorization_servers": [policy.oidc.issuer],
        "scopes_supported": policy.oidc.scopes_supported,
        "bearer_methods_supported": ["header"],
        "resource_name": agent.spec.name or agent.executor.name or agent.id,
    }
    return Response(
        _enc.encode(body), media_type=JSON, headers={"Cache-Control": "public, max-age=300"}
    )
