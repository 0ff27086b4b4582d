"""What every concern of :class:`~.store.RedisStore` shares: the client, the key names,
the group-commit batch and the outbox's keys.

:class:`RedisBase` holds them; the concerns (:mod:`.tasks`, :mod:`.push`, :mod:`.claims`)
are mixins over it, and :class:`~.store.RedisStore` joins them and connects.
"""

from __future__ import annotations

from typing import Any

try:
    import redis.asyncio as aioredis
    from redis import exceptions as redis_exc
    from redis.backoff import EqualJitterBackoff
    from redis.retry import Retry
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "The Redis store needs the redis package: pip install 'a2a-hub[redis]'"
    ) from _exc

from a2a_hub.protocol.errors import StoreUnavailableError
from a2a_hub.stores.base import Delivery, Store, guarded, unavailable_error
from a2a_hub.stores.coordinator import Coordinator
from a2a_hub.stores.redis.batch import ScriptBatch
from a2a_hub.stores.redis.coordinator import RedisCoordinator
from a2a_hub.stores.redis.keyspace import ClusterKeys, RedisKeys, keys_for
from a2a_hub.stores.redis.options import RedisOptions

__all__ = [
    "RedisBase",
    "milliseconds",
    "redis_guarded",
    "split_push",
    "text_of",
    "unreachable",
]

_UNREACHABLE = (
    redis_exc.ConnectionError,  # includes auth, busy-loading, max-connections
    redis_exc.TimeoutError,
    redis_exc.ReadOnlyError,  # a replica after a failover
    OSError,  # includes the builtin TimeoutError
)


def unreachable(exc: BaseException) -> bool:
    """Redis cannot be reached (or is a read-only replica after a failover)."""
    return isinstance(exc, _UNREACHABLE)


redis_guarded = guarded(unreachable)


def milliseconds(seconds: float) -> int:
    """Milliseconds for the scripts; a TTL that is not 0 (forever) stays at least 1 ms."""
    return max(round(seconds * 1000), 1) if seconds else 0


def text_of(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def split_push(value: bytes) -> tuple[int, bytes]:
    order, _, data = value.partition(b" ")
    return int(order), data


class RedisBase(Store):
    """The state every concern of the Redis store uses, and the helpers around it."""

    def __init__(self, url: str, **client_options: Any) -> None:
        self.url = url
        self.options = RedisOptions.from_url(url)
        self.prefix = self.options.prefix
        self._task_ttl = str(milliseconds(self.options.task_ttl))
        self._history_ttl = str(milliseconds(self.options.history_ttl))
        self._push_ttl = str(milliseconds(self.options.push_ttl))
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

    # --- outbox keys ----------------------------------------------------------------------

    @property
    def _outbox_keys(self) -> tuple[str, str, str]:
        base = f"{self.prefix}:outbox:"
        return base + "due", base + "data", base + "dead"

    def _ident(self, d: Delivery) -> tuple[str, str]:
        """A delivery's member name in the outbox, and its config's queue key."""
        queue = f"{d.agent_id}\0{d.task_id}\0{d.config_id}"
        return f"{queue}|{d.seq}|{int(d.snapshot)}", f"{self.prefix}:outbox:q:{queue}"
