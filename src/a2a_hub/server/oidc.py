"""OpenID Connect callers: a bearer JWT of ``auth.oidc_issuer`` becomes a :class:`Caller`.

:class:`OidcVerifier` checks a token with PyJWT (already the hub's JWT library, for push
notifications: one well-kept library, no second JOSE stack): the signature with a key
of the issuer's JWKS chosen by the token's ``kid``, ``iss``, ``aud``, ``exp`` and ``nbf``
(``auth.oidc_leeway`` seconds of clock skew), and the algorithm against an allow-list of
asymmetric ones matching the key's type (never ``none``, never an HMAC keyed by a
public key).  The JWKS comes from ``auth.oidc_jwks_url``, else from the ``jwks_uri`` of the
issuer's ``/.well-known/openid-configuration`` (whose ``issuer`` must be the configured
one); it is fetched on first use and again when a token names a ``kid`` it does not hold
(at most once per ``refresh_interval``).  The issuer must be ``https``, except on a
loopback host (development, tests).

The caller is the token's ``sub``; its scopes (``scope``, space-separated, or ``scp``)
grant the hub's key scopes through ``auth.oidc_scopes`` (``invoke=NAME,read-all=NAME,
admin=NAME``).  A verified token is kept until its ``exp`` (bounded cache), so the
hot path of a client reusing its token is one dictionary lookup.

:class:`~a2a_hub.server.auth.KeyPolicy` asks this verifier for credentials shaped like a
JWT on agents with ``auth = "oidc"`` or ``"api-key|oidc"`` (and on open agents and the
hub's own routes when an issuer is configured): every binding gets it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt

from a2a_hub.engine.caller import Caller
from a2a_hub.protocol.errors import UnauthenticatedError
from a2a_hub.settings import AuthSettings, SettingsError

__all__ = ["ALGORITHMS", "OidcVerifier", "looks_like_jwt", "scope_map"]

#: The accepted algorithms and the JWK key type each needs: asymmetric only.
ALGORITHMS: dict[str, str] = {
    "RS256": "RSA",
    "RS384": "RSA",
    "RS512": "RSA",
    "PS256": "RSA",
    "PS384": "RSA",
    "PS512": "RSA",
    "ES256": "EC",
    "ES384": "EC",
    "ES512": "EC",
    "EdDSA": "OKP",
}

_CACHE_MAX = 10_000


def looks_like_jwt(credential: str) -> bool:
    """A compact JWS (``header.payload.signature``, the header base64url JSON): what an
    API key never is."""
    return credential.startswith("eyJ") and credential.count(".") == 2


def scope_map(text: str) -> dict[str, str]:
    """``invoke=a2a.invoke,read-all=a2a.read`` → token scope → hub scope."""
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        ours, eq, theirs = part.partition("=")
        ours = ours.strip()
        if not eq or ours not in ("invoke", "read-all", "admin") or not theirs.strip():
            raise SettingsError(
                f"auth.oidc_scopes {text!r}: write invoke=NAME,read-all=NAME,admin=NAME"
            )
        out[theirs.strip()] = ours
    return out


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_issuer(issuer: str) -> str:
    """The issuer URL without a trailing slash; https unless its host is a loopback one."""
    parts = urlsplit(issuer)
    if parts.scheme != "https" and not (parts.scheme == "http" and _loopback(parts.hostname or "")):
        raise SettingsError(
            f"auth.oidc_issuer {issuer!r} must be an https:// URL (http:// only on a "
            "loopback host, for development)"
        )
    return issuer.rstrip("/")


class OidcVerifier:
    """Bearer tokens of one issuer → callers (see the module's docstring)."""

    def __init__(
        self,
        settings: AuthSettings,
        *,
        refresh_interval: float = 10.0,
    ) -> None:
        if not settings.oidc_issuer or not settings.oidc_audience:
            raise SettingsError("OIDC needs both auth.oidc_issuer and auth.oidc_audience")
        self.issuer = check_issuer(settings.oidc_issuer)
        self.audience = settings.oidc_audience
        self.jwks_url = settings.oidc_jwks_url
        self.leeway = settings.oidc_leeway
        self.scopes = scope_map(settings.oidc_scopes)
        self.refresh_interval = refresh_interval
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched = -1e9
        self._lock = asyncio.Lock()
        self._cache: dict[str, tuple[float, Caller]] = {}

    @property
    def discovery_url(self) -> str:
        """The issuer's OpenID configuration (the card's ``openIdConnectUrl``)."""
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def scopes_supported(self) -> list[str]:
        """The token scopes that grant something here."""
        return sorted(self.scopes)

    async def caller(self, token: str) -> Caller:
        """The caller of a valid token, else :class:`UnauthenticatedError` saying why."""
        now = time.time()
        cached = self._cache.get(token)
        if cached is not None and now < cached[0]:
            return cached[1]
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise _refused(f"not a JWT ({exc})") from None
        alg = header.get("alg")
        kty = ALGORITHMS.get(alg) if isinstance(alg, str) else None
        if kty is None:
            raise _refused(f"algorithm {alg!r} is not accepted (one of {', '.join(ALGORITHMS)})")
        kid = header.get("kid")
        key = await self._key(kid if isinstance(kid, str) else None)
        if key.key_type != kty:
            raise _refused(f"key {kid!r} is a {key.key_type} key, not one for {alg}")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[str(alg)],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.InvalidTokenError as exc:
            raise _refused(str(exc) or type(exc).__name__) from None
        caller = Caller(principal=str(claims["sub"]), scopes=self._granted(claims))
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[token] = (float(claims["exp"]), caller)
        return caller

    def _granted(self, claims: dict[str, Any]) -> frozenset[str]:
        raw = claims.get("scope", claims.get("scp", ""))
        names = raw.split() if isinstance(raw, str) else [str(s) for s in raw or ()]
        return frozenset(self.scopes[n] for n in names if n in self.scopes)

    async def _key(self, kid: str | None) -> jwt.PyJWK:
        """The issuer's key ``kid`` (the only key when the token names none and the JWKS has
        one), fetching the JWKS when unknown and not fetched within ``refresh_interval``."""
        found = self._pick(kid)
        if found is not None:
            return found
        async with self._lock:
            found = self._pick(kid)
            if found is None and time.monotonic() - self._fetched >= self.refresh_interval:
                await self._fetch()
                found = self._pick(kid)
        if found is None:
            raise _refused(f"unknown signing key {kid!r} (not in the issuer's JWKS)")
        return found

    def _pick(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is not None:
            return self._keys.get(kid)
        keys = list(self._keys.values())
        return keys[0] if len(keys) == 1 else None

    async def _fetch(self) -> None:
        self._fetched = time.monotonic()
        try:
            async with httpx.AsyncClient(timeout=5.0, follow_redirects=False) as http:
                url = self.jwks_url or await self._discover(http)
                reply = await http.get(url)
                reply.raise_for_status()
                jwks = reply.json()
            keys: dict[str, jwt.PyJWK] = {}
            for index, entry in enumerate(jwks.get("keys", [])):
                if entry.get("use", "sig") != "sig" or entry.get("kty") not in ("RSA", "EC", "OKP"):
                    continue
                try:
                    key = jwt.PyJWK(entry)
                except jwt.PyJWTError:
                    continue  # a key of a kind this verifier does not use
                keys[entry.get("kid") or f"#{index}"] = key
        except (httpx.HTTPError, ValueError, AttributeError, TypeError) as exc:
            raise _refused(f"the issuer's keys could not be read ({exc})") from None
        self._keys = keys

    async def _discover(self, http: httpx.AsyncClient) -> str:
        reply = await http.get(self.discovery_url)
        reply.raise_for_status()
        config = reply.json()
        if str(config.get("issuer", "")).rstrip("/") != self.issuer:
            raise ValueError(f"the discovery document names issuer {config.get('issuer')!r}")
        url = config.get("jwks_uri")
        if not isinstance(url, str) or not url:
            raise ValueError("the discovery document has no jwks_uri")
        return url


def _refused(why: str) -> UnauthenticatedError:
    return UnauthenticatedError(f"Bearer token refused: {why}", data={"error": "invalid_token"})
