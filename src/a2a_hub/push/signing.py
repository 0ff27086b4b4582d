"""The hub's notification signing keys (Ed25519, JWS ``EdDSA``) and their JWKS.

Every notification carries a JWT signed with the current key (header ``kid``);
receivers check it against the public keys at ``/.well-known/jwks.json``.  The
keys live in the store (named value :data:`META_NAME`), so that every instance
sharing it signs with keys every instance's JWKS lists, and they survive
restarts.  Keys rotate by age (``max_age``, checked at each :meth:`SigningKeys.refresh`)
or on demand (:meth:`SigningKeys.rotate`, ``a2a-hub keys rotate-signing``); a
retired key stays in the JWKS for ``grace`` seconds, so that notifications signed
just before a rotation still verify.  Changes are compare-and-swap: instances
rotating at once end with one new key, not two.

The private keys are stored as they are: the store is as trusted as the hub.

Signatures are made by libsodium (PyNaCl's ``crypto_sign``), about 20 µs each where
``cryptography``'s OpenSSL call took about 33 µs on the same machine: a notification's
largest single cost.  Ed25519 signatures are deterministic, so both give the same
bytes; ``cryptography`` still holds the key object (JWK, storage, card signatures).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from nacl.bindings import crypto_sign, crypto_sign_seed_keypair

from a2a_hub.stores.base import MetaStore

__all__ = ["JWT_LIFETIME", "META_NAME", "SigningKey", "SigningKeys", "body_sha256"]

#: Lifetime of a notification JWT (the spec's upper bound is 5 minutes).
JWT_LIFETIME = 300
#: The store's named value holding the keys.
META_NAME = "push-signing-keys"

DEFAULT_MAX_AGE = 30 * 86400.0
DEFAULT_GRACE = 86400.0


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _b64_bytes(data: bytes) -> bytes:
    """Base64url without padding, as bytes (one C call each step: per notification)."""
    return binascii.b2a_base64(data, newline=False).translate(_URLSAFE).rstrip(b"=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def body_sha256(body: bytes) -> str:
    """The hex SHA-256 of the exact body bytes (claim ``request_body_sha256``)."""
    return hashlib.sha256(body).hexdigest()


class _Stored(msgspec.Struct):
    kid: str
    key: str  # base64url of the raw 32-byte Ed25519 private key
    created: float
    retired: float | None = None


class _Claims(msgspec.Struct):
    """The claims of a notification JWT, in this order."""

    iss: str
    aud: str
    iat: int
    exp: int
    jti: str
    taskId: str
    request_body_sha256: str


@dataclass(frozen=True)
class SigningKey:
    """One key: its id, private key, when it was created and (if retired) when."""

    kid: str
    private: Ed25519PrivateKey
    created: float
    retired: float | None = None

    @functools.cached_property
    def header(self) -> bytes:
        """The encoded JWS header segment of the tokens this key signs."""
        header = {"alg": "EdDSA", "kid": self.kid, "typ": "JWT"}
        return _b64(json.dumps(header, separators=(",", ":")).encode()).encode()

    @functools.cached_property
    def _sodium_key(self) -> bytes:
        """The 64-byte secret key libsodium signs with (seed and public key)."""
        seed = self.private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return crypto_sign_seed_keypair(seed)[1]

    def sign(self, data: bytes) -> bytes:
        """The Ed25519 signature of ``data`` (64 bytes)."""
        return crypto_sign(data, self._sodium_key)[:64]

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

    def stored(self) -> _Stored:
        raw = self.private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return _Stored(self.kid, _b64(raw), self.created, self.retired)

    @classmethod
    def from_stored(cls, s: _Stored) -> SigningKey:
        return cls(s.kid, Ed25519PrivateKey.from_private_bytes(_unb64(s.key)), s.created, s.retired)


_dec = msgspec.json.Decoder(list[_Stored])
_enc = msgspec.json.Encoder()


class SigningKeys:
    """The current key plus retired ones still in their grace period, kept in ``store``
    (``None``: in this process only).

    As a service of the hub (``async with``), the keys are read (or the first one created)
    on entry; nothing is to be done on exit.
    """

    def __init__(
        self,
        store: MetaStore | None = None,
        *,
        max_age: float = DEFAULT_MAX_AGE,
        grace: float = DEFAULT_GRACE,
    ) -> None:
        self.store = store
        self.max_age = max_age
        self.grace = grace
        self.keys: list[SigningKey] = []
        self._raw: bytes | None = None

    @property
    def current(self) -> SigningKey:
        """The key new notifications are signed with."""
        if not self.keys:
            self.keys = [SigningKey.generate()]
        return self.keys[-1]

    def _live(self, keys: list[SigningKey], now: float) -> list[SigningKey]:
        return [k for k in keys if k.retired is None or now - k.retired < self.grace]

    async def _read(self) -> tuple[bytes | None, list[SigningKey]]:
        if self.store is None:
            return self._raw, list(self.keys)
        raw = await self.store.get_meta(META_NAME)
        return raw, [] if raw is None else [SigningKey.from_stored(s) for s in _dec.decode(raw)]

    async def _swap(self, expected: bytes | None, keys: list[SigningKey]) -> bool:
        raw = _enc.encode([k.stored() for k in keys])
        if self.store is not None and not await self.store.swap_meta(META_NAME, expected, raw):
            return False
        self._raw, self.keys = raw, keys
        return True

    async def refresh(self) -> None:
        """Read the keys (other instances may have rotated them); create the first one, or
        rotate a current key older than ``max_age``."""
        while True:
            raw, keys = await self._read()
            now = time.time()
            if keys and now - keys[-1].created <= self.max_age:
                self._raw, self.keys = raw, keys
                return
            if await self._swap(raw, self._rotated(keys, now)):
                return

    async def __aenter__(self) -> SigningKeys:
        await self.refresh()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    async def rotate(self) -> SigningKey:
        """Retire the current key (kept in the JWKS for ``grace``) and start a new one."""
        while True:
            raw, keys = await self._read()
            if await self._swap(raw, self._rotated(keys, time.time())):
                return self.keys[-1]

    def _rotated(self, keys: list[SigningKey], now: float) -> list[SigningKey]:
        if keys and keys[-1].retired is None:
            last = keys[-1]
            keys = [*keys[:-1], SigningKey(last.kid, last.private, last.created, now)]
        return [*self._live(keys, now), SigningKey.generate(now)]

    def jwks(self) -> dict[str, Any]:
        """The JWKS document: every key that may still have signed a valid notification."""
        live = self._live(self.keys, time.time()) if self.keys else [self.current]
        return {"keys": [k.jwk() for k in live]}

    def sign(self, *, issuer: str, audience: str, jti: str, task_id: str, body: bytes) -> str:
        """The JWT of one notification (a compact JWS, ``EdDSA``).

        Built here rather than by PyJWT: the header segment is encoded once per key and
        the claims by msgspec, leaving the Ed25519 signature as the only real cost."""
        key = self.current
        now = int(time.time())
        claims = _Claims(
            iss=issuer,
            aud=audience,
            iat=now,
            exp=now + JWT_LIFETIME,
            jti=jti,
            taskId=task_id,
            request_body_sha256=body_sha256(body),
        )
        signing_input = key.header + b"." + _b64_bytes(_enc.encode(claims))
        return (signing_input + b"." + _b64_bytes(key.sign(signing_input))).decode()
