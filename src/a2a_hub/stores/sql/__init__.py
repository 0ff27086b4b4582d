"""The SQL backend (``sqlite:///path``, ``postgresql://…``).

=====================  ==============================================================
:mod:`.schema`         tables, schema version and migrations (shared, depends on nothing here)
:mod:`.store`          :class:`SqlStore`, SQLAlchemy 2 Core, async
:mod:`.sqlite_writer`  SQLite group commit: one writer thread, one transaction per batch
:mod:`.pg_coordinator` leases and LISTEN/NOTIFY for instances sharing a PostgreSQL store
=====================  ==============================================================
"""

from __future__ import annotations

from a2a_hub.stores.sql.schema import EVENTS_CHANNEL, SCHEMA_VERSION
from a2a_hub.stores.sql.store import SqlStore

__all__ = ["EVENTS_CHANNEL", "SCHEMA_VERSION", "SqlStore"]
