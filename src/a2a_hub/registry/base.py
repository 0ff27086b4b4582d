"""What every part of the registry shares: its engine (its own, or the task store's when
both live in the same database), its errors, and the helpers of its writes.

:class:`RegistryBase` holds the engine; the parts (:mod:`.api_keys`, :mod:`.agents`,
:mod:`.conversations`, :mod:`.mcp_servers`) are mixins over it, and
:class:`~.registry.Registry` joins them and opens the database.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from a2a_hub.registry.schema import meta
from a2a_hub.stores.sql.database import dialect_insert
from a2a_hub.stores.sql.store import SqlStore

__all__ = [
    "DEFAULT_REGISTRY",
    "RegistryBase",
    "RegistryError",
    "UnknownEntryError",
    "bump",
    "insert_ignore",
    "parse_duration",
    "registry_url",
]

DEFAULT_REGISTRY = "sqlite:///.a2a-hub/registry.db"


class RegistryError(ValueError):
    """A registry request that cannot be done (unknown id, bad value); the message says why."""


class UnknownEntryError(RegistryError):
    """The registry has no entry with that id or name."""


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``90m``, ``45s`` or a bare number of seconds."""
    found = _DURATION.match(text)
    if found is None or float(found.group(1)) <= 0:
        raise RegistryError(f"{text!r} is not a duration like 30d, 12h, 90m or 3600s")
    return float(found.group(1)) * _UNIT[found.group(2)]


def registry_url(registry: str | None, store_url: str) -> str:
    """The registry URL: the setting, else the task store's database when SQL, else the
    default SQLite file."""
    if registry:
        return registry
    scheme = store_url.partition(":")[0].partition("+")[0]
    if scheme in ("sqlite", "postgresql", "postgres"):
        return store_url
    return DEFAULT_REGISTRY


class RegistryBase:
    """The registry's engine: between :meth:`~.registry.Registry.open` and
    :meth:`~.registry.Registry.close`, its own, or the task store's (``_shared``)."""

    safe_url: str
    _engine: AsyncEngine | None
    #: The task store whose engine the registry uses (the same database), once open.
    _shared: SqlStore | None
    #: The HMAC secret of the API keys (read or generated at open, unless given).
    _secret: bytes | None

    def __repr__(self) -> str:
        return f"Registry({self.safe_url!r})"

    @property
    def engine(self) -> AsyncEngine:
        """The SQLAlchemy engine (between :meth:`open` and :meth:`close`): the task store's
        when the registry shares its database, else the registry's own."""
        if self._shared is not None:
            return self._shared.engine
        if self._engine is None:
            raise RuntimeError(f"{self!r} is not open; await registry.open() first")
        return self._engine


def insert_ignore(dialect: str, table: Any = meta) -> Any:
    """An insert of ``table`` that keeps the row already there."""
    return dialect_insert(dialect)(table).on_conflict_do_nothing()


async def bump(conn: Any, name: str) -> None:
    """Count one more change of ``name`` (``agents``, ``keys``) in the registry's meta."""
    await conn.execute(update(meta).where(meta.c.name == name).values(number=meta.c.number + 1))
