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

Keys (all built by :class:`~.keys.RedisKeys`; ``P`` is the prefix, ``{A}`` the escaped
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
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import msgspec

try:
    import redis.asyncio as aioredis
    from redis import exceptions as redis_exc
    from redis.backoff import EqualJitterBackoff
    from redis.retry import Retry
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "The Redis store needs the redis package: pip install 'a2a-hub[redis]'"
    ) from _exc

from a2a_hub.protocol.errors import StoreUnavailableError, TaskNotFoundError
from a2a_hub.protocol.types import StreamResponse, Task, TaskPushNotificationConfig, TaskState
from a2a_hub.stores.base import (
    Delivery,
    DeliverySource,
    MessageClaim,
    Store,
    StoredTask,
    TaskEvent,
    TaskPage,
    TaskQuery,
    check_events,
    decode_page_token,
    encode_page_token,
    guarded,
    log_conflict,
    now,
    unavailable_error,
)
from a2a_hub.stores.coordinator import Coordinator
from a2a_hub.stores.redis import scripts
from a2a_hub.stores.redis.batch import ScriptBatch
from a2a_hub.stores.redis.coordinator import RedisCoordinator
from a2a_hub.stores.redis.keys import ClusterKeys, RedisKeys, keys_for

__all__ = ["RedisOptions", "RedisStore"]

REDIS_HINT = "pip install 'a2a-hub[redis]'"
MIN_REDIS_VERSION = (6, 2)
DEFAULT_PREFIX = "a2a"
DEFAULT_TASK_TTL = 3600.0
DEFAULT_HISTORY_TTL = 86400.0
DEFAULT_PUSH_TTL = 3600.0

_enc = msgspec.json.Encoder()
_task_dec = msgspec.json.Decoder(Task)
_event_dec = msgspec.json.Decoder(StreamResponse)
_push_dec = msgspec.json.Decoder(TaskPushNotificationConfig)
_delivery_dec = msgspec.json.Decoder(Delivery)
_claim_dec = msgspec.json.Decoder(MessageClaim)


# --- options ----------------------------------------------------------------------------


def _ttl(name: str, raw: str | None, default: float) -> float:
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"Redis store option {name}={raw!r} must be seconds >= 0 (0 = forever)")
    return value


@dataclass(frozen=True)
class RedisOptions:
    """A parsed store URL: the store's own options and what redis-py connects to."""

    connect_url: str  # the URL without the store options, for redis-py
    safe_url: str  # the URL for messages: no password
    prefix: str = DEFAULT_PREFIX
    task_ttl: float = DEFAULT_TASK_TTL  # seconds; 0 = forever
    history_ttl: float = DEFAULT_HISTORY_TTL
    push_ttl: float = DEFAULT_PUSH_TTL

    OWN = ("prefix", "task_ttl", "history_ttl", "push_ttl")

    @classmethod
    def from_url(cls, url: str) -> RedisOptions:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("redis", "rediss"):
            raise ValueError(
                f"RedisStore serves redis://host:port/db and rediss://… URLs, not {scheme}://…"
            )
        query = parse_qsl(parts.query, keep_blank_values=True)
        own = {k: v for k, v in query if k in cls.OWN}
        rest = [(k, v) for k, v in query if k not in cls.OWN]
        connect_url = urlunsplit((scheme, parts.netloc, parts.path, urlencode(rest), ""))

        userinfo, at, hostinfo = parts.netloc.rpartition("@")
        if at and ":" in userinfo:
            userinfo = userinfo.partition(":")[0] + ":***"
        shown_query = urlencode([(k, "***" if k == "password" else v) for k, v in query])
        safe_url = urlunsplit((scheme, f"{userinfo}{at}{hostinfo}", parts.path, shown_query, ""))

        prefix = own.get("prefix", DEFAULT_PREFIX)
        if not prefix or "{" in prefix or "}" in prefix:
            raise ValueError(
                f"Redis store option prefix={prefix!r} must be non-empty, without '{{' or '}}'"
            )
        task_ttl = _ttl("task_ttl", own.get("task_ttl"), DEFAULT_TASK_TTL)
        history_ttl = _ttl("history_ttl", own.get("history_ttl"), DEFAULT_HISTORY_TTL)
        push_ttl = _ttl("push_ttl", own.get("push_ttl"), DEFAULT_PUSH_TTL)
        if history_ttl and (not task_ttl or history_ttl < task_ttl):
            raise ValueError(
                f"Redis store option history_ttl={history_ttl:g} is shorter than task_ttl="
                f"{task_ttl:g} (0 = forever): a task's log must live at least as long as the "
                "task; raise history_ttl or set it to 0"
            )
        if task_ttl and (not push_ttl or push_ttl > task_ttl):
            raise ValueError(
                f"Redis store option push_ttl={push_ttl:g} is longer than task_ttl={task_ttl:g} "
                "(0 = forever): push configs may not outlive their task; lower push_ttl"
            )
        return cls(connect_url, safe_url, prefix, task_ttl, history_ttl, push_ttl)


#: Connections the store's pool opens at most (redis-py's default is 100).  Only short
#: commands use it (followers wait through the coordinator's one StreamWatcher
#: connection), but a burst of them (a storm of resuming streams) may need more than 100
#: at once; a full pool fails a command at once (a blocking pool costs every command).
POOL_SIZE = 1000

# --- helpers ---------------------------------------------------------------------------

_UNREACHABLE = (
    redis_exc.ConnectionError,  # includes auth, busy-loading, max-connections
    redis_exc.TimeoutError,
    redis_exc.ReadOnlyError,  # a replica after a failover
    OSError,  # includes the builtin TimeoutError
)


def _unreachable(exc: BaseException) -> bool:
    """Redis cannot be reached (or is a read-only replica after a failover)."""
    return isinstance(exc, _UNREACHABLE)


_guarded = guarded(_unreachable)


def _ms(seconds: float) -> int:
    """Milliseconds for the scripts; a TTL that is not 0 (forever) stays at least 1 ms."""
    return max(round(seconds * 1000), 1) if seconds else 0


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _split_push(value: bytes) -> tuple[int, bytes]:
    order, _, data = value.partition(b" ")
    return int(order), data


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())


# --- the store -------------------------------------------------------------------------


_ENDED = sorted(state.value for state in TaskState if state.terminal)


class RedisStore(Store):
    """Tasks, event logs (Streams) and push configs in Redis, with TTLs.

    ``RedisStore("redis://localhost:6379/0?prefix=hub")``; await :meth:`open`
    before use and :meth:`close` after.  ``client_options`` go to
    :meth:`redis.asyncio.Redis.from_url` (query options of the URL win).
    """

    def __init__(self, url: str, **client_options: Any) -> None:
        self.url = url
        self.options = RedisOptions.from_url(url)
        self.prefix = self.options.prefix
        self._task_ttl = str(_ms(self.options.task_ttl))
        self._history_ttl = str(_ms(self.options.history_ttl))
        self._push_ttl = str(_ms(self.options.push_ttl))
        self._client_options: dict[str, Any] = {
            "protocol": 2,
            "socket_connect_timeout": 5.0,
            # A few quick retries (reconnecting after a server restart).  A save whose
            # reply was lost and that is sent again is refused as a duplicate
            # (LogConflictError), as every backend refuses a replayed save.
            "retry": Retry(EqualJitterBackoff(cap=0.2, base=0.01), 2),
            **client_options,
        }
        self._client: aioredis.Redis | None = None
        #: Saves and message claims, group-committed: one pipeline per batch.
        self._batch = ScriptBatch(lambda: self.client)

    def __repr__(self) -> str:
        return f"RedisStore({self.options.safe_url!r})"

    def _make_coordinator(self) -> Coordinator:
        return RedisCoordinator(
            lambda: self.client, ClusterKeys(self.prefix), self.keys, self.options.safe_url
        )

    def _unavailable(self, exc: BaseException) -> StoreUnavailableError:
        return unavailable_error(self.options.safe_url, exc)

    @property
    def client(self) -> aioredis.Redis:
        """The redis-py client; only valid between :meth:`open` and :meth:`close`."""
        if self._client is None:
            raise RuntimeError(f"{self!r} is not open; await store.open() first")
        return self._client

    def keys(self, agent_id: str) -> RedisKeys:
        """The key names of one agent's data."""
        return keys_for(self.prefix, agent_id)

    # --- lifecycle ---------------------------------------------------------------------

    @_guarded
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

    @_guarded
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

    # --- tasks -------------------------------------------------------------------------

    @_guarded
    async def get_task(self, agent_id: str, task_id: str) -> Task | None:
        data = await self.client.hget(self.keys(agent_id).task(task_id), "d")
        return None if data is None else _task_dec.decode(data)

    @_guarded
    async def get_task_record(self, agent_id: str, task_id: str) -> StoredTask | None:
        data, seq, owner = await self.client.hmget(
            self.keys(agent_id).task(task_id), ["d", "seq", "owner"]
        )
        if data is None:
            return None
        return StoredTask(
            _task_dec.decode(data), int(cast(bytes, seq)), None if owner is None else _text(owner)
        )

    @_guarded
    async def save_task(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent] = (),
        *,
        owner: str | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        check_events(task.id, events)
        k = self.keys(agent_id)
        state = task.status.state
        keys = (
            *k.common_keys,
            k.task(task.id),
            k.events(task.id),
            k.push(task.id),
            k.context(task.context_id),
            k.state(state.value),
            *self._outbox_keys,
        )
        args: list[str | bytes | int] = [
            *k.common_args,
            task.id,
            _enc.encode(task),
            task.context_id,
            state.value,
            repr(now()),
            "1" if state.terminal else "0",
            self._task_ttl,
            self._history_ttl,
            self._push_ttl,
            "" if owner is None else "=" + owner,
            events[0].seq if events else 0,
        ]
        args.extend(_enc.encode(e.event) for e in events)
        for d in deliveries:
            ident, queue = self._ident(d)
            args.extend((ident, d.seq * 2 + int(d.snapshot), _enc.encode(d), queue))
        args.append(len(deliveries))
        ok, stored = await self._batch.call(scripts.SAVE, keys, args)
        if not ok:
            raise log_conflict(task.id, events[0].seq, int(stored))

    @_guarded
    async def list_tasks(self, agent_id: str, query: TaskQuery) -> TaskPage:
        cursor = decode_page_token(query.page_token) if query.page_token else None
        k = self.keys(agent_id)
        indexes = [
            k.context(query.context_id) if query.context_id is not None else None,
            k.state(query.state.value) if query.state is not None else None,
            k.owner(query.owner) if query.owner is not None else None,
        ]
        sources = [index for index in indexes if index is not None] or [k.tasks]
        lowest = "-inf" if query.updated_after is None else repr(float(query.updated_after))
        ties = cursor is not None and (
            query.updated_after is None or cursor[0] >= query.updated_after
        )
        size = max(query.page_size, 0)
        reply = await scripts.LIST(
            self.client,
            (*k.common_keys, k.scratch(), *sources),
            (
                *k.common_args,
                k.task_prefix,
                lowest,
                "" if cursor is None else repr(cursor[0]),
                "1" if ties else "0",
                size + 1,  # one more tells whether there is a next page
            ),
        )
        total, n_ties = int(reply[0]), int(reply[1])
        rows: list[tuple[float, str, bytes]] = []
        if cursor is not None and n_ties:
            at, after_id = cursor
            for i in range(2, 2 + 2 * n_ties, 2):
                task_id = _text(reply[i])
                if task_id < after_id:  # equal updated_at: task_id descending
                    rows.append((at, task_id, reply[i + 1]))
            rows.sort(key=lambda r: r[1], reverse=True)
        rest = reply[2 + 2 * n_ties :]
        rows.extend(
            (float(rest[i + 1]), _text(rest[i]), rest[i + 2]) for i in range(0, len(rest), 3)
        )
        more = len(rows) > size
        page = rows[:size]
        token = encode_page_token(page[-1][0], page[-1][1]) if page and more else ""
        return TaskPage(
            tasks=[_task_dec.decode(r[2]) for r in page],
            next_page_token=token,
            total_size=max(total, len(page)),
        )

    @_guarded
    async def expired_tasks(self, agent_id: str, before: float, limit: int) -> list[str]:
        """Besides this, Redis drops ended tasks by itself ``task_ttl`` after they end."""
        k = self.keys(agent_id)
        found: list[tuple[float, str]] = []
        for state in _ENDED:
            rows: Any = await self.client.zrange(
                k.state(state),
                "-inf",
                f"({before!r}",
                byscore=True,
                offset=0,
                num=limit,
                withscores=True,
            )
            found.extend((float(score), _text(member)) for member, score in rows)
        found.sort()
        return [task_id for _, task_id in found[:limit]]

    # --- message claims --------------------------------------------------------------

    @_guarded
    async def claim_message(
        self, agent_id: str, owner: str | None, message_id: str, claim: MessageClaim
    ) -> MessageClaim | None:
        if not claim.created:
            claim = msgspec.structs.replace(claim, created=now())
        found = await self._batch.call(
            scripts.CLAIM_MESSAGE,
            (self.keys(agent_id).claim(owner, message_id),),
            (
                _enc.encode(claim),
                self._history_ttl,
                "1" if claim.reply is not None else "0",
                claim.task_id,
            ),
        )
        return None if found is None else _claim_dec.decode(found)

    async def purge_claims(self, agent_id: str, before: float, limit: int = 100) -> int:
        """Claims expire by themselves (``history_ttl`` after they were made): none here."""
        return 0

    @_guarded
    async def delete_task(self, agent_id: str, task_id: str) -> bool:
        k = self.keys(agent_id)
        existed = await scripts.DELETE(
            self.client,
            (*k.common_keys, k.task(task_id), k.events(task_id), k.push(task_id)),
            (*k.common_args, task_id),
        )
        return bool(existed)

    # --- events ------------------------------------------------------------------------

    @_guarded
    async def read_events(
        self, agent_id: str, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[TaskEvent]:
        if limit is not None and limit <= 0:
            return []
        entries = cast(
            list[tuple[bytes, dict[bytes, bytes]]],
            await self.client.xrange(
                self.keys(agent_id).events(task_id),
                min=f"(0-{max(after, 0)}",
                max="+",
                count=limit,
            ),
        )
        return [
            TaskEvent(seq=int(entry_id.rpartition(b"-")[2]), event=_event_dec.decode(fields[b"d"]))
            for entry_id, fields in entries
        ]

    @_guarded
    async def last_seq(self, agent_id: str, task_id: str) -> int:
        k = self.keys(agent_id)
        return int(await scripts.LAST_SEQ(self.client, (k.task(task_id), k.events(task_id)), ()))

    # --- outbox --------------------------------------------------------------------------

    @property
    def _outbox_keys(self) -> tuple[str, str, str]:
        base = f"{self.prefix}:outbox:"
        return base + "due", base + "data", base + "dead"

    def _ident(self, d: Delivery) -> tuple[str, str]:
        """A delivery's member name in the outbox, and its config's queue key."""
        queue = f"{d.agent_id}\0{d.task_id}\0{d.config_id}"
        return f"{queue}|{d.seq}|{int(d.snapshot)}", f"{self.prefix}:outbox:q:{queue}"

    @_guarded
    async def add_deliveries(self, deliveries: Sequence[Delivery]) -> None:
        due, data, dead = self._outbox_keys
        for d in deliveries:
            ident, queue = self._ident(d)
            if await self.client.hexists(dead, ident):
                continue
            if await self.client.hsetnx(data, ident, _enc.encode(d)):
                async with self.client.pipeline(transaction=True) as pipe:
                    pipe.zadd(due, {ident: d.due})
                    pipe.zadd(queue, {ident: d.seq * 2 + int(d.snapshot)})
                    await pipe.execute()

    @_guarded
    async def claim_deliveries(
        self, limit: int, lease: float, now: float | None = None
    ) -> list[Delivery]:
        at = time.time() if now is None else now
        due, data, _ = self._outbox_keys
        blobs = await scripts.OUTBOX_CLAIM(
            self.client,
            (due, data),
            (repr(at), repr(at + lease), limit, f"{self.prefix}:outbox:q:"),
        )
        claimed = [_delivery_dec.decode(b) for b in blobs]
        for d in claimed:
            d.due = at + lease
        return claimed

    @_guarded
    async def finish_delivery(self, delivery: Delivery) -> None:
        due, data, _ = self._outbox_keys
        ident, queue = self._ident(delivery)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zrem(due, ident)
            pipe.hdel(data, ident)
            pipe.zrem(queue, ident)
            await pipe.execute()

    @_guarded
    async def update_delivery(self, delivery: Delivery) -> None:
        due, data, dead = self._outbox_keys
        ident, queue = self._ident(delivery)
        if not await self.client.hexists(data, ident):
            return
        async with self.client.pipeline(transaction=True) as pipe:
            if delivery.dead:
                pipe.zrem(due, ident)
                pipe.hdel(data, ident)
                pipe.zrem(queue, ident)
                pipe.hset(dead, ident, _enc.encode(delivery))
            else:
                pipe.hset(data, ident, _enc.encode(delivery))
                pipe.zadd(due, {ident: delivery.due})
            await pipe.execute()

    @_guarded
    async def settle_deliveries(
        self, finished: Sequence[Delivery] = (), updated: Sequence[Delivery] = ()
    ) -> None:
        if not finished and not updated:
            return
        due, data, dead = self._outbox_keys
        present: list[bool] = []
        if updated:  # only deliveries still queued are updated (as update_delivery)
            async with self.client.pipeline(transaction=False) as pipe:
                for d in updated:
                    pipe.hexists(data, self._ident(d)[0])
                present = [bool(x) for x in await pipe.execute()]
        async with self.client.pipeline(transaction=True) as pipe:
            for d in finished:
                ident, queue = self._ident(d)
                pipe.zrem(due, ident)
                pipe.hdel(data, ident)
                pipe.zrem(queue, ident)
            for d, there in zip(updated, present, strict=True):
                if not there:
                    continue
                ident, queue = self._ident(d)
                if d.dead:
                    pipe.zrem(due, ident)
                    pipe.hdel(data, ident)
                    pipe.zrem(queue, ident)
                    pipe.hset(dead, ident, _enc.encode(d))
                else:
                    pipe.hset(data, ident, _enc.encode(d))
                    pipe.zadd(due, {ident: d.due})
            await pipe.execute()

    @_guarded
    async def delivery_sources(self, deliveries: Sequence[Delivery]) -> list[DeliverySource]:
        if not deliveries:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for d in deliveries:
                keys = self.keys(d.agent_id)
                pipe.hget(keys.push(d.task_id), "c:" + d.config_id)
                if not d.snapshot:
                    pipe.xrange(keys.events(d.task_id), min=f"0-{d.seq}", max=f"0-{d.seq}")
            replies = iter(await pipe.execute())
        out = []
        for d in deliveries:
            value = next(replies)
            entries = [] if d.snapshot else cast(list[Any], next(replies))
            if value is None:
                out.append(DeliverySource(None, None))
                continue
            config = _push_dec.decode(_split_push(cast(bytes, value))[1])
            event = _event_dec.decode(entries[0][1][b"d"]) if entries else None
            out.append(DeliverySource(config, event))
        return out

    @_guarded
    async def dead_deliveries(self, limit: int = 1000) -> list[Delivery]:
        _, _, dead = self._outbox_keys
        blobs = cast(list[bytes], await self.client.hvals(dead))
        found = sorted((_delivery_dec.decode(b) for b in blobs), key=lambda d: d.due)
        return found[:limit]

    @_guarded
    async def outbox_size(self) -> tuple[int, int]:
        _, data, dead = self._outbox_keys
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.hlen(data)
            pipe.hlen(dead)
            pending, gone = await pipe.execute()
        return int(pending), int(gone)

    @_guarded
    async def requeue_deliveries(self, ids: Sequence[str] | None = None) -> int:
        due, data, dead = self._outbox_keys
        wanted = None if ids is None else set(ids)
        at = time.time()
        count = 0
        entries = cast(dict[bytes, bytes], await self.client.hgetall(dead))
        for raw_ident, blob in entries.items():
            d = _delivery_dec.decode(blob)
            if wanted is not None and d.id not in wanted:
                continue
            d = msgspec.structs.replace(
                d, dead=False, attempts=0, due=at, first_failure=None, last_error=""
            )
            ident, queue = self._ident(d)
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.hdel(dead, raw_ident)
                pipe.hset(data, ident, _enc.encode(d))
                pipe.zadd(due, {ident: at})
                pipe.zadd(queue, {ident: d.seq * 2 + int(d.snapshot)})
                await pipe.execute()
            count += 1
        return count

    # --- meta --------------------------------------------------------------------------

    @_guarded
    async def get_meta(self, name: str) -> bytes | None:
        value = await self.client.get(f"{self.prefix}:meta:{name}")
        return None if value is None else cast(bytes, value)

    @_guarded
    async def swap_meta(self, name: str, expected: bytes | None, value: bytes) -> bool:
        done = await scripts.META_SWAP(
            self.client,
            (f"{self.prefix}:meta:{name}",),
            (expected or b"", value, "0" if expected is None else "1"),
        )
        return bool(done)

    # --- push configs ------------------------------------------------------------------

    @_guarded
    async def set_push_config(
        self, agent_id: str, task_id: str, config: TaskPushNotificationConfig
    ) -> None:
        k = self.keys(agent_id)
        found = await scripts.SET_PUSH(
            self.client,
            (k.task(task_id), k.push(task_id)),
            ("c:" + (config.id or task_id), _enc.encode(config), self._push_ttl),
        )
        if not found:
            raise TaskNotFoundError(f"Task {task_id} not found")

    @_guarded
    async def get_push_config(
        self, agent_id: str, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        value = await self.client.hget(self.keys(agent_id).push(task_id), "c:" + config_id)
        return None if value is None else _push_dec.decode(_split_push(cast(bytes, value))[1])

    @_guarded
    async def list_push_configs(
        self, agent_id: str, task_id: str
    ) -> list[TaskPushNotificationConfig]:
        fields = cast(
            dict[bytes, bytes], await self.client.hgetall(self.keys(agent_id).push(task_id))
        )
        configs = sorted(_split_push(v) for f, v in fields.items() if f.startswith(b"c:"))
        return [_push_dec.decode(data) for _, data in configs]

    @_guarded
    async def delete_push_config(self, agent_id: str, task_id: str, config_id: str) -> bool:
        removed = await self.client.hdel(self.keys(agent_id).push(task_id), "c:" + config_id)
        return bool(removed)
