"""Coordination of instances over Redis: lease keys, pub/sub signals, blocking stream reads.

Leases are a sorted set ``{prefix}:leases`` (member ``agent\\ttask``, score = expiry
in the Redis server's clock, in ms), with the holder of each in the hash
``{prefix}:lease-owner`` and each holder's members in ``{prefix}:owner:{id}``;
every change is one Lua script, so a lapsed lease is claimed by exactly one
instance.  Signals are published on ``{prefix}:signals``.  A follower waits for
new events with ``XREAD BLOCK`` on the task's event stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

import msgspec

from a2a_hub.protocol.errors import StoreUnavailableError
from a2a_hub.stores.coordinator import Coordinator, Signal

if TYPE_CHECKING:
    from a2a_hub.stores.redis import RedisStore

__all__ = ["RedisCoordinator"]

log = logging.getLogger("a2a_hub.stores")
_signal_dec = msgspec.json.Decoder(Signal)

_NOW = (
    "local t = redis.call('TIME') "
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)"
)

_ACQUIRE = (
    _NOW
    + """
local member, owner, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local prev = redis.call('HGET', KEYS[2], member)
if prev and prev ~= owner then redis.call('SREM', ARGV[4] .. prev, member) end
redis.call('ZADD', KEYS[1], now + ttl, member)
redis.call('HSET', KEYS[2], member, owner)
redis.call('SADD', ARGV[4] .. owner, member)
return 1
"""
)

_RENEW = (
    _NOW
    + """
local owner, ttl = ARGV[1], tonumber(ARGV[2])
local mine = redis.call('SMEMBERS', ARGV[3] .. owner)
for _, member in ipairs(mine) do
  if redis.call('HGET', KEYS[2], member) == owner then
    redis.call('ZADD', KEYS[1], 'XX', now + ttl, member)
  else
    redis.call('SREM', ARGV[3] .. owner, member)
  end
end
return #mine
"""
)

_RELEASE = """
local member, owner = ARGV[1], ARGV[2]
if redis.call('HGET', KEYS[2], member) == owner then
  redis.call('ZREM', KEYS[1], member)
  redis.call('HDEL', KEYS[2], member)
end
redis.call('SREM', ARGV[3] .. owner, member)
return 1
"""

_OWNER = (
    _NOW
    + """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) > now then return redis.call('HGET', KEYS[2], ARGV[1]) end
return false
"""
)

_CLAIM = (
    _NOW
    + """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for _, member in ipairs(due) do
  local owner = redis.call('HGET', KEYS[2], member) or ''
  redis.call('ZREM', KEYS[1], member)
  redis.call('HDEL', KEYS[2], member)
  if owner ~= '' then redis.call('SREM', ARGV[2] .. owner, member) end
  table.insert(out, member)
  table.insert(out, owner)
end
return out
"""
)


def _member(agent_id: str, task_id: str) -> str:
    return f"{agent_id}\t{task_id}"


class RedisCoordinator(Coordinator):
    """Leases, signals and event wake-ups in Redis (see the module docstring)."""

    shared = True

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        prefix = store.prefix
        self._leases = f"{prefix}:leases"
        self._owners = f"{prefix}:lease-owner"
        self._owner_set = f"{prefix}:owner:"
        self.channel = f"{prefix}:signals"
        self._scripts: dict[str, Any] = {}

    def _script(self, source: str) -> Any:
        script = self._scripts.get(source)
        if script is None:
            script = self._scripts[source] = self.store.client.register_script(source)
        return script

    async def _call(self, source: str, args: list[Any]) -> Any:
        from redis import exceptions

        try:
            return await self._script(source)(keys=[self._leases, self._owners], args=args)
        except (exceptions.ConnectionError, exceptions.TimeoutError, OSError) as exc:
            raise StoreUnavailableError(
                f"Task store {self.store.options.safe_url} is unavailable ({type(exc).__name__})"
            ) from exc

    async def acquire_lease(self, agent_id: str, task_id: str, owner: str, ttl: float) -> None:
        await self._call(
            _ACQUIRE, [_member(agent_id, task_id), owner, int(ttl * 1000), self._owner_set]
        )

    async def renew_leases(self, owner: str, ttl: float) -> None:
        await self._call(_RENEW, [owner, int(ttl * 1000), self._owner_set])

    async def release_lease(self, agent_id: str, task_id: str, owner: str) -> None:
        await self._call(_RELEASE, [_member(agent_id, task_id), owner, self._owner_set])

    async def lease_owner(self, agent_id: str, task_id: str) -> str | None:
        owner = await self._call(_OWNER, [_member(agent_id, task_id)])
        if not owner:
            return None
        return owner.decode() if isinstance(owner, bytes) else str(owner)

    async def claim_expired(self, owner: str, limit: int = 100) -> list[tuple[str, str, str]]:
        flat = await self._call(_CLAIM, [limit, self._owner_set])
        out = []
        for i in range(0, len(flat), 2):
            member = flat[i].decode() if isinstance(flat[i], bytes) else str(flat[i])
            holder = flat[i + 1].decode() if isinstance(flat[i + 1], bytes) else str(flat[i + 1])
            agent_id, _, task_id = member.partition("\t")
            out.append((agent_id, task_id, holder))
        return out

    async def publish(self, signal: Signal) -> None:
        from redis import exceptions

        try:
            await self.store.client.publish(self.channel, msgspec.json.encode(signal))
        except (exceptions.ConnectionError, exceptions.TimeoutError, OSError) as exc:
            raise StoreUnavailableError(
                f"Task store {self.store.options.safe_url} is unavailable ({type(exc).__name__})"
            ) from exc

    async def signals(self) -> AsyncGenerator[Signal, None]:
        pubsub = self.store.client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self.channel)
            while True:
                message = await pubsub.get_message(timeout=5.0)
                if message is None or message.get("type") != "message":
                    continue
                try:
                    yield _signal_dec.decode(message["data"])
                except msgspec.DecodeError:
                    continue
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call,unused-ignore]

    async def wait_events(self, agent_id: str, task_id: str, after: int, wait: float) -> None:
        from redis import exceptions

        key = self.store.keys(agent_id).events(task_id)
        block = max(1, int(wait * 1000))
        try:
            await self.store.client.xread({key: f"0-{after}"}, count=1, block=block)
        except (exceptions.ConnectionError, exceptions.TimeoutError, OSError):
            await asyncio.sleep(min(wait, 0.25))
