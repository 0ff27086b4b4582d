"""Authentication: the caller of a request from its ``X-API-Key`` / Bearer key or token.

:class:`ApiKeyMiddleware` is the hub's :class:`~a2a_hub.server.caller.CallerMiddleware`.
For an agent that requires keys (``auth = "api-key"`` on the agent, or the
``auth.require_keys`` setting) a request without a key, or with an unknown,
revoked or expired one, is refused with 401 (``WWW-Authenticate`` and a protocol
error body), and a key that does not open the agent with 403.  The agent cards
and the chat page (which asks for the key itself) stay public.  On an open agent
a request without a key is :data:`ANONYMOUS`; one with a key is that key's caller
(so its tasks are its own), and a bad key is still refused.

WebSocket upgrades: the key may also come in the query string or a subprotocol
(browsers cannot set headers), or, on an agent that requires keys, in the socket's
first frame (``{"action": "authenticate", "api_key": KEY}``, see
:mod:`a2a_hub.server.ws`); an open agent never needs one.

Routes of the hub itself rather than of an agent (the admin API, marked with
:data:`~a2a_hub.server.caller.HUB_ROUTE`) get the key's caller without any agent's
policy: :data:`ANONYMOUS` without a key, 401 for a bad key; the route checks the
scopes it needs (the admin API: ``admin``).

The policy itself, which agents need a key, is the hub's :class:`KeyPolicy`
(``hub.auth``), used by every binding (HTTP here, gRPC metadata, WebSocket frames).

OpenID Connect: on a hub with ``auth.oidc_issuer``, a bearer credential shaped like a JWT
is checked by :class:`~a2a_hub.server.oidc.OidcVerifier` (agents with ``auth = "oidc"``
or ``"api-key|oidc"``, open agents, the hub's own routes); its 401 answers point at the
agent's RFC 9728 metadata (``WWW-Authenticate: Bearer … resource_metadata="…"``).

Looked-up keys are cached in the process for ``auth.cache_seconds`` (1 s by
default): a key revoked on another instance sharing the registry stops working
here within that bound; revoked through this process's :class:`Authenticator`
(admin API), at once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from urllib.parse import parse_qs

from starlette.types import Scope

from a2a_hub.engine.caller import ANONYMOUS, Caller
from a2a_hub.protocol.errors import PermissionDeniedError, UnauthenticatedError
from a2a_hub.registry import KeyInfo, Registry
from a2a_hub.server.caller import KEY_IN_FIRST_FRAME, CallerMiddleware
from a2a_hub.server.hosted import HostedAgent
from a2a_hub.server.oidc import OidcVerifier, looks_like_jwt
from a2a_hub.server.scope import HUB_ROUTE
from a2a_hub.settings import AuthSettings

__all__ = [
    "KEY_SUBPROTOCOL",
    "RESOURCE_METADATA_PATH",
    "ApiKeyMiddleware",
    "Authenticator",
    "KeyPolicy",
    "authenticate",
    "key_of",
]

#: Served without a key: the public card, and the public keys that sign it (and push).
_PUBLIC_SUFFIXES = (
    "/.well-known/agent-card.json",
    "/.well-known/agent.json",
    "/.well-known/jwks.json",
)
#: Where the RFC 9728 protected-resource metadata of an agent is served (+ ``/a2a/{id}``).
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
_CHAT_FILES = ("/chat/chat.js", "/chat/chat.css")


#: The subprotocol prefix a browser offers its key with (``a2a-key.<key>``).
KEY_SUBPROTOCOL = "a2a-key."


def key_of(scope: Scope) -> str | None:
    """The API key a request carries (``X-API-Key`` or ``Authorization: Bearer``), if any.

    A WebSocket upgrade may also carry it where a browser can put it: the query string
    (``?api_key=KEY``) or a subprotocol ``a2a-key.<KEY>`` offered beside ``a2a-hub``.
    """
    bearer: str | None = None
    for name, value in scope["headers"]:
        if name == b"x-api-key":
            return value.decode("latin-1").strip() or None
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                bearer = token.strip() or None
    if bearer is not None or scope["type"] != "websocket":
        return bearer
    for offered in scope.get("subprotocols") or ():
        if offered.startswith(KEY_SUBPROTOCOL):
            return offered[len(KEY_SUBPROTOCOL) :].strip() or None
    query = scope.get("query_string", b"").decode("latin-1")
    found = parse_qs(query).get("api_key")
    return found[0].strip() or None if found else None


class Authenticator:
    """Turns keys into callers through the registry, with a short in-process cache."""

    def __init__(self, registry: Registry, *, cache_seconds: float = 1.0) -> None:
        self.registry = registry
        self.cache_seconds = cache_seconds
        self._cache: dict[str, tuple[float, KeyInfo | None, Caller | None]] = {}

    def forget(self) -> None:
        """Drop every cached lookup (after a revocation through this process)."""
        self._cache.clear()

    async def caller(self, key: str) -> Caller:
        """The caller of a usable key, or :class:`UnauthenticatedError`."""
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None and now - cached[0] < self.cache_seconds:
            _, info, caller = cached
        else:
            info = await self.registry.lookup_key(key)
            caller = None
            if info is not None:
                caller = Caller(
                    principal=info.principal,
                    key_id=info.id,
                    scopes=frozenset(info.scopes),
                    agents=None if info.agents is None else frozenset(info.agents),
                )
            if self.cache_seconds > 0:
                if len(self._cache) > 10_000:
                    self._cache.clear()
                self._cache[key] = (now, info, caller)
        if info is None or caller is None:
            raise UnauthenticatedError("Unknown API key")
        if (info.expires_at is not None or info.revoked_at is not None) and not info.usable(
            time.time()
        ):
            what = "revoked" if info.revoked_at is not None else "expired"
            raise UnauthenticatedError(f"This API key was {what}; ask for a new one")
        return caller


class KeyPolicy:
    """The hub's auth policy: which agents need a credential, and the caller of a request.

    ``agents`` is the hub's live table (read at each call, so agents added later follow
    their own ``auth``); ``authenticator`` is ``None`` on a hub without a registry, ``oidc``
    ``None`` on a hub without an OpenID Connect issuer.  A credential shaped like a JWT
    goes to ``oidc`` on an agent that accepts tokens (``auth = "oidc"`` or
    ``"api-key|oidc"``, or an open one), any other to the API keys.
    """

    def __init__(
        self,
        settings: AuthSettings,
        agents: Mapping[str, HostedAgent],
        authenticator: Authenticator | None = None,
        oidc: OidcVerifier | None = None,
    ) -> None:
        self.settings = settings
        self.agents = agents
        self.authenticator = authenticator
        self.oidc = oidc

    def _auth(self, agent_id: str | None) -> str | None:
        agent = self.agents.get(agent_id) if agent_id is not None else None
        return agent.spec.auth if agent is not None else None

    def requires_key(self, agent_id: str | None) -> bool:
        """Whether requests to that agent need a credential (an API key or a token)."""
        if self.settings.require_keys:
            return True
        return self._auth(agent_id) is not None

    def accepts_keys(self, agent_id: str | None) -> bool:
        """Whether the agent takes API keys (every agent but an ``oidc``-only one)."""
        return self._auth(agent_id) != "oidc"

    def accepts_tokens(self, agent_id: str | None) -> bool:
        """Whether the agent takes OIDC bearer tokens (``oidc``, ``api-key|oidc``)."""
        auth = self._auth(agent_id)
        return self.oidc is not None and auth is not None and "oidc" in auth

    def challenge(self, agent_id: str | None) -> str | None:
        """The RFC 9728 resource-metadata path for a 401 of that agent (``None``: it takes
        no tokens)."""
        if agent_id is None or not self.accepts_tokens(agent_id):
            return None
        return f"{RESOURCE_METADATA_PATH}/a2a/{agent_id}"

    def _refusal(self, agent_id: str | None, err: UnauthenticatedError) -> UnauthenticatedError:
        """``err`` carrying the agent's resource-metadata pointer (for ``WWW-Authenticate``)."""
        pointer = self.challenge(agent_id)
        if pointer is not None:
            err.data = {**(err.data or {}), "resourceMetadata": pointer}
        return err

    @property
    def open(self) -> bool:
        """True when no agent requires an API key (anyone may call anything)."""
        return not self.settings.require_keys and not any(a.spec.auth for a in self.agents.values())

    async def caller(self, agent_id: str | None, key: str | None) -> Caller:
        """The caller of a request to ``agent_id`` carrying ``key`` (``None``: no key):
        :data:`ANONYMOUS` on an open agent without a key, the key's caller, or
        :class:`UnauthenticatedError` (401 / gRPC UNAUTHENTICATED) /
        :class:`PermissionDeniedError` (403 / PERMISSION_DENIED)."""
        try:
            return await self._caller(agent_id, key)
        except UnauthenticatedError as err:
            raise self._refusal(agent_id, err) from None

    async def _caller(self, agent_id: str | None, key: str | None) -> Caller:
        if key is None:
            if not self.requires_key(agent_id):
                return ANONYMOUS
            if not self.accepts_keys(agent_id):
                raise UnauthenticatedError(
                    f"Agent {agent_id!r} requires an OpenID Connect bearer token: send "
                    "Authorization: Bearer TOKEN"
                )
            raise UnauthenticatedError(
                f"Agent {agent_id!r} requires an API key: send X-API-Key: KEY or "
                "Authorization: Bearer KEY"
            )
        oidc = self.oidc
        if oidc is not None and looks_like_jwt(key) and self._auth(agent_id) != "api-key":
            return await oidc.caller(key)
        if not self.accepts_keys(agent_id):
            raise UnauthenticatedError(
                f"Agent {agent_id!r} accepts OpenID Connect bearer tokens only, not API keys"
            )
        authenticator = self.authenticator
        if authenticator is None:
            if not self.requires_key(agent_id):
                return ANONYMOUS  # an open hub without a registry ignores keys
            raise UnauthenticatedError("Unknown API key (this hub has no API keys)")
        caller = await authenticator.caller(key)
        if caller.agents is not None and agent_id not in caller.agents:
            raise PermissionDeniedError(f"This API key does not open agent {agent_id!r}")
        return caller

    async def key_caller(self, key: str | None) -> Caller:
        """The caller of a request to the hub itself (no agent): :data:`ANONYMOUS` without
        a key or on a hub without API keys, else the key's caller or
        :class:`UnauthenticatedError`."""
        if key is None:
            return ANONYMOUS
        if self.oidc is not None and looks_like_jwt(key):
            return await self.oidc.caller(key)
        if self.authenticator is None:
            return ANONYMOUS
        return await self.authenticator.caller(key)


async def authenticate(policy: KeyPolicy, agent_id: str | None, key: str | None) -> Caller:
    """The caller of a request to ``agent_id`` carrying ``key``, for any transport (HTTP
    here; gRPC metadata, WebSocket frames): :meth:`KeyPolicy.caller`."""
    return await policy.caller(agent_id, key)


class ApiKeyMiddleware(CallerMiddleware):
    """The caller of each agent request from its API key (see the module's docstring)."""

    async def identify(self, scope: Scope) -> Caller:
        """ANONYMOUS on open agents without a key and for the public cards; the key's
        caller, or 401 / 403 (:meth:`KeyPolicy.caller`).  On the hub's own routes
        (:data:`HUB_ROUTE`): the key's caller, ANONYMOUS without one, 401 for a bad one."""
        hub = scope["app"].state.hub  # the app's Hub (server/hub.py)
        policy: KeyPolicy = hub.auth
        if scope.get(HUB_ROUTE):
            return await policy.key_caller(key_of(scope))
        if _public(scope):
            return ANONYMOUS
        key = key_of(scope)
        agent_id: str | None = scope["path_params"].get("agent_id")
        if agent_id is None:
            agent_id = hub.default_agent_id
        if key is None and not policy.requires_key(agent_id):
            return ANONYMOUS  # what policy.caller answers, without its two coroutines
        if key is None and scope["type"] == "websocket":
            # the upgrade carries no key: the socket's first frame must (``authenticate``);
            # until then the request has no caller (``caller_of`` refuses it)
            state = scope.setdefault("state", {})
            state[KEY_IN_FIRST_FRAME] = True
            return ANONYMOUS
        return await policy.caller(agent_id, key)


def _public(scope: Scope) -> bool:
    """The agent card and the chat page with its two files (the page asks for the key
    itself, and sends it with every action); nothing else of an agent."""
    if scope.get("method") not in ("GET", "HEAD"):
        return False
    path: str = scope["path"]
    if path.endswith(_PUBLIC_SUFFIXES):
        return True
    route = path[len(scope.get("root_path", "")) :]  # the path inside the agent's mount
    return route == "/chat" or route in _CHAT_FILES
