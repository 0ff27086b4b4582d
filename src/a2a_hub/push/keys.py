"""The hub's notification signing keys (Ed25519, JWS ``EdDSA``) and their JWKS.

Every notification carries a JWT signed with the current key (header ``kid``);
receivers check it against the public keys at ``/.well-known/jwks.json``.  Keys
rotate by age (``max_age``) or on demand (:meth:`SigningKeys.rotate`); a retired
key stays in the JWKS for ``grace`` seconds so that notifications signed just
before the rotation still verify.
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

__all__ = ["JWT_LIFETIME", "SigningKey", "SigningKeys", "body_sha256"]

#: Lifetime of a notification JWT (the spec's upper bound is 5 minutes).
JWT_LIFETIME = 300


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def body_sha256(body: bytes) -> str:
    """The hex SHA-256 of the exact body bytes (claim ``request_body_sha256``)."""
    return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class SigningKey:
    """One key: its id, private key, when it was created and (if retired) when."""

    kid: str
    private: Ed25519PrivateKey
    created: float
    retired: float | None = None

    @classmethod
    def generate(cls, now: float | None = None) -> SigningKey:
        """A fresh Ed25519 key with a random id."""
        return cls(uuid.uuid4().hex, Ed25519PrivateKey.generate(), now or time.time())

    def jwk(self) -> dict[str, Any]:
        """The public key as a JWK (OKP, Ed25519)."""
        raw = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return {
            "kty": "OKP",
            "crv": "Ed25519",
            "x": _b64(raw),
            "kid": self.kid,
            "use": "sig",
            "alg": "EdDSA",
        }


class SigningKeys:
    """The current key plus retired ones still in their grace period."""

    def __init__(self, max_age: float = 30 * 86400.0, grace: float = 86400.0) -> None:
        self.max_age = max_age
        self.grace = grace
        self.keys: list[SigningKey] = [SigningKey.generate()]

    @property
    def current(self) -> SigningKey:
        """The key new notifications are signed with (rotated first if too old)."""
        now = time.time()
        key = self.keys[-1]
        if now - key.created > self.max_age:
            self.rotate(now)
        return self.keys[-1]

    def rotate(self, now: float | None = None) -> SigningKey:
        """Retire the current key (kept for ``grace``) and start a new one."""
        now = now or time.time()
        last = self.keys[-1]
        self.keys[-1] = SigningKey(last.kid, last.private, last.created, now)
        self.keys = [k for k in self.keys if k.retired is None or now - k.retired < self.grace]
        self.keys.append(SigningKey.generate(now))
        return self.keys[-1]

    def jwks(self) -> dict[str, Any]:
        """The JWKS document: every key that may still have signed a valid notification."""
        now = time.time()
        live = [k for k in self.keys if k.retired is None or now - k.retired < self.grace]
        return {"keys": [k.jwk() for k in live]}

    def sign(self, *, issuer: str, audience: str, jti: str, task_id: str, body: bytes) -> str:
        """The JWT of one notification."""
        key = self.current
        now = int(time.time())
        claims = {
            "iss": issuer,
            "aud": audience,
            "iat": now,
            "exp": now + JWT_LIFETIME,
            "jti": jti,
            "taskId": task_id,
            "request_body_sha256": body_sha256(body),
        }
        return jwt.encode(claims, key.private, algorithm="EdDSA", headers={"kid": key.kid})
