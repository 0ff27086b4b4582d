"""The Redis backend (``redis://…``, ``rediss://…``).

=====================  ==============================================================
:mod:`.keyspace`       every key name (store and coordinator); depends on nothing here
:mod:`.scripts`        the Lua scripts, read once from this package's ``.lua`` files
:mod:`.batch`          group commit: the saves and claims waiting at once, one pipeline
:mod:`.coordinator`    leases, signals and wake-ups for instances sharing the store
:mod:`.options`        :class:`RedisOptions`: the URL's prefix and TTLs
:mod:`.base`           :class:`~.base.RedisBase`: client, key names, batch, outbox keys
:mod:`.tasks`          tasks and event logs (a mixin over the base)
:mod:`.push`           push configs and the push outbox (a mixin)
:mod:`.claims`         message claims and named values (a mixin)
:mod:`.store`          :class:`RedisStore`: the mixins joined; connect, close, purge
=====================  ==============================================================
"""

from __future__ import annotations

# Checked here, not only in .store: the package itself is what open_store() imports.
try:
    import redis.asyncio  # noqa: F401
except ImportError as _exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "The Redis store needs the redis package: pip install 'a2a-hub[redis]'"
    ) from _exc

from a2a_hub.stores.redis.keyspace import RedisKeys
from a2a_hub.stores.redis.store import RedisOptions, RedisStore

__all__ = ["RedisKeys", "RedisOptions", "RedisStore"]
