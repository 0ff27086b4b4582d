"""API keys in the registry: created (shown once), looked up by their keyed hash, listed,
revoked.  Only the HMAC-SHA-256 of a key under the server secret is stored, with a
display prefix (see :mod:`.registry` for the secret)."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from typing import Any

import msgspec
from sqlalchemy import insert, select, update

from a2a_hub.registry.base import RegistryBase, RegistryError, UnknownEntryError, bump
from a2a_hub.registry.schema import api_keys

__all__ = ["KEY_PREFIX", "SCOPES", "KeyInfo", "RegistryKeys"]

#: Every API key starts with this (so that scanners and people recognise one).
KEY_PREFIX = "a2ah_"

#: What a key may do: call its agents; see every task of its agents; administer the hub.
SCOPES = ("invoke", "read-all", "admin")

_PREFIX_LEN = len(KEY_PREFIX) + 6  # shown in listings: "a2ah_" + 6 characters


class KeyInfo(msgspec.Struct, kw_only=True, rename="camel"):
    """An API key as the registry knows it (never the key itself)."""

    id: str
    prefix: str
    principal: str
    scopes: list[str]
    agents: list[str] | None  # None: every agent
    created_at: float
    name: str | None = None
    expires_at: float | None = None
    revoked_at: float | None = None
    last_used_at: float | None = None

    def usable(self, now: float) -> bool:
        """Neither revoked nor expired at ``now``."""
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


def _key_info(row: Any) -> KeyInfo:
    return KeyInfo(
        id=row.key_id,
        prefix=row.prefix,
        principal=row.principal,
        scopes=row.scopes.split(),
        agents=None if row.agents is None else json.loads(row.agents),
        created_at=row.created_at,
        name=row.name,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        last_used_at=row.last_used_at,
    )


class RegistryKeys(RegistryBase):
    """API keys: create, look up, list, get, revoke."""

    #: How often (seconds) a key's ``last_used_at`` is written at most.
    LAST_USED_EVERY = 60.0

    def hash_key(self, key: str) -> str:
        """The keyed hash stored for ``key`` (HMAC-SHA-256 under the secret, hex)."""
        if self._secret is None:
            raise RuntimeError(f"{self!r} is not open; await registry.open() first")
        return hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()

    async def create_key(
        self,
        *,
        principal: str | None = None,
        agents: list[str] | None = None,
        scopes: list[str] | None = None,
        name: str | None = None,
        expires_in: float | None = None,
    ) -> tuple[str, KeyInfo]:
        """A new key (shown only here) and its record.

        ``agents`` None opens every agent; ``scopes`` defaults to ``["invoke"]``;
        ``principal`` defaults to ``name``, else to the key's id (its own principal).
        """
        scopes = list(dict.fromkeys(scopes or ["invoke"]))
        unknown = [s for s in scopes if s not in SCOPES]
        if unknown:
            raise RegistryError(f"unknown scope {unknown[0]!r}; scopes: {', '.join(SCOPES)}")
        if agents is not None and not agents:
            raise RegistryError("a key must open at least one agent (or every agent)")
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        key_id = "key_" + secrets.token_hex(8)
        now = time.time()
        info = KeyInfo(
            id=key_id,
            prefix=key[:_PREFIX_LEN],
            principal=principal or name or key_id,
            scopes=scopes,
            agents=None if agents is None else sorted(set(agents)),
            created_at=now,
            name=name,
            expires_at=None if expires_in is None else now + expires_in,
        )
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(api_keys).values(
                    key_id=info.id,
                    key_hash=self.hash_key(key),
                    prefix=info.prefix,
                    name=info.name,
                    principal=info.principal,
                    agents=None if info.agents is None else json.dumps(info.agents),
                    scopes=" ".join(info.scopes),
                    created_at=info.created_at,
                    expires_at=info.expires_at,
                )
            )
        return key, info

    async def lookup_key(self, key: str) -> KeyInfo | None:
        """The record of ``key`` (revoked and expired ones too), or None if unknown.

        The row is found by its keyed hash, and the hashes compared again in
        constant time; ``last_used_at`` is refreshed at most every
        :attr:`LAST_USED_EVERY` seconds.
        """
        if not key.startswith(KEY_PREFIX) or len(key) > 200:
            return None
        digest = self.hash_key(key)
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(select(api_keys).where(api_keys.c.key_hash == digest))
            ).first()
            if row is None or not hmac.compare_digest(row.key_hash, digest):
                return None
            info = _key_info(row)
            now = time.time()
            if info.usable(now) and (
                info.last_used_at is None or now - info.last_used_at > self.LAST_USED_EVERY
            ):
                await conn.execute(
                    update(api_keys).where(api_keys.c.key_id == info.id).values(last_used_at=now)
                )
                await conn.commit()
                info.last_used_at = now
        return info

    async def list_keys(self, principal: str | None = None) -> list[KeyInfo]:
        """Every key (of ``principal`` if given), oldest first."""
        query = select(api_keys).order_by(api_keys.c.created_at, api_keys.c.key_id)
        if principal is not None:
            query = query.where(api_keys.c.principal == principal)
        async with self.engine.connect() as conn:
            return [_key_info(row) for row in await conn.execute(query)]

    async def get_key(self, key_id: str) -> KeyInfo:
        """The key with that id (or whose display prefix it is)."""
        async with self.engine.connect() as conn:
            rows = (
                await conn.execute(
                    select(api_keys).where(
                        (api_keys.c.key_id == key_id) | (api_keys.c.prefix == key_id)
                    )
                )
            ).all()
        if not rows:
            raise UnknownEntryError(f"no API key {key_id!r} (see: a2a-hub keys list)")
        if len(rows) > 1:
            raise RegistryError(f"{key_id!r} names several keys; use the key id")
        return _key_info(rows[0])

    async def revoke_key(self, key_id: str) -> KeyInfo:
        """Revoke a key (by id or display prefix): it stops working at once here, and on
        other instances within their ``auth.cache_seconds``."""
        info = await self.get_key(key_id)
        if info.revoked_at is None:
            info.revoked_at = time.time()
            async with self.engine.begin() as conn:
                await conn.execute(
                    update(api_keys)
                    .where(api_keys.c.key_id == info.id)
                    .values(revoked_at=info.revoked_at)
                )
                await bump(conn, "keys")
        return info

    async def has_admin_key(self) -> bool:
        """Whether a usable key with the ``admin`` scope exists (the admin API is on)."""
        return any("admin" in k.scopes and k.usable(time.time()) for k in await self.list_keys())
