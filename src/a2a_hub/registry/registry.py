"""The registry: API keys, agents, conversations and MCP server definitions in SQL.

One :class:`Registry` per process, over SQLite (one instance) or PostgreSQL
(several instances sharing it).  API keys are stored as a keyed hash only
(HMAC-SHA-256 under the server secret) with a display prefix; the key itself is
shown once, by :meth:`Registry.create_key`, and never written anywhere.

The secret: the ``auth.secret`` setting (``A2A_HUB_AUTH_SECRET``) when given;
otherwise one is generated from :mod:`secrets` the first time the registry is
opened and kept in the registry (row ``secret`` of ``a2a_reg_meta``), so that
every instance sharing the registry hashes alike; a SQLite registry file is then
made readable by its owner only (0600).  Whoever can read the registry
can read that secret; keys are 256-bit random values, so the hash protects
them even then (it cannot be reversed), and setting ``auth.secret`` elsewhere
keeps a stolen registry from being used to check guessed keys.

The registry lives in the task store's database when the store is SQL (the default): given
that store (``Registry(url, store=store)``), it then uses the store's engine, so that one
process holds one engine, with one set of pragmas, on that database.  The parts are mixins
over :class:`~.base.RegistryBase`: :mod:`.api_keys`, :mod:`.agents`, :mod:`.conversations`,
:mod:`.mcp_servers`.
"""

from __future__ import annotations

import contextlib
import os
import secrets

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_hub.registry.agents import RegistryAgents
from a2a_hub.registry.api_keys import RegistryKeys
from a2a_hub.registry.base import RegistryError, insert_ignore
from a2a_hub.registry.conversations import RegistryConversations
from a2a_hub.registry.mcp_servers import RegistryMcpServers
from a2a_hub.registry.schema import meta, setup_registry_schema
from a2a_hub.stores.base import Store
from a2a_hub.stores.sql.database import engine_url, open_engine, safe_url
from a2a_hub.stores.sql.store import SqlStore

__all__ = ["Registry"]


def _unsupported(shown: str) -> RegistryError:
    return RegistryError(
        f"the registry needs sqlite:///PATH or postgresql://USER@HOST/DB, not {shown!r}"
    )


class Registry(RegistryKeys, RegistryAgents, RegistryConversations, RegistryMcpServers):
    """API keys, agents, conversations and MCP servers in SQL; :meth:`open` before use,
    :meth:`close` after.

    ``store``: the hub's task store.  When it is a :class:`~a2a_hub.stores.sql.SqlStore`
    on the same database as ``url``, the registry uses its engine (the store must be open
    before the registry opens, and it stays the store's: :meth:`close` leaves it open);
    otherwise the registry opens an engine of its own.
    """

    def __init__(self, url: str, *, secret: str | None = None, store: Store | None = None) -> None:
        self.url = url
        self._engine_url, self._dialect = engine_url(url, _unsupported)
        self.safe_url = safe_url(url)
        self._secret = secret.encode() if secret else None
        self._engine = None
        self._shared = None
        self._store = store

    def _same_database(self) -> SqlStore | None:
        """The task store, if it is SQL on the registry's database."""
        store = self._store
        if isinstance(store, SqlStore) and engine_url(store.url, _unsupported)[0] == (
            self._engine_url
        ):
            return store
        return None

    async def open(self) -> None:
        """Connect (or take the task store's engine), create or upgrade the schema, and read
        (or generate) the secret."""
        if self._engine is not None or self._shared is not None:
            return
        shared = self._same_database()
        engine: AsyncEngine = (
            shared.engine if shared is not None else open_engine(self._engine_url, self._dialect)
        )
        try:
            async with engine.begin() as conn:
                await setup_registry_schema(conn, self.safe_url)
                if self._secret is None:
                    made = await conn.execute(
                        insert_ignore(conn.dialect.name).values(
                            name="secret", value=secrets.token_hex(32), number=0
                        )
                    )
                    if made.rowcount:
                        self._restrict_file()
                    self._secret = bytes.fromhex(
                        (
                            await conn.execute(select(meta.c.value).where(meta.c.name == "secret"))
                        ).scalar_one()
                    )
        except BaseException:
            if shared is None:
                await engine.dispose()
            raise
        if shared is None:
            self._engine = engine
        else:
            self._shared = shared

    def _restrict_file(self) -> None:
        """A SQLite registry that now holds a generated secret is readable by its owner only."""
        if self._engine_url.get_backend_name() != "sqlite":
            return
        database = self._engine_url.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.chmod(database + suffix, 0o600)

    async def close(self) -> None:
        """Release the connections (an engine of the task store's stays open: the store's)."""
        self._shared = None
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None
