"""The Redis backend (``redis://…``, ``rediss://…``).

=====================  ==============================================================
:mod:`.keys`           every key name (store and coordinator); depends on nothing here
:mod:`.scripts`        the Lua scripts, read once from this package's ``.lua`` files
:mod:`.coordinator`    leases, signals and wake-ups for instances sharing the store
:mod:`.store`          :class:`RedisStore` and its URL options
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

from a2a_hub.stores.redis.keys import RedisKeys
from a2a_hub.stores.redis.store import RedisOptions, RedisStore

__all__ = ["RedisKeys", "RedisOptions", "RedisStore"]
