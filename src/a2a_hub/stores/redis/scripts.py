"""The Lua scripts of the store and its coordinator, read once from this package's ``.lua`` files.

Each runs by ``EVALSHA``; :meth:`LuaScript.__call__` loads it again when the
server has forgotten it (a restart or failover).  The store loads its scripts
when it opens.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib import resources
from typing import Any

import redis.asyncio as aioredis
from redis import exceptions as redis_exc

__all__ = [
    "ACQUIRE",
    "CLAIM",
    "CLAIM_MESSAGE",
    "DELETE",
    "LAST_SEQ",
    "LIST",
    "META_SWAP",
    "OUTBOX_CLAIM",
    "OWNER",
    "RELEASE",
    "RENEW",
    "SAVE",
    "SET_PUSH",
    "STORE_SCRIPTS",
    "LuaScript",
]


class LuaScript:
    """A Lua script run by ``EVALSHA``, loaded again if the server forgot it."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    @classmethod
    def read(cls, *names: str) -> LuaScript:
        """The script made of these files of this package, in order."""
        package = resources.files(__package__ or "a2a_hub.stores.redis")
        return cls("".join(package.joinpath(name).read_text(encoding="utf-8") for name in names))

    async def __call__(
        self, client: aioredis.Redis, keys: Sequence[str], args: Sequence[str | bytes | int]
    ) -> Any:
        try:
            return await client.evalsha(self.sha, len(keys), *keys, *args)
        except redis_exc.NoScriptError:  # a restarted or failed-over server
            await client.script_load(self.source)
            return await client.evalsha(self.sha, len(keys), *keys, *args)


# The store's scripts share the helpers of common.lua.
SAVE = LuaScript.read("common.lua", "save.lua")
LIST = LuaScript.read("common.lua", "list.lua")
DELETE = LuaScript.read("common.lua", "delete.lua")
SET_PUSH = LuaScript.read("set_push.lua")
LAST_SEQ = LuaScript.read("last_seq.lua")
OUTBOX_CLAIM = LuaScript.read("outbox_claim.lua")
META_SWAP = LuaScript.read("meta_swap.lua")
CLAIM_MESSAGE = LuaScript.read("claim_message.lua")
STORE_SCRIPTS = (SAVE, LIST, DELETE, SET_PUSH, LAST_SEQ, OUTBOX_CLAIM, META_SWAP, CLAIM_MESSAGE)

# The coordinator's.
ACQUIRE = LuaScript.read("lease_acquire.lua")
RENEW = LuaScript.read("lease_renew.lua")
RELEASE = LuaScript.read("lease_release.lua")
OWNER = LuaScript.read("lease_owner.lua")
CLAIM = LuaScript.read("lease_claim.lua")
