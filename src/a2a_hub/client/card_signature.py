"""Signed agent cards (A2A 1.0 §8.4): what a signature covers, and checking a remote card's.

A card's ``signatures`` are JWS with a detached payload: the RFC 8785 (JCS) canonical
JSON of the card without ``signatures`` (library ``rfc8785``).  Which JSON exactly is
where implementations differ: the official a2a-sdk parses the card into its 1.0
(protobuf) structure first, so the 0.3 top-level fields (``url``, ``preferredTransport``,
``protocolVersion``, ``security``, ``supportsAuthenticatedExtendedCard``…) and the 0.3
fields of each security scheme (``type``, ``in``, ``scheme``…) are not covered, and empty
values are dropped.  :func:`v10_form` is that form: the hub signs it (so the a2a-sdk's
verifier accepts the hub's cards), and :func:`signed_payloads` tries it and the card as
served (the spec's literal reading) when checking a remote card.

:class:`CardCheck` is the policy of a ``remote`` agent or of ``a2a-hub card``:
``card_signature = "off" | "verify-if-present" | "require"`` with the trusted keys in
``card_keys`` (a JWKS URL or a JWKS file).  A signature's ``jku`` is never followed: only
the trusted keys count, looked up by ``kid``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import httpx
import jwt
import rfc8785
from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKError, PyJWKSetError, PyJWTError

__all__ = [
    "ALGORITHMS",
    "POLICIES",
    "CardCheck",
    "CardSignatureError",
    "canonical",
    "signed_payloads",
    "v10_form",
]

#: Signature algorithms accepted on remote cards (never ``none`` nor HMAC).
ALGORITHMS = ["ES256", "ES384", "ES512", "EdDSA", "RS256", "PS256"]
POLICIES = ("off", "verify-if-present", "require")
Policy = Literal["off", "verify-if-present", "require"]

#: The 1.0 AgentCard's fields; nested objects that have 0.3 siblings are filtered too.
_CARD_FIELDS = {
    "name",
    "description",
    "supportedInterfaces",
    "provider",
    "version",
    "documentationUrl",
    "capabilities",
    "securitySchemes",
    "securityRequirements",
    "defaultInputModes",
    "defaultOutputModes",
    "skills",
    "iconUrl",
}
_CAPABILITY_FIELDS = {"streaming", "pushNotifications", "extensions", "extendedAgentCard"}
_SCHEME_FIELDS = {
    "apiKeySecurityScheme",
    "httpAuthSecurityScheme",
    "oauth2SecurityScheme",
    "openIdConnectSecurityScheme",
    "mtlsSecurityScheme",
}


class CardSignatureError(Exception):
    """A card failed its signature check; the message says why, in one line."""


def _clean(value: Any) -> Any:
    """Drop empty strings, lists and objects (recursively), as the a2a-sdk does."""
    if isinstance(value, dict):
        out = {k: c for k, v in value.items() if (c := _clean(v)) is not None}
        return out or None
    if isinstance(value, list):
        items = [c for v in value if (c := _clean(v)) is not None]
        return items or None
    if value is None or value == "":
        return None
    return value


def v10_form(card: dict[str, Any]) -> dict[str, Any]:
    """The card as a 1.0 reader parses it (0.3 fields and ``signatures`` left out, empty
    values dropped): what the hub signs, and what the a2a-sdk's verifier checks."""
    body = {k: v for k, v in card.items() if k in _CARD_FIELDS}
    caps = body.get("capabilities")
    if isinstance(caps, dict):
        caps = {k: v for k, v in caps.items() if k in _CAPABILITY_FIELDS}
        if isinstance(caps.get("extensions"), list):  # proto3 ``bool required``: no false
            caps["extensions"] = [
                {k: v for k, v in e.items() if not (k == "required" and v is False)}
                if isinstance(e, dict)
                else e
                for e in caps["extensions"]
            ]
        body["capabilities"] = caps
    schemes = body.get("securitySchemes")
    if isinstance(schemes, dict):
        body["securitySchemes"] = {
            name: {k: v for k, v in s.items() if k in _SCHEME_FIELDS} if isinstance(s, dict) else s
            for name, s in schemes.items()
        }
    return _clean(body) or {}


def canonical(value: Any) -> bytes:
    """RFC 8785 (JCS) bytes of a JSON value."""
    return rfc8785.dumps(value)


def signed_payloads(card: dict[str, Any]) -> list[bytes]:
    """The payloads a signature of ``card`` may cover: its 1.0 form (the a2a-sdk's
    reading, which the hub signs), then the card as served without ``signatures``."""
    literal = canonical({k: v for k, v in card.items() if k != "signatures"})
    v10 = canonical(v10_form(card))
    return [v10] if v10 == literal else [v10, literal]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _header(protected: str) -> dict[str, Any] | None:
    try:
        header = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
    except (binascii.Error, ValueError):
        return None
    return header if isinstance(header, dict) else None


KeyLoader = Callable[[], Awaitable[dict[str, Any]]]


class CardCheck:
    """The signature policy of one remote card: ``policy`` and the trusted keys
    (``keys``: a JWKS URL, ``https`` or an allow-listed host, or a JWKS file)."""

    def __init__(self, policy: str = "off", keys: str | None = None) -> None:
        if policy not in POLICIES:
            raise ValueError(f"card_signature must be one of {', '.join(POLICIES)}, not {policy!r}")
        if policy != "off" and not keys:
            raise ValueError(
                f"card_signature = {policy!r} needs card_keys = the signer's JWKS URL or file"
            )
        self.policy: str = policy
        self.keys = keys

    @property
    def active(self) -> bool:
        return self.policy != "off"

    async def _jwks(self, http: httpx.AsyncClient | None) -> PyJWKSet:
        source = self.keys or ""
        try:
            if source.startswith(("https://", "http://")):
                if http is None:
                    async with httpx.AsyncClient(timeout=10.0) as own:
                        response = await own.get(source)
                else:
                    response = await http.get(source)
                if response.status_code != 200:
                    raise CardSignatureError(
                        f"the trusted keys at {source} answered HTTP {response.status_code}"
                    )
                data = response.json()
            else:
                data = json.loads(await asyncio.to_thread(Path(source).read_text))
            return PyJWKSet.from_dict(data)
        except CardSignatureError:
            raise
        except httpx.HTTPError as exc:
            raise CardSignatureError(f"cannot fetch the trusted keys {source}: {exc}") from None
        except OSError as exc:
            raise CardSignatureError(f"cannot read the trusted keys {source}: {exc}") from None
        except (ValueError, PyJWKSetError, PyJWKError) as exc:
            raise CardSignatureError(f"the trusted keys {source} are not a JWKS: {exc}") from None

    async def verify(self, card: Any, source: str, http: httpx.AsyncClient | None = None) -> bool:
        """Check the card (raw JSON) fetched from ``source`` under the policy: ``True`` when
        a signature verified, ``False`` when none was checked (``off``, or none present
        under ``verify-if-present``).  Raises :class:`CardSignatureError` saying why."""
        if not self.active or not isinstance(card, dict):
            return False
        signatures = card.get("signatures")
        if not signatures:
            if self.policy == "require":
                raise CardSignatureError(
                    f"the card at {source} is not signed (card_signature = 'require')"
                )
            return False
        if not isinstance(signatures, list):
            raise CardSignatureError(f"the card at {source} has malformed signatures")
        keyset = await self._jwks(http)
        payloads = [_b64(p) for p in signed_payloads(card)]
        kids: list[str] = []
        for sig in signatures:
            if not isinstance(sig, dict):
                continue
            protected, signature = sig.get("protected"), sig.get("signature")
            if not isinstance(protected, str) or not isinstance(signature, str):
                continue
            header = _header(protected)
            if header is None:
                continue
            kid = str(header.get("kid"))
            kids.append(kid)
            key = _key(keyset, kid)
            if key is None:
                continue
            for payload in payloads:
                try:
                    jwt.api_jws.decode_complete(
                        f"{protected}.{payload}.{signature}", key.key, algorithms=ALGORITHMS
                    )
                except PyJWTError:
                    continue
                return True
        known = {k.key_id or "?" for k in keyset.keys}
        why = (
            "the card does not match its signature (changed after signing?)"
            if known & set(kids)
            else f"signed by kid {', '.join(kids) or 'none'}, trusted: {', '.join(sorted(known))}"
        )
        raise CardSignatureError(
            f"the card at {source} has no valid signature by the trusted keys {self.keys}: {why}"
        )


def _key(keyset: PyJWKSet, kid: str) -> PyJWK | None:
    for key in keyset.keys:
        if key.key_id == kid:
            return key
    return None
