"""The task store's schema version and the migrations between versions.

:data:`SCHEMA` sets the schema up in an empty database, or upgrades an older one, through
the migration runner the registry uses too (:class:`~.database.VersionedSchema`).
"""

from __future__ import annotations

from sqlalchemy import Connection, delete, func, insert, inspect, literal, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.schema import CreateIndex, CreateTable, DropIndex

from a2a_hub.stores.sql.database import Step, VersionedSchema, create_table, dialect_insert
from a2a_hub.stores.sql.routines import (
    BATCH_FUNCTIONS,
    CLAIM_MESSAGES_SQL,
    PG_COUNT_DELETED_FUNCTION,
    PG_COUNT_FUNCTION,
    PG_COUNT_TRIGGERS,
    SAVE_TASKS_SQL,
    SAVE_TASKS_V6_SQL,
    SQLITE_COUNT_TRIGGERS,
)
from a2a_hub.stores.sql.schema import (
    DATA_TABLES,
    events,
    leases,
    message_claims,
    meta,
    push_configs,
    push_outbox,
    schema_version,
    task_counts,
    tasks,
)

__all__ = ["SCHEMA", "SCHEMA_VERSION", "setup_schema"]

#: Version of the schema this code writes.  Bump it and add an entry to
#: ``_MIGRATIONS`` (``version -> coroutine upgrading from version - 1``).
SCHEMA_VERSION = 10

_PG_SCHEMA_LOCK = 0x0A2A_0B5C  # pg_advisory_xact_lock key serialising schema setup


async def _add_leases(conn: AsyncConnection) -> None:
    """Version 2: leases of running tasks, for instances that share the store."""
    await create_table(conn, leases)


async def _add_owner(conn: AsyncConnection) -> None:
    """Version 3: the owner of each task (``NULL`` for tasks created before), and its index."""
    columns = await conn.run_sync(
        lambda sync: {c["name"] for c in inspect(sync).get_columns(tasks.name)}
    )
    if "owner" not in columns:
        await conn.execute(text(f"ALTER TABLE {tasks.name} ADD COLUMN owner VARCHAR"))
    owner_index = next(ix for ix in tasks.indexes if ix.name == "ix_a2a_tasks_owner")
    await conn.execute(CreateIndex(owner_index, if_not_exists=True))


async def _list_indexes(conn: AsyncConnection) -> None:
    """Version 8: ListTasks indexes ending with the page order (context and owner ones
    rebuilt with ``task_id``), and the one of ListTasks filtered by status."""
    for name in ("ix_a2a_tasks_context", "ix_a2a_tasks_owner", "ix_a2a_tasks_state"):
        index = next(ix for ix in tasks.indexes if ix.name == name)
        await conn.execute(DropIndex(index, if_exists=True))
        await conn.execute(CreateIndex(index))


async def _add_save_function(conn: AsyncConnection) -> None:
    """Version 4: PostgreSQL saves batches of tasks in one call (:data:`SAVE_TASKS`)."""
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(SAVE_TASKS_SQL)


async def _add_save_with_deliveries(conn: AsyncConnection) -> None:
    """Version 6: PostgreSQL saves carrying push deliveries stay in the group commit
    (:data:`SAVE_TASKS_WITH_DELIVERIES`; the v4 function stays for older instances)."""
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(SAVE_TASKS_V6_SQL)


async def _add_outbox(conn: AsyncConnection) -> None:
    """Version 5: the push notification outbox and the shared named values."""
    await create_table(conn, push_outbox)
    await create_table(conn, meta)


async def _add_message_claims(conn: AsyncConnection) -> None:
    """Version 7: message claims (idempotent sends), and PostgreSQL's batch claim function."""
    await create_table(conn, message_claims)
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(CLAIM_MESSAGES_SQL)


async def _add_count_triggers(conn: AsyncConnection) -> None:
    """The triggers keeping :data:`task_counts` (the table must exist)."""
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(PG_COUNT_FUNCTION)
        await conn.exec_driver_sql(PG_COUNT_DELETED_FUNCTION)
        triggers = {
            name: f"{when.format(table=tasks.name)} EXECUTE FUNCTION a2a_count_tasks()"
            for name, when in PG_COUNT_TRIGGERS.items()
        }
        triggers["a2a_tasks_count_delete"] = (
            f"AFTER DELETE ON {tasks.name} REFERENCING OLD TABLE AS gone "
            "FOR EACH STATEMENT EXECUTE FUNCTION a2a_count_deleted_tasks()"
        )
        for name, definition in triggers.items():
            await conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name} ON {tasks.name}")
            await conn.exec_driver_sql(f"CREATE TRIGGER {name} {definition}")
    else:
        for trigger in SQLITE_COUNT_TRIGGERS:
            await conn.exec_driver_sql(trigger)


async def _add_task_counts(conn: AsyncConnection) -> None:
    """Version 9: the task counts (ListTasks' totalSize), their triggers, and the counts
    of the tasks already there.  PostgreSQL's CREATE TRIGGER locks out writes to the tasks
    until the setup transaction commits, so no write falls between the count and them."""
    await create_table(conn, task_counts)
    await _add_save_with_deliveries(conn)  # the function now counts its batches
    await _add_count_triggers(conn)
    await conn.execute(delete(task_counts))
    owner = func.coalesce(tasks.c.owner, "")
    await conn.execute(
        insert(task_counts).from_select(
            ["agent_id", "owner", "state", "slot", "n"],
            select(tasks.c.agent_id, owner, tasks.c.state, literal(0), func.count()).group_by(
                tasks.c.agent_id, owner, tasks.c.state
            ),
        )
    )


async def _plans_that_hold(conn: AsyncConnection) -> None:
    """Version 10: no foreign keys from the events and push configs to their task (the
    store keeps those links itself, see :mod:`.schema`), and PostgreSQL's batch functions
    redefined with sequential scans disabled (see :mod:`.routines`).  SQLite files keep
    their declarations, unenforced (rebuilding the tables would copy every event)."""
    if conn.dialect.name != "postgresql":
        return

    def foreign_keys(sync: Connection) -> list[tuple[str, str]]:
        found = inspect(sync)
        return [
            (table.name, str(key["name"]))
            for table in (events, push_configs)
            for key in found.get_foreign_keys(table.name)
        ]

    for table_name, key_name in await conn.run_sync(foreign_keys):
        await conn.exec_driver_sql(
            f'ALTER TABLE {table_name} DROP CONSTRAINT IF EXISTS "{key_name}"'
        )
    for definition in BATCH_FUNCTIONS.values():
        await conn.exec_driver_sql(definition)


# Upgrades, keyed by the version they produce; each runs inside the setup transaction.
_MIGRATIONS: dict[int, Step] = {
    2: _add_leases,
    3: _add_owner,
    4: _add_save_function,
    5: _add_outbox,
    6: _add_save_with_deliveries,
    7: _add_message_claims,
    8: _list_indexes,
    9: _add_task_counts,
    10: _plans_that_hold,
}


async def _read_version(conn: AsyncConnection) -> int | None:
    await conn.execute(CreateTable(schema_version, if_not_exists=True))
    found: int | None = (await conn.execute(select(schema_version.c.version))).scalar_one_or_none()
    return found


async def _create(conn: AsyncConnection) -> None:
    """The current schema in an empty database."""
    for table in DATA_TABLES:
        await create_table(conn, table)
    await _add_save_function(conn)
    await _add_save_with_deliveries(conn)
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(CLAIM_MESSAGES_SQL)
    await _add_count_triggers(conn)
    upsert = dialect_insert(conn.dialect.name)
    await conn.execute(
        upsert(schema_version).values(id=1, version=SCHEMA_VERSION).on_conflict_do_nothing()
    )


async def _write_version(conn: AsyncConnection, version: int) -> None:
    await conn.execute(update(schema_version).values(version=version))


#: The task store's schema: tables, version record (``a2a_schema_version``), migrations.
SCHEMA = VersionedSchema(
    what="Task store",
    version=SCHEMA_VERSION,
    lock=_PG_SCHEMA_LOCK,
    read_version=_read_version,
    create=_create,
    write_version=_write_version,
    migrations=_MIGRATIONS,
)


async def setup_schema(conn: AsyncConnection, safe_url: str) -> None:
    """Create the schema in an empty database, or upgrade an older one (in ``conn``'s
    transaction); refuse a schema newer than this code."""
    await SCHEMA.setup(conn, safe_url)
