"""Coordination of instances over Redis: lease keys, pub/sub signals, blocking stream reads.

Leases are a sorted set ``{prefix}:leases`` (member ``agent\\ttask``, score = expiry
in the Redis server's clock, in ms), with the holder of each in the hash
``{prefix}:lease-owner`` and each holder's members in ``{prefix}:owner:{id}``;
every change is one Lua script, so a lapsed lease is claimed by exactly one
instance.  Signals are published on ``{prefix}:signals``.

Followers (streams of a task that runs on another instance) wait for new events
through one :class:`StreamWatcher` per instance: a single ``XREAD BLOCK`` over
every followed task's event stream, on a connection of its own, that wakes the
local waiters.  So the store's connection pool serves only short commands: a
thousand followers cost one connection, and never starve requests or the
renewal of the instance's leases.
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
from a2a_hub.stores.redis.keyspace import ClusterKeys, RedisKeys
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
        reader: Callable[[], aioredis.Redis] | None = None,
    ) -> None:
        """``client`` returns the store's client (open by the time the coordinator is
        used), ``keys`` names the coordinator's keys, ``agent_keys`` an agent's data keys
        (for the event streams) and ``safe_url`` the server in messages; ``reader``
        makes the single-connection client of the :class:`StreamWatcher` (default: one
        like ``client``'s)."""
        self._client = client
        self._keys = keys
        self._agent_keys = agent_keys
        self._safe_url = safe_url
        self.watcher = StreamWatcher(client, reader or (lambda: _single(client())))

    async def close(self) -> None:
        await self.watcher.close()

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
        await self.watcher.wait(self._agent_keys(agent_id).events(task_id), after, wait)


def _single(client: aioredis.Redis) -> aioredis.Redis:
    """A client on one connection of its own, with the options of ``client``'s pool."""
    kwargs = dict(client.connection_pool.connection_kwargs)
    return aioredis.Redis(
        connection_pool=aioredis.ConnectionPool(
            connection_class=client.connection_pool.connection_class,
            max_connections=1,
            **kwargs,
        ),
        single_connection_client=True,
    )


class StreamWatcher:
    """One blocking reader for every task this instance follows (see module docstring).

    :meth:`wait` registers a waiter on a task's event stream (``after``: the last seq
    the follower has) and sleeps until an entry after it is there, or ``wait``
    seconds.  The reader loop runs while there are waiters: one ``XREAD BLOCK`` over
    all their streams, each from the newest seq known to exist in it (a waiter behind
    that returns at once: its follower has events to read).  A waiter on a stream the
    read in flight does not cover interrupts it (``CLIENT UNBLOCK``, on the store's
    client: one short command) so that the next read covers it.
    """

    #: Longest single ``XREAD BLOCK`` (ms): also how long a lost interrupt can delay a waiter.
    BLOCK_MS = 1000

    def __init__(
        self, client: Callable[[], aioredis.Redis], reader: Callable[[], aioredis.Redis]
    ) -> None:
        self._client = client
        self._make_reader = reader
        self._conn: aioredis.Redis | None = None
        self._conn_id: int | None = None
        #: stream key -> the waiters on it (future -> after)
        self._waiters: dict[str, dict[asyncio.Future[None], int]] = {}
        #: stream key -> newest seq known to exist in it
        self._known: dict[str, int] = {}
        #: the streams the read in flight covers (empty: no read blocked)
        self._reading: frozenset[str] = frozenset()
        self._loop: asyncio.Task[None] | None = None
        self._kicking = False
        self._kicker: asyncio.Future[None] | None = None

    @property
    def waiters(self) -> int:
        """How many followers wait now."""
        return sum(len(w) for w in self._waiters.values())

    async def wait(self, key: str, after: int, wait: float) -> None:
        """Until the stream ``key`` may have an entry after seq ``after``, or ``wait`` s."""
        known = self._known.get(key, 0)
        if after < known:
            return  # another follower already read further: there is something to read
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters.setdefault(key, {})
        waiters[future] = after
        self._known[key] = after
        if self._loop is None or self._loop.done():
            self._loop = asyncio.ensure_future(self._read_loop())
        elif self._reading and key not in self._reading:
            self._kick()
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await future
        finally:
            waiters.pop(future, None)
            if not waiters and self._waiters.get(key) is waiters:
                del self._waiters[key]
                self._known.pop(key, None)

    def _kick(self) -> None:
        """Interrupt the read in flight (once; the next read covers every stream)."""
        if self._kicking or self._conn_id is None:
            return
        self._kicking = True
        self._kicker = asyncio.ensure_future(self._unblock(self._conn_id))

    async def _unblock(self, conn_id: int) -> None:
        try:
            await self._client().client_unblock(conn_id)
        except _UNREACHABLE:
            pass  # the read returns by itself within BLOCK_MS
        finally:
            self._kicking = False

    async def _read_loop(self) -> None:
        while self._waiters:
            try:
                if self._conn is None:
                    self._conn = self._make_reader()
                if self._conn_id is None:
                    self._conn_id = int(await self._conn.client_id())
                streams: dict[Any, Any] = {
                    key: f"0-{self._known.get(key, 0)}" for key in self._waiters
                }
                self._reading = frozenset(streams)
                try:
                    found = await self._conn.xread(streams, count=1, block=self.BLOCK_MS)
                finally:
                    self._reading = frozenset()
            except _UNREACHABLE:
                self._conn_id = None  # a new connection gets a new id
                await asyncio.sleep(0.25)
                continue
            result: Any = found or []
            for name, entries in result.items() if isinstance(result, dict) else result:
                key = name.decode() if isinstance(name, bytes) else str(name)
                if not entries or key not in self._waiters:
                    continue
                entry_id = entries[-1][0]
                seq = int((entry_id.decode() if isinstance(entry_id, bytes) else entry_id)[2:])
                self._known[key] = max(self._known.get(key, 0), seq)
                for future, after in list(self._waiters.get(key, {}).items()):
                    if after < seq and not future.done():
                        future.set_result(None)

    async def close(self) -> None:
        """Stop reading and drop the connection (a later :meth:`wait` starts again);
        waiters return when their time is up."""
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loop
        conn, self._conn, self._conn_id = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.aclose(close_connection_pool=True)
