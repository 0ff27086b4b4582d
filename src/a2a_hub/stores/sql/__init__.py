"""The SQL backend (``sqlite:///path``, ``postgresql://…``).

=======================  ============================================================
:mod:`.database`         the SQL plumbing shared with the registry: engine URL, engine
                         and SQLite pragmas, table creation, the versioned migration runner
:mod:`.schema`           tables and indexes (depends on nothing here)
:mod:`.routines`         SQL run in the database: PostgreSQL batch functions, count triggers
:mod:`.migrations`       the schema version and the migrations between versions
:mod:`.statements`       every statement of the store, built once
:mod:`.base`             :class:`~.base.SqlBase`: engine, reader, writer, plans of writes
:mod:`.tasks`            tasks and event logs (a mixin over the base)
:mod:`.push`             push configs and the push outbox (a mixin)
:mod:`.claims`           message claims and named values (a mixin)
:mod:`.store`            :class:`SqlStore`: the mixins joined; open and close
:mod:`.sqlite_writer`    SQLite group commit: one writer thread, one transaction per batch
:mod:`.pg_writer`        PostgreSQL group commit: one function call per batch
:mod:`.pg_coordinator`   leases and LISTEN/NOTIFY for instances sharing a PostgreSQL store
=======================  ============================================================
"""

from __future__ import annotations

from a2a_hub.stores.sql.migrations import SCHEMA_VERSION
from a2a_hub.stores.sql.schema import EVENTS_CHANNEL
from a2a_hub.stores.sql.store import SqlStore

__all__ = ["EVENTS_CHANNEL", "SCHEMA_VERSION", "SqlStore"]
