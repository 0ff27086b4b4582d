"""Task stores: the interfaces and :func:`open_store`, which picks a backend by URL.

========================  =============================================
``memory://``             :class:`MemoryStore` (this process only)
``sqlite:///path``        :class:`~a2a_hub.stores.sql.SqlStore`, aiosqlite
``postgresql://…``        :class:`~a2a_hub.stores.sql.SqlStore`, asyncpg
                          (``pip install 'a2a-hub[postgres]'``)
``redis://…``             :class:`~a2a_hub.stores.redis.RedisStore`, redis-py
``rediss://…``            (``pip install 'a2a-hub[redis]'``); TTLs and key
                          prefix as query options, see
                          :mod:`a2a_hub.stores.redis.store`
========================  =============================================

One package per server backend: :mod:`a2a_hub.stores.sql` and
:mod:`a2a_hub.stores.redis`, each with its store, its coordinator and, below
both, its schema or key names.
"""

from __future__ import annotations

from a2a_hub.stores.base import (
    EventLog,
    LogConflictError,
    PushConfigStore,
    Store,
    StoredTask,
    TaskEvent,
    TaskPage,
    TaskQuery,
    TaskStore,
    decode_page_token,
    encode_page_token,
)
from a2a_hub.stores.memory import MemoryStore
from a2a_hub.stores.urls import SUPPORTED_SCHEMES, check_store_url

__all__ = [
    "SUPPORTED_SCHEMES",
    "EventLog",
    "LogConflictError",
    "MemoryStore",
    "PushConfigStore",
    "Store",
    "StoredTask",
    "TaskEvent",
    "TaskPage",
    "TaskQuery",
    "TaskStore",
    "decode_page_token",
    "encode_page_token",
    "open_store",
]


def open_store(url: str) -> Store:
    """The store for ``url``, not yet opened: the caller awaits ``store.open()``.

    Raises :class:`ValueError` for a URL no backend serves or that cannot work
    (see :func:`~a2a_hub.stores.urls.check_store_url`), and :class:`ImportError`
    naming the extra to install when a backend's library is missing.
    """
    check_store_url(url)
    scheme, sep, _ = url.partition("://")
    base = scheme.lower().partition("+")[0] if sep else ""
    if base == "memory":
        return MemoryStore(url)
    if base in ("sqlite", "postgresql", "postgres"):
        from a2a_hub.stores.sql import SqlStore

        return SqlStore(url)
    from a2a_hub.stores.redis import RedisStore

    return RedisStore(url)
