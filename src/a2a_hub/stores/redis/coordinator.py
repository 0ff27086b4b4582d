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
from collections.abc import AsyncGenerator, Callable
from typing import Any

import msgspec
import redis.asyncio as aioredis
from redis import exceptions as redis_exc

from a2a_hub.protocol.errors import StoreUnavailableError
from a2a_hub.stores.coordinator import Coordinator, Signal
from a2a_hub.stores.redis import scripts
from a2a_hub.stores.redis.keys import ClusterKeys, RedisKeys
from a2a_hub.stores.redis.scripts import LuaScript

__all__ = ["RedisCoordinator"]

log = logging.getLogger("a2a_hub.stores")
_signal_dec = msgspec.json.Decoder(Signal)

_UNREACHABLE = (redis_exc.ConnectionError, redis_exc.TimeoutError, OSError)


def _member(agent_id: str, task_id: str) -> str:
    return f"{agent_id}\t{task_id}"


class RedisCoordinator(Coordinator):
    """Leases, signals and event wake-ups in Redis (see the module docstring)."""

    shared = True

    def __init__(
        self,
        client: Callable[[], aioredis.Redis],
        keys: ClusterKeys,
        agent_keys: Callable[[str], RedisKeys],
        safe_url: str,
    ) -> None:
        """``client`` returns the store's client (open by the time the coordinator is
        used), ``keys`` names the coordinator's keys, ``agent_keys`` an agent's data keys
        (for the event streams) and ``safe_url`` the server in messages."""
        self._client = client
        self._keys = keys
        self._agent_keys = agent_keys
        self._safe_url = safe_url

    def _down(self, exc: BaseException) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"Task store {self._safe_url} is unavailable ({type(exc).__name__})"
        )

    async def _call(self, script: LuaScript, args: list[Any]) -> Any:
        try:
            return await script(self._client(), (self._keys.leases, self._keys.holders), args)
        except _UNREACHABLE as exc:
            raise self._down(exc) from exc

    async def acquire_lease(self, agent_id: str, task_id: str, owner: str, ttl: float) -> None:
        await self._call(
            scripts.ACQUIRE,
            [_member(agent_id, task_id), owner, int(ttl * 1000), self._keys.owned_prefix],
        )

    async def renew_leases(self, owner: str, ttl: float) -> None:
        await self._call(scripts.RENEW, [owner, int(ttl * 1000), self._keys.owned_prefix])

    async def release_lease(self, agent_id: str, task_id: str, owner: str) -> None:
        await self._call(
            scripts.RELEASE, [_member(agent_id, task_id), owner, self._keys.owned_prefix]
        )

    async def lease_owner(self, agent_id: str, task_id: str) -> str | None:
        owner = await self._call(scripts.OWNER, [_member(agent_id, task_id)])
        if not owner:
            return None
        return owner.decode() if isinstance(owner, bytes) else str(owner)

    async def claim_expired(self, owner: str, limit: int = 100) -> list[tuple[str, str, str]]:
        flat = await self._call(scripts.CLAIM, [limit, self._keys.owned_prefix])
        out = []
        for i in range(0, len(flat), 2):
            member = flat[i].decode() if isinstance(flat[i], bytes) else str(flat[i])
            holder = flat[i + 1].decode() if isinstance(flat[i + 1], bytes) else str(flat[i + 1])
            agent_id, _, task_id = member.partition("\t")
            out.append((agent_id, task_id, holder))
        return out

    async def publish(self, signal: Signal) -> None:
        try:
            await self._client().publish(self._keys.signals, msgspec.json.encode(signal))
        except _UNREACHABLE as exc:
            raise self._down(exc) from exc

    async def signals(self) -> AsyncGenerator[Signal, None]:
        pubsub = self._client().pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self._keys.signals)
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
        key = self._agent_keys(agent_id).events(task_id)
        block = max(1, int(wait * 1000))
        try:
            await self._client().xread({key: f"0-{after}"}, count=1, block=block)
        except _UNREACHABLE:
            await asyncio.sleep(min(wait, 0.25))
