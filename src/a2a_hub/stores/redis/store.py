"""Redis store (``redis://…``, ``rediss://…``): redis-py asyncio, hiredis parser.

URL::

    redis://[user:password@]host:6379/0?prefix=a2a&task_ttl=3600&history_ttl=86400&push_ttl=3600

The query options are all optional; any other query option goes to redis-py
(``socket_timeout=2``, ``protocol=3`` …).  ``rediss://`` is the same over TLS.
Needs Redis 6.2 or later (``ZRANGE … BYSCORE REV``, exclusive ``XRANGE``).

``prefix`` (default ``a2a``)
    Every key of the store starts with ``{prefix}:``, so several hubs (or test
    runs) share one database without seeing each other.  It may not contain
    ``{`` or ``}``.
``task_ttl`` (default 3600 s)
    An *ended* task (completed, failed, canceled, rejected) disappears — its
    snapshot, and its entries in the listing indexes — this many seconds after
    it first reached a terminal state.  Submitted, working and interrupted
    (input/auth required) tasks never expire.
``history_ttl`` (default 86400 s)
    The task's event log (its history) expires this long after the task ended.
    It may not be shorter than ``task_ttl``: the snapshot is the fold of the
    log, so a task whose log is gone could not be replayed from a sequence
    number.  Once the snapshot has expired the remaining log is still readable
    through :meth:`~RedisStore.read_events` / :meth:`~RedisStore.last_seq`;
    saving a task under the same id again starts a new, empty log.
``push_ttl`` (default 3600 s)
    The task's push notification configs expire this long after it ended
    (at most ``task_ttl``: configs never outlive their task).

A TTL of ``0`` means "keep forever"; all three are seconds (fractions allowed)
counted from the same moment, the Redis server's clock when the task ended.

Keys (all built by :class:`~.keyspace.RedisKeys`; ``P`` is the prefix, ``{A}`` the escaped
agent id, the ``{…}`` braces make it a Redis Cluster hash tag, so everything one script
touches lives in one slot):

=================================  ==================================================
``P:{A}:task:<task_id>``           hash: ``d`` snapshot (msgspec JSON), ``seq`` last
                                   event seq, ``ctx``, ``state``, ``upd`` updated_at,
                                   ``end`` ended-at (server ms, ended tasks only),
                                   ``owner`` (set at creation, only if it has one)
``P:{A}:events:<task_id>``         stream: entry ``0-<seq>``, field ``d`` = the event
``P:{A}:push:<task_id>``           hash: ``c:<config_id>`` = ``"<order> <json>"``,
                                   ``#`` = the creation-order counter
``P:{A}:tasks``                    zset of task ids, score updated_at (newest first)
``P:{A}:ctx:<context_id>``         the same, per context
``P:{A}:state:<state>``            the same, per state
``P:{A}:owner:<owner>``            the same, per owner (``TaskQuery.owner``)
``P:{A}:expiring``                 zset of ended task ids, score = expiry (server ms)
``P:{A}:ended``                    hash: ended task id -> ``"<state>\\n<context>"``,
                                   what is needed to unindex it once its hash expired
``P:{A}:ended-owner``              hash: ended task id -> its owner (owned tasks only),
                                   the same for the owner index
``P:{A}:tmp:<uuid>``               scratch intersection inside one list script
``P:{A}:claim:<owner>:<message>``  a message claim (idempotent sends, JSON), which
                                   expires ``history_ttl`` after it was made (the
                                   task's log lives at least that long)
``P:outbox:due``                   zset: pending push delivery -> due time (a claim
                                   moves it to the end of the lease)
``P:outbox:data``                  hash: pending delivery -> its JSON
``P:outbox:q:<A>\0<task>\0<cfg>``  zset: one config's pending deliveries by order
``P:outbox:dead``                  hash: dead delivery -> its JSON
``P:meta:<name>``                  a shared named value (the push signing keys)
=================================  ==================================================

Writes go through Lua scripts (the ``.lua`` files of this package, read once
by :mod:`.scripts`, loaded into the server by :meth:`RedisStore.open`, run with
``EVALSHA``), so each is atomic and one round trip: ``save_task`` checks that the
events continue the log, writes the snapshot, ``XADD``\\ s the events, moves the
index entries and sets or clears the TTLs.  Index entries of expired tasks are
removed lazily: every save sweeps a few due members of ``expiring``, every list
sweeps up to a thousand, and a listed member whose task hash is gone is dropped
on sight — the indexes never grow beyond the live tasks.

Reads are one command each: ``get_task`` is ``HGET``, ``get_task_record`` one
``HMGET`` of the snapshot, ``seq`` and ``owner`` (atomic), ``read_events`` is
``XRANGE events (0-<after> + COUNT <limit>``, so any instance resumes a log from
a sequence number.  ``list_tasks`` is one script: newest first by updated_at,
then task id descending; it reads the zset of the filter (all / context /
state / owner, or the ``ZINTERSTORE`` of several) with keyset paging, the
members tied on the cursor's score resolved by task id.

Errors: a server that cannot be reached raises
:class:`~a2a_hub.protocol.errors.StoreUnavailableError` (naming the URL without
its password); a missing ``redis`` package raises :class:`ImportError` naming
``pip install 'a2a-hub[redis]'``.

:class:`RedisStore` is made of one mixin per concern over :class:`~.base.RedisBase` (the
client, the key names, the group-commit batch): :mod:`.tasks` (tasks and event logs),
:mod:`.push` (push configs and the outbox), :mod:`.claims` (message claims and named
values); :mod:`.options` parses the URL; this module connects and disconnects.
"""

from __future__ import annotations

try:
    import redis.asyncio as aioredis
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "The Redis store needs the redis package: pip install 'a2a-hub[redis]'"
    ) from _exc

from a2a_hub.stores.redis import scripts
from a2a_hub.stores.redis.base import redis_guarded
from a2a_hub.stores.redis.claims import RedisClaims
from a2a_hub.stores.redis.options import RedisOptions
from a2a_hub.stores.redis.push import RedisPush
from a2a_hub.stores.redis.tasks import RedisTasks

__all__ = ["RedisOptions", "RedisStore"]

REDIS_HINT = "pip install 'a2a-hub[redis]'"
MIN_REDIS_VERSION = (6, 2)

#: Connections the store's pool opens at most (redis-py's default is 100).  Only short
#: commands use it (followers wait through the coordinator's one StreamWatcher
#: connection), but a burst of them (a storm of resuming streams) may need more than 100
#: at once; a full pool fails a command at once (a blocking pool costs every command).
POOL_SIZE = 1000


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())


class RedisStore(RedisTasks, RedisPush, RedisClaims):
    """Tasks, event logs (Streams) and push configs in Redis, with TTLs.

    ``RedisStore("redis://localhost:6379/0?prefix=hub")``; await :meth:`open`
    before use and :meth:`close` after.  ``client_options`` go to
    :meth:`redis.asyncio.Redis.from_url` (query options of the URL win).
    """

    # --- lifecycle ---------------------------------------------------------------------

    @redis_guarded
    async def open(self) -> None:
        if self._client is not None:
            return
        pool = aioredis.ConnectionPool.from_url(
            self.options.connect_url, **{"max_connections": POOL_SIZE, **self._client_options}
        )
        client = aioredis.Redis(connection_pool=pool)
        try:
            async with client.pipeline(transaction=False) as pipe:
                pipe.info("server")
                for script in scripts.STORE_SCRIPTS:
                    pipe.script_load(script.source)
                info, *_ = await pipe.execute()
            version = str(info.get("redis_version", "0"))
            if _version(version) < MIN_REDIS_VERSION:
                raise RuntimeError(
                    f"Task store {self.options.safe_url} runs Redis {version}; the Redis store "
                    f"needs {'.'.join(map(str, MIN_REDIS_VERSION))} or later"
                )
        except BaseException:
            await client.aclose(close_connection_pool=True)
            raise
        self._client = client

    async def close(self) -> None:
        await self._batch.close()
        client, self._client = self._client, None
        if client is not None:
            await client.aclose(close_connection_pool=True)

    @redis_guarded
    async def purge(self) -> int:
        """Delete every key under this store's prefix (all agents); the number deleted."""
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in self.prefix) + ":*"
        deleted = 0
        batch: list[bytes] = []
        async for key in self.client.scan_iter(match=pattern, count=500):
            batch.append(key)
            if len(batch) >= 500:
                deleted += await self.client.unlink(*batch)
                batch.clear()
        if batch:
            deleted += await self.client.unlink(*batch)
        return deleted
