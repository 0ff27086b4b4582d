"""Receiver side: check a push notification from an a2a-hub (or any A2A server using
the same scheme) before trusting it.

:func:`verify` checks, in order: the ``X-A2A-Notification-Token`` (when a token is
expected), the JWT in ``X-A2A-Notification-JWT`` (or ``Authorization: Bearer``):
its signature against the sender's published keys (a JWKS URL, fetched and cached,
refetched once when a key id is unknown, or keys given directly), ``aud`` = this
webhook's URL, ``exp``/``iat``, and ``request_body_sha256`` = the SHA-256 of the
exact body received; then returns the parsed event.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import jwt
import msgspec

from a2a_hub.protocol.types import StreamResponse

__all__ = ["NotificationError", "Verified", "verify"]

_JWKS_CACHE: dict[str, tuple[float, dict[str, Any]]] = {}
_JWKS_TTL = 300.0


class NotificationError(Exception):
    """A notification that must not be trusted; the message says why."""


class Verified(msgspec.Struct, frozen=True):
    """A verified notification: its claims, delivery id, event seq and the event."""

    claims: dict[str, Any]
    delivery_id: str
    seq: int | None
    event: StreamResponse | None
    #: The body as JSON when it is not a 1.0 ``StreamResponse`` (0.1/0.3 task shapes).
    data: Any = None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None


async def _fetch_jwks(url: str, refresh: bool) -> dict[str, Any]:
    cached = _JWKS_CACHE.get(url)
    if cached is not None and not refresh and time.monotonic() - cached[0] < _JWKS_TTL:
        return cached[1]
    try:
        async with httpx.AsyncClient(timeout=10.0, follow_redirects=False) as client:
            response = await client.get(url)
            response.raise_for_status()
            doc = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise NotificationError(f"cannot fetch the sender's keys from {url}: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise NotificationError(f"{url} is not a JWKS document (no keys list)")
    _JWKS_CACHE[url] = (time.monotonic(), doc)
    return doc


def _key_for(doc: Mapping[str, Any], kid: str | None) -> jwt.PyJWK | None:
    for entry in doc.get("keys", []):
        if isinstance(entry, dict) and (kid is None or entry.get("kid") == kid):
            return jwt.PyJWK(entry)
    return None


async def verify(
    body: bytes,
    headers: Mapping[str, str],
    *,
    audience: str | Sequence[str],
    jwks_url: str | None = None,
    keys: Mapping[str, Any] | None = None,
    token: str | None = None,
    leeway: float = 5.0,
) -> Verified:
    """Check one notification (see the module doc); raise :class:`NotificationError`.

    ``audience`` is this webhook's URL as the sender was given it; ``keys`` a JWKS
    document (``{"keys": [...]}``) when the keys are not fetched from ``jwks_url``;
    ``token`` the token given in the push config, if any.
    """
    if (jwks_url is None) == (keys is None):
        raise ValueError("give exactly one of jwks_url and keys")
    if token is not None:
        got = _header(headers, "X-A2A-Notification-Token") or ""
        if not hmac.compare_digest(got.encode(), token.encode()):
            raise NotificationError("X-A2A-Notification-Token does not match the config's token")
    signed = _header(headers, "X-A2A-Notification-JWT")
    if signed is None:
        auth = _header(headers, "Authorization") or ""
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value.count(".") == 2:
            signed = value.strip()
    if not signed:
        raise NotificationError("the notification carries no JWT (X-A2A-Notification-JWT)")
    try:
        kid = jwt.get_unverified_header(signed).get("kid")
    except jwt.PyJWTError as exc:
        raise NotificationError(f"malformed JWT: {exc}") from None
    if keys is not None:
        key = _key_for(keys, kid)
    else:
        assert jwks_url is not None
        key = _key_for(await _fetch_jwks(jwks_url, refresh=False), kid)
        if key is None:  # rotated since we fetched: once more
            key = _key_for(await _fetch_jwks(jwks_url, refresh=True), kid)
    if key is None:
        raise NotificationError(f"no published key has id {kid!r}")
    try:
        claims: dict[str, Any] = jwt.decode(
            signed,
            key,
            algorithms=["EdDSA", "ES256"],
            audience=audience,
            leeway=leeway,
            options={"require": ["exp", "iat", "aud", "jti"]},
        )
    except jwt.PyJWTError as exc:
        raise NotificationError(f"JWT rejected: {exc}") from None
    if claims["exp"] - claims["iat"] > 300 + leeway:
        raise NotificationError("JWT lives longer than 5 minutes")
    digest = hashlib.sha256(body).hexdigest()
    if not hmac.compare_digest(str(claims.get("request_body_sha256", "")), digest):
        raise NotificationError("the body's SHA-256 does not match the JWT's request_body_sha256")
    delivery = _header(headers, "X-A2A-Notification-Id") or str(claims["jti"])
    if delivery != claims["jti"]:
        raise NotificationError("X-A2A-Notification-Id differs from the JWT's jti")
    seq_text = _header(headers, "X-A2A-Event-Seq")
    seq = int(seq_text) if seq_text and seq_text.isdigit() else None
    ctype = (_header(headers, "Content-Type") or "").split(";")[0].strip().lower()
    try:
        if ctype == "application/a2a+json":
            return Verified(claims, delivery, seq, msgspec.json.decode(body, type=StreamResponse))
        return Verified(claims, delivery, seq, None, msgspec.json.decode(body))
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise NotificationError(f"the body is not a notification: {exc}") from None
