"""The SQL schema: tables, its version and the migrations between versions.

Shared by the store (:mod:`.store`) and the PostgreSQL coordinator
(:mod:`.pg_coordinator`), which both take an engine and never each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy import (
    Column,
    Double,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    delete,
    func,
    insert,
    inspect,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.schema import CreateIndex, CreateTable, DropIndex

__all__ = [
    "CLAIM_MESSAGES",
    "COUNTED_SETTING",
    "EVENTS_CHANNEL",
    "SAVE_TASKS",
    "SAVE_TASKS_WITH_DELIVERIES",
    "SCHEMA_VERSION",
    "create_table",
    "events",
    "leases",
    "message_claims",
    "meta",
    "metadata",
    "push_configs",
    "push_outbox",
    "schema_version",
    "setup_schema",
    "task_counts",
    "tasks",
]

#: Version of the schema this code writes.  Bump it and add an entry to
#: ``_MIGRATIONS`` (``version -> coroutine upgrading from version - 1``).
SCHEMA_VERSION = 9

#: PostgreSQL NOTIFY channel announcing new events ("agent_id task_id seq").
EVENTS_CHANNEL = "a2a_events"

_PG_SCHEMA_LOCK = 0x0A2A_0B5C  # pg_advisory_xact_lock key serialising schema setup

metadata = MetaData()

tasks = Table(
    "a2a_tasks",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("context_id", String, nullable=False),
    Column("state", String, nullable=False),
    Column("updated_at", Double, nullable=False),
    Column("last_seq", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
    # The principal that created the task (None: anonymous); set once, never changed.  (v3)
    Column("owner", String, nullable=True),
)
Index("ix_a2a_tasks_updated", tasks.c.agent_id, tasks.c.updated_at, tasks.c.task_id)
# ListTasks by context, owner or status: each index ends with the page order (updated_at,
# task_id), so a page is read in order from it, never sorted (v8 added task_id to the context
# and owner indexes, which the planners passed over for the agent-wide one, and the status one).
Index(
    "ix_a2a_tasks_context",
    tasks.c.agent_id,
    tasks.c.context_id,
    tasks.c.updated_at,
    tasks.c.task_id,
)
Index("ix_a2a_tasks_owner", tasks.c.agent_id, tasks.c.owner, tasks.c.updated_at, tasks.c.task_id)
Index("ix_a2a_tasks_state", tasks.c.agent_id, tasks.c.state, tasks.c.updated_at, tasks.c.task_id)

events = Table(
    "a2a_task_events",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
    ForeignKeyConstraint(
        ["agent_id", "task_id"], [tasks.c.agent_id, tasks.c.task_id], ondelete="CASCADE"
    ),
)

push_configs = Table(
    "a2a_push_configs",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("config_id", String, primary_key=True),
    Column("created", Integer, nullable=False),  # creation order within the task
    Column("data", LargeBinary, nullable=False),
    ForeignKeyConstraint(
        ["agent_id", "task_id"], [tasks.c.agent_id, tasks.c.task_id], ondelete="CASCADE"
    ),
)

# Push notifications owed (v5): written in the save that writes their event; no foreign
# key, so that a delivery of a deleted task or config is simply dropped when it comes due.
push_outbox = Table(
    "a2a_push_outbox",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("config_id", String, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("snapshot", Integer, primary_key=True),  # 1: the task's snapshot, 0: event seq
    Column("attempts", Integer, nullable=False),
    Column("due", Double, nullable=False),
    Column("first_failure", Double, nullable=True),
    Column("last_error", String, nullable=False),
    Column("dead", Integer, nullable=False),
)
Index("ix_a2a_push_outbox_due", push_outbox.c.dead, push_outbox.c.due)

# Small named values shared by the instances, e.g. the push signing keys (v5).
meta = Table(
    "a2a_meta",
    metadata,
    Column("name", String, primary_key=True),
    Column("value", LargeBinary, nullable=False),
)

# Idempotent sends (v6): the first request carrying a caller's message id claims it before
# the agent starts; ``owner`` is '' for anonymous callers (a key column cannot be NULL).
message_claims = Table(
    "a2a_message_claims",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("owner", String, primary_key=True),
    Column("message_id", String, primary_key=True),
    Column("created_at", Double, nullable=False),
    Column("data", LargeBinary, nullable=False),  # the MessageClaim, JSON
)
Index("ix_a2a_message_claims_created", message_claims.c.agent_id, message_claims.c.created_at)

# How many tasks each agent has, by owner ('' for anonymous) and state (v9), so that
# ListTasks' totalSize is a sum of a few rows, not a count of the tasks.  Kept by triggers
# on a2a_tasks (insert, change of state, delete: retention too) in the writing transaction.
# PostgreSQL spreads each count over up to 8 ``slot`` rows (the writing backend's pid
# modulo 8), so that two instances' group commits rarely wait on one counter row; a slot
# may go negative, the sum is the count.  SQLite has one writer and uses slot 0.
task_counts = Table(
    "a2a_task_counts",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("owner", String, primary_key=True),
    Column("state", String, primary_key=True),
    Column("slot", Integer, primary_key=True),
    Column("n", Integer, nullable=False),
)

#: PostgreSQL: the transaction-local setting by which the batch save function says that
#: it counts the tasks it writes itself (the row triggers then do nothing).
COUNTED_SETTING = "a2a.counted"

schema_version = Table(
    "a2a_schema_version",
    metadata,
    Column("id", Integer, primary_key=True),  # always 1: a single row
    Column("version", Integer, nullable=False),
)

leases = Table(
    "a2a_leases",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("owner", String, nullable=False),
    Column("expires_at", Double, nullable=False),
)
Index("ix_a2a_leases_owner", leases.c.owner)
Index("ix_a2a_leases_expires", leases.c.expires_at)

_DATA_TABLES = (
    tasks,
    events,
    push_configs,
    leases,
    push_outbox,
    meta,
    message_claims,
    task_counts,
)


async def create_table(conn: AsyncConnection, table: Table) -> None:
    """Create ``table`` and its indexes unless they exist (the registry's schema uses it too)."""
    await conn.execute(CreateTable(table, if_not_exists=True))
    for index in sorted(table.indexes, key=lambda ix: str(ix.name)):
        await conn.execute(CreateIndex(index, if_not_exists=True))


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


#: PostgreSQL: the function saving a batch of tasks in one call (see ``_SAVE_TASKS_SQL``).
SAVE_TASKS = "a2a_save_tasks"

# Saves a batch of tasks (snapshot + events each) in order, in the caller's transaction.
# Save i: the snapshot p_data[i] (with the columns next to it), and the p_count[i] events
# p_events[pos + 1 .. pos + p_count[i]] (pos: the events of the saves before it) numbered
# from p_first[i].  Each save does what the store's save plan (store.py) does on SQLite:
# no events -> upsert the snapshot; events from 1 -> insert, or replace a snapshot that
# has no events yet; events from n > 1 -> update the row whose last_seq is n - 1; the
# owner is written only when the row is inserted, so it never changes.  A save
# whose events do not continue the log changes nothing and is reported, the others go on.
# Returns, per save, -1 if it was written, else the task's last stored seq (a conflict).
# Each save with events sends NOTIFY p_channel 'agent_id task_id last_seq' (NULL: none).
_SAVE_TASKS_SQL = f"""
CREATE OR REPLACE FUNCTION {SAVE_TASKS}(
    p_agent text[], p_task text[], p_context text[], p_state text[], p_updated float8[],
    p_data bytea[], p_owner text[], p_first int[], p_count int[], p_events bytea[],
    p_channel text
) RETURNS int[] LANGUAGE plpgsql AS $fn$
DECLARE
    v_n int := coalesce(array_length(p_task, 1), 0);
    v_result int[] := array_fill(-1, ARRAY[v_n]);
    v_pos int := 0;
    v_prev int;
    v_last int;
    v_rows int;
BEGIN
    FOR i IN 1 .. v_n LOOP
        IF p_count[i] = 0 THEN
            INSERT INTO {tasks.name} AS t
                (agent_id, task_id, context_id, state, updated_at, last_seq, data, owner)
            VALUES (p_agent[i], p_task[i], p_context[i], p_state[i], p_updated[i], 0,
                    p_data[i], p_owner[i])
            ON CONFLICT (agent_id, task_id) DO UPDATE SET
                context_id = excluded.context_id, state = excluded.state, data = excluded.data,
                updated_at = greatest(excluded.updated_at, t.updated_at);
            CONTINUE;
        END IF;
        v_prev := p_first[i] - 1;
        v_last := v_prev + p_count[i];
        IF v_prev = 0 THEN
            INSERT INTO {tasks.name} AS t
                (agent_id, task_id, context_id, state, updated_at, last_seq, data, owner)
            VALUES (p_agent[i], p_task[i], p_context[i], p_state[i], p_updated[i], v_last,
                    p_data[i], p_owner[i])
            ON CONFLICT (agent_id, task_id) DO UPDATE SET
                context_id = excluded.context_id, state = excluded.state, data = excluded.data,
                updated_at = greatest(excluded.updated_at, t.updated_at),
                last_seq = excluded.last_seq
            WHERE t.last_seq = 0;
        ELSE
            UPDATE {tasks.name} AS t SET
                context_id = p_context[i], state = p_state[i], data = p_data[i],
                updated_at = greatest(p_updated[i], t.updated_at), last_seq = v_last
            WHERE t.agent_id = p_agent[i] AND t.task_id = p_task[i] AND t.last_seq = v_prev;
        END IF;
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        IF v_rows = 1 THEN
            INSERT INTO {events.name} (agent_id, task_id, seq, data)
            SELECT p_agent[i], p_task[i], v_prev + e.n, e.data
            FROM unnest(p_events[v_pos + 1 : v_pos + p_count[i]]) WITH ORDINALITY AS e(data, n);
            IF p_channel IS NOT NULL THEN
                PERFORM pg_notify(p_channel, p_agent[i] || ' ' || p_task[i] || ' ' || v_last);
            END IF;
        ELSE
            v_result[i] := (SELECT coalesce(max(ev.seq), 0) FROM {events.name} AS ev
                            WHERE ev.agent_id = p_agent[i] AND ev.task_id = p_task[i]);
        END IF;
        v_pos := v_pos + p_count[i];
    END LOOP;
    RETURN v_result;
END
$fn$
"""


async def _add_save_function(conn: AsyncConnection) -> None:
    """Version 4: PostgreSQL saves batches of tasks in one call (:data:`SAVE_TASKS`)."""
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(_SAVE_TASKS_SQL)


#: PostgreSQL: the function saving a batch of tasks with their push deliveries (schema v6).
SAVE_TASKS_WITH_DELIVERIES = "a2a_save_tasks_v6"

# As a2a_save_tasks, plus each save's push deliveries, and (since v9) the task counts: each
# written save whose state changed moves its task from the old state's count to the new
# one's, and the batch applies the sums at the end, one change per count row in key order;
# the transaction says so (COUNTED_SETTING) and the row triggers stand aside.  Also: each
# save's push deliveries, inserted (a delivery already there
# is kept) only when the save itself is written: save i owns the p_dcount[i] deliveries
# at positions v_dpos + 1 .. v_dpos + p_dcount[i] of the d_* arrays.
_SAVE_TASKS_V6_SQL = f"""
CREATE OR REPLACE FUNCTION {SAVE_TASKS_WITH_DELIVERIES}(
    p_agent text[], p_task text[], p_context text[], p_state text[], p_updated float8[],
    p_data bytea[], p_owner text[], p_first int[], p_count int[], p_events bytea[],
    p_channel text, p_dcount int[], d_config text[], d_seq int[], d_snap int[],
    d_attempts int[], d_due float8[], d_first float8[], d_error text[], d_dead int[]
) RETURNS int[] LANGUAGE plpgsql AS $fn$
DECLARE
    v_n int := coalesce(array_length(p_task, 1), 0);
    v_result int[] := array_fill(-1, ARRAY[v_n]);
    v_pos int := 0;
    v_dpos int := 0;
    v_prev int;
    v_last int;
    v_rows int;
    v_old text;
    v_owner text;
    c_agent text[] := '{{}}';
    c_owner text[] := '{{}}';
    c_state text[] := '{{}}';
    c_n int[] := '{{}}';
BEGIN
    -- this transaction counts its tasks itself (the row triggers stand aside)
    PERFORM set_config('{COUNTED_SETTING}', 'on', true);
    FOR i IN 1 .. v_n LOOP
        -- the task's state and owner before this save (none: a new task); a task's
        -- first events (v_prev = 0) are inserted without looking: a new task most often
        v_old := NULL;
        v_owner := p_owner[i];
        IF p_count[i] = 0 OR p_first[i] > 1 THEN
            SELECT t.state, t.owner INTO v_old, v_owner FROM {tasks.name} AS t
            WHERE t.agent_id = p_agent[i] AND t.task_id = p_task[i] FOR UPDATE;
            IF NOT FOUND THEN
                v_owner := p_owner[i];
            END IF;
        END IF;
        IF p_count[i] = 0 THEN
            INSERT INTO {tasks.name} AS t
                (agent_id, task_id, context_id, state, updated_at, last_seq, data, owner)
            VALUES (p_agent[i], p_task[i], p_context[i], p_state[i], p_updated[i], 0,
                    p_data[i], p_owner[i])
            ON CONFLICT (agent_id, task_id) DO UPDATE SET
                context_id = excluded.context_id, state = excluded.state, data = excluded.data,
                updated_at = greatest(excluded.updated_at, t.updated_at);
            v_rows := 1;
        ELSE
            v_prev := p_first[i] - 1;
            v_last := v_prev + p_count[i];
            v_rows := 0;
            IF v_prev = 0 THEN
                INSERT INTO {tasks.name} AS t
                    (agent_id, task_id, context_id, state, updated_at, last_seq, data, owner)
                VALUES (p_agent[i], p_task[i], p_context[i], p_state[i], p_updated[i], v_last,
                        p_data[i], p_owner[i])
                ON CONFLICT (agent_id, task_id) DO NOTHING;
                GET DIAGNOSTICS v_rows = ROW_COUNT;
                IF v_rows = 0 THEN  -- there: replace it if it is a snapshot without events
                    SELECT t.state, t.owner INTO v_old, v_owner FROM {tasks.name} AS t
                    WHERE t.agent_id = p_agent[i] AND t.task_id = p_task[i] FOR UPDATE;
                END IF;
            END IF;
            IF v_rows = 0 THEN
                UPDATE {tasks.name} AS t SET
                    context_id = p_context[i], state = p_state[i], data = p_data[i],
                    updated_at = greatest(p_updated[i], t.updated_at), last_seq = v_last
                WHERE t.agent_id = p_agent[i] AND t.task_id = p_task[i]
                  AND t.last_seq = v_prev;
                GET DIAGNOSTICS v_rows = ROW_COUNT;
            END IF;
            IF v_rows = 1 THEN
                INSERT INTO {events.name} (agent_id, task_id, seq, data)
                SELECT p_agent[i], p_task[i], v_prev + e.n, e.data
                FROM unnest(p_events[v_pos + 1 : v_pos + p_count[i]])
                     WITH ORDINALITY AS e(data, n);
                IF p_channel IS NOT NULL THEN
                    PERFORM pg_notify(p_channel, p_agent[i] || ' ' || p_task[i] || ' ' || v_last);
                END IF;
            ELSE
                v_result[i] := (SELECT coalesce(max(ev.seq), 0) FROM {events.name} AS ev
                                WHERE ev.agent_id = p_agent[i] AND ev.task_id = p_task[i]);
            END IF;
        END IF;
        IF v_rows = 1 AND v_old IS DISTINCT FROM p_state[i] THEN
            IF v_old IS NOT NULL THEN
                c_agent := c_agent || p_agent[i];
                c_owner := c_owner || coalesce(v_owner, '');
                c_state := c_state || v_old;
                c_n := c_n || -1;
            END IF;
            c_agent := c_agent || p_agent[i];
            c_owner := c_owner || coalesce(v_owner, '');
            c_state := c_state || p_state[i];
            c_n := c_n || 1;
        END IF;
        IF v_rows = 1 AND p_dcount[i] > 0 THEN
            INSERT INTO {push_outbox.name}
                (agent_id, task_id, config_id, seq, snapshot, attempts, due, first_failure,
                 last_error, dead)
            SELECT p_agent[i], p_task[i], d_config[k], d_seq[k], d_snap[k], d_attempts[k],
                   d_due[k], d_first[k], d_error[k], d_dead[k]
            FROM generate_series(v_dpos + 1, v_dpos + p_dcount[i]) AS k
            ON CONFLICT DO NOTHING;
        END IF;
        v_pos := v_pos + p_count[i];
        v_dpos := v_dpos + p_dcount[i];
    END LOOP;
    -- one change per count row, in key order (no two batches wait on each other)
    INSERT INTO {task_counts.name} AS c (agent_id, owner, state, slot, n)
    SELECT d.a, d.o, d.s, pg_backend_pid() % 8, sum(d.n)
    FROM unnest(c_agent, c_owner, c_state, c_n) AS d(a, o, s, n)
    GROUP BY d.a, d.o, d.s ORDER BY d.a, d.o, d.s
    ON CONFLICT (agent_id, owner, state, slot) DO UPDATE SET n = c.n + excluded.n;
    RETURN v_result;
END
$fn$
"""


async def _add_save_with_deliveries(conn: AsyncConnection) -> None:
    """Version 6: PostgreSQL saves carrying push deliveries stay in the group commit
    (:data:`SAVE_TASKS_WITH_DELIVERIES`; the v4 function stays for older instances)."""
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(_SAVE_TASKS_V6_SQL)


async def _add_outbox(conn: AsyncConnection) -> None:
    """Version 5: the push notification outbox and the shared named values."""
    await create_table(conn, push_outbox)
    await create_table(conn, meta)


#: PostgreSQL: the function recording a batch of message claims in one call.
CLAIM_MESSAGES = "a2a_claim_messages"

# Claim i: record p_data[i] under (p_agent[i], p_owner[i], p_message[i]) unless a claim is
# there; with p_reply[i] true, complete the claim there if it is of task p_task[i] and has
# no reply yet (p_data[i] then replaces it).  Claims are taken in the order given (callers
# sort them, so that two instances never wait on each other in opposite orders).  Returns
# one row per claim that was not recorded: its position and the claim already there.
_CLAIM_MESSAGES_SQL = f"""
CREATE OR REPLACE FUNCTION {CLAIM_MESSAGES}(
    p_agent text[], p_owner text[], p_message text[], p_created float8[], p_data bytea[],
    p_task text[], p_reply bool[]
) RETURNS TABLE(o_pos int, o_data bytea) LANGUAGE plpgsql AS $fn$
DECLARE
    v_rows int;
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_message, 1), 0) LOOP
        IF p_reply[i] THEN
            UPDATE {message_claims.name} AS c SET data = p_data[i]
            WHERE c.agent_id = p_agent[i] AND c.owner = p_owner[i]
              AND c.message_id = p_message[i]
              AND convert_from(c.data, 'UTF8')::jsonb ->> 'task_id' = p_task[i]
              AND NOT (convert_from(c.data, 'UTF8')::jsonb ? 'reply');
        ELSE
            INSERT INTO {message_claims.name} AS c (agent_id, owner, message_id, created_at, data)
            VALUES (p_agent[i], p_owner[i], p_message[i], p_created[i], p_data[i])
            ON CONFLICT DO NOTHING;
        END IF;
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        IF v_rows = 0 THEN
            RETURN QUERY SELECT i, c.data FROM {message_claims.name} AS c
            WHERE c.agent_id = p_agent[i] AND c.owner = p_owner[i]
              AND c.message_id = p_message[i];
        END IF;
    END LOOP;
END
$fn$
"""


async def _add_message_claims(conn: AsyncConnection) -> None:
    """Version 7: message claims (idempotent sends), and PostgreSQL's batch claim function."""
    await create_table(conn, message_claims)
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(_CLAIM_MESSAGES_SQL)


# The counts' triggers.  PostgreSQL: a plpgsql function called for each inserted task and
# each update that changes a state (tested before any function is called), unless the
# batch save function writes them (it counts its batch itself, see _SAVE_TASKS_V6_SQL).
_PG_COUNT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION a2a_count_tasks() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    v_slot int := pg_backend_pid() % 8;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO {task_counts.name} AS c (agent_id, owner, state, slot, n)
        VALUES (OLD.agent_id, coalesce(OLD.owner, ''), OLD.state, v_slot, -1)
        ON CONFLICT (agent_id, owner, state, slot) DO UPDATE SET n = c.n - 1;
    END IF;
    INSERT INTO {task_counts.name} AS c (agent_id, owner, state, slot, n)
    VALUES (NEW.agent_id, coalesce(NEW.owner, ''), NEW.state, v_slot, 1)
    ON CONFLICT (agent_id, owner, state, slot) DO UPDATE SET n = c.n + 1;
    RETURN NULL;
END
$fn$
"""

# Deletes are counted per statement, one change per count row (a row counted down once per
# deleted task would be rewritten as many times in one transaction, each rewrite slower
# than the last: a bulk delete of 200,000 tasks took minutes).
_PG_COUNT_DELETED_FUNCTION = f"""
CREATE OR REPLACE FUNCTION a2a_count_deleted_tasks() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO {task_counts.name} AS c (agent_id, owner, state, slot, n)
    SELECT g.agent_id, coalesce(g.owner, ''), g.state, pg_backend_pid() % 8, -count(*)
    FROM gone AS g GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (agent_id, owner, state, slot) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END
$fn$
"""

_NOT_COUNTED = f"current_setting('{COUNTED_SETTING}', true) IS DISTINCT FROM 'on'"
_PG_COUNT_TRIGGERS = {
    "a2a_tasks_count_insert": f"AFTER INSERT ON {{table}} FOR EACH ROW WHEN ({_NOT_COUNTED})",
    "a2a_tasks_count_state": "AFTER UPDATE OF state ON {table} FOR EACH ROW "
    f"WHEN (OLD.state <> NEW.state AND {_NOT_COUNTED})",
}


def _sqlite_count(row: str, delta: str) -> str:
    """SQLite: the statement adding ``delta`` to the count of the task ``row`` (NEW/OLD)."""
    return (
        f"INSERT INTO {task_counts.name} (agent_id, owner, state, slot, n) "
        f"VALUES ({row}.agent_id, coalesce({row}.owner, ''), {row}.state, 0, {delta}) "
        f"ON CONFLICT (agent_id, owner, state, slot) DO UPDATE SET n = n + ({delta});"
    )


_SQLITE_COUNT_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS a2a_tasks_count_insert AFTER INSERT ON {tasks.name} "
    f"BEGIN {_sqlite_count('NEW', '1')} END",
    f"CREATE TRIGGER IF NOT EXISTS a2a_tasks_count_delete AFTER DELETE ON {tasks.name} "
    f"BEGIN {_sqlite_count('OLD', '-1')} END",
    f"CREATE TRIGGER IF NOT EXISTS a2a_tasks_count_state AFTER UPDATE OF state ON {tasks.name} "
    f"WHEN OLD.state <> NEW.state "
    f"BEGIN {_sqlite_count('OLD', '-1')} {_sqlite_count('NEW', '1')} END",
)


async def _add_count_triggers(conn: AsyncConnection) -> None:
    """The triggers keeping :data:`task_counts` (the table must exist)."""
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(_PG_COUNT_FUNCTION)
        await conn.exec_driver_sql(_PG_COUNT_DELETED_FUNCTION)
        triggers = {
            name: f"{when.format(table=tasks.name)} EXECUTE FUNCTION a2a_count_tasks()"
            for name, when in _PG_COUNT_TRIGGERS.items()
        }
        triggers["a2a_tasks_count_delete"] = (
            f"AFTER DELETE ON {tasks.name} REFERENCING OLD TABLE AS gone "
            "FOR EACH STATEMENT EXECUTE FUNCTION a2a_count_deleted_tasks()"
        )
        for name, definition in triggers.items():
            await conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name} ON {tasks.name}")
            await conn.exec_driver_sql(f"CREATE TRIGGER {name} {definition}")
    else:
        for trigger in _SQLITE_COUNT_TRIGGERS:
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


# Upgrades, keyed by the version they produce; each runs inside the setup transaction.
_MIGRATIONS: dict[int, Callable[[AsyncConnection], Awaitable[None]]] = {
    2: _add_leases,
    3: _add_owner,
    4: _add_save_function,
    5: _add_outbox,
    6: _add_save_with_deliveries,
    7: _add_message_claims,
    8: _list_indexes,
    9: _add_task_counts,
}


async def setup_schema(conn: AsyncConnection, safe_url: str) -> None:
    """Create the schema in an empty database, or upgrade an older one (in ``conn``'s
    transaction); refuse a schema newer than this code."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        # Instances starting together must not race on CREATE TABLE.
        await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_SCHEMA_LOCK})
    await conn.execute(CreateTable(schema_version, if_not_exists=True))
    found = (await conn.execute(select(schema_version.c.version))).scalar_one_or_none()
    if found is None:
        for table in _DATA_TABLES:
            await create_table(conn, table)
        await _add_save_function(conn)
        await _add_save_with_deliveries(conn)
        if dialect == "postgresql":
            await conn.exec_driver_sql(_CLAIM_MESSAGES_SQL)
        await _add_count_triggers(conn)
        upsert = pg_dialect.insert if dialect == "postgresql" else sqlite_dialect.insert
        await conn.execute(
            upsert(schema_version).values(id=1, version=SCHEMA_VERSION).on_conflict_do_nothing()
        )
    elif found > SCHEMA_VERSION:
        raise RuntimeError(
            f"Task store {safe_url} has schema version {found}, newer than this "
            f"a2a-hub understands ({SCHEMA_VERSION}); upgrade a2a-hub"
        )
    elif found < SCHEMA_VERSION:
        for version in range(found + 1, SCHEMA_VERSION + 1):
            await _MIGRATIONS[version](conn)
        await conn.execute(update(schema_version).values(version=SCHEMA_VERSION))
