"""Where a hosted LangGraph graph keeps its checkpoints: beside the hub's own tasks.

The store URL (:attr:`~a2a_hub.agents.links.HubLinks.store_url`) decides, with LangGraph's
own checkpointer packages:

* ``postgresql://…`` — the same database, through ``langgraph-checkpoint-postgres``
  (``AsyncPostgresSaver`` over a small psycopg pool; its tables are made at first use), so
  every instance sharing the store shares the conversations;
* ``sqlite:///path/hub.db`` — a file beside it, ``path/hub.langgraph.db``, through
  ``langgraph-checkpoint-sqlite`` (``AsyncSqliteSaver``);
* ``memory://`` (or an in-memory SQLite store) — LangGraph's ``InMemorySaver``: lost on exit,
  like the tasks;
* ``redis://…`` — the SQLite file ``.a2a-hub/langgraph.db`` (LangGraph has no checkpointer
  here for Redis): one instance's conversations only.

:class:`Checkpoints` is a service of its executor: opened on first use (in the hub's event
loop), closed by the executor's ``close()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from a2a_hub.stores.urls import safe_store_url, sqlite_path

__all__ = ["REDIS_FALLBACK", "Checkpoints", "checkpoint_location"]

log = logging.getLogger(__name__)

#: The checkpoint file of a hub whose store is Redis (relative to the working directory).
REDIS_FALLBACK = Path(".a2a-hub") / "langgraph.db"

#: libpq connection options kept from the store URL (the store's own options are not libpq's).
_LIBPQ_OPTIONS = frozenset({
    "sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword", "connect_timeout",
    "application_name", "options", "target_session_attrs", "user", "password", "host", "port",
    "passfile", "channel_binding", "gssencmode",
})  # fmt: skip


def checkpoint_location(store_url: str | None) -> tuple[str, str | Path | None]:
    """``("postgres", conninfo)``, ``("sqlite", file)`` or ``("memory", None)`` for the hub's
    store URL (``None``: no hub, in memory)."""
    if not store_url:
        return "memory", None
    scheme = store_url.partition(":")[0].partition("+")[0].lower()
    if scheme in ("postgresql", "postgres"):
        parts = urlsplit(store_url)
        query = [(k, v) for k, v in parse_qsl(parts.query) if k in _LIBPQ_OPTIONS]
        return "postgres", urlunsplit(
            ("postgresql", parts.netloc, parts.path, urlencode(query), "")
        )
    if scheme == "sqlite":
        path = sqlite_path(store_url)
        if path is None:
            return "memory", None
        return "sqlite", path.with_name(path.stem + ".langgraph.db")
    if scheme == "redis":
        return "sqlite", REDIS_FALLBACK.resolve()
    return "memory", None


class Checkpoints:
    """The checkpointer of one hosted graph, opened on first use."""

    def __init__(self, store_url: str | None) -> None:
        self.kind, self.where = checkpoint_location(store_url)
        self._saver: BaseCheckpointSaver[Any] | None = None
        self._lock = asyncio.Lock()
        self._stack = contextlib.AsyncExitStack()

    def describe(self) -> str:
        """Where the checkpoints are, for people (no password)."""
        if self.kind == "postgres":
            return f"PostgreSQL {safe_store_url(str(self.where))}"
        if self.kind == "sqlite":
            return f"SQLite file {self.where}"
        return "memory (lost on exit)"

    async def saver(self) -> BaseCheckpointSaver[Any]:
        """The open checkpointer (opened now if it is not yet)."""
        if self._saver is not None:
            return self._saver
        async with self._lock:
            if self._saver is None:
                self._saver = await self._open()
                log.info("LangGraph checkpoints in %s", self.describe())
        return self._saver

    async def _open(self) -> BaseCheckpointSaver[Any]:
        if self.kind == "postgres":
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
            from psycopg.rows import dict_row
            from psycopg_pool import AsyncConnectionPool

            pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                str(self.where),
                min_size=1,
                max_size=8,
                open=False,
                kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            )
            await pool.open(wait=True, timeout=30)
            self._stack.push_async_callback(pool.close)
            postgres = AsyncPostgresSaver(pool)
            await postgres.setup()
            return postgres
        if self.kind == "sqlite":
            import aiosqlite
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            path = Path(str(self.where))
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = await aiosqlite.connect(path)
            self._stack.push_async_callback(conn.close)
            sqlite = AsyncSqliteSaver(conn)
            await sqlite.setup()
            return sqlite
        return InMemorySaver()

    async def close(self) -> None:
        """Close the connections (the saver opens again if used after)."""
        async with self._lock:
            self._saver = None
            stack, self._stack = self._stack, contextlib.AsyncExitStack()
            await stack.aclose()
