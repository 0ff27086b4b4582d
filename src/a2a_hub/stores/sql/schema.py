"""The SQL schema: tables and their indexes, and the names of the PostgreSQL functions.

Shared by the store (:mod:`.store`), the PostgreSQL writer and coordinator
(:mod:`.pg_writer`, :mod:`.pg_coordinator`), which all take an engine and never each
other.  The version of the schema and the migrations between versions are in
:mod:`.migrations`; the SQL run in the database (functions, triggers) in :mod:`.routines`.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Double,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
)

__all__ = [
    "CLAIM_MESSAGES",
    "COUNTED_SETTING",
    "DATA_TABLES",
    "EVENTS_CHANNEL",
    "SAVE_TASKS",
    "SAVE_TASKS_WITH_DELIVERIES",
    "events",
    "leases",
    "message_claims",
    "meta",
    "metadata",
    "push_configs",
    "push_outbox",
    "schema_version",
    "task_counts",
    "tasks",
]

#: PostgreSQL NOTIFY channel announcing new events ("agent_id task_id seq").
EVENTS_CHANNEL = "a2a_events"

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

# Events and push configs belong to their task by key, with no foreign key (v10): on
# PostgreSQL each event insert would check its task through a plan cached per connection,
# which a table analyzed while empty turns into a sequential scan of every task, kept for
# good without autovacuum (bench/README.md).  The store keeps the link itself: events are
# written only in the save that writes their task's row, a push config only while its task
# exists (push.py), and deleting a task deletes its events, configs and deliveries
# (tasks.py).  SQLite files made before v10 keep their declarations, inert: the store's
# connections leave SQLite's foreign key enforcement off.
events = Table(
    "a2a_task_events",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
)

push_configs = Table(
    "a2a_push_configs",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("task_id", String, primary_key=True),
    Column("config_id", String, primary_key=True),
    Column("created", Integer, nullable=False),  # creation order within the task
    Column("data", LargeBinary, nullable=False),
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

#: The tables of the current schema, in the order they are created.
DATA_TABLES = (
    tasks,
    events,
    push_configs,
    leases,
    push_outbox,
    meta,
    message_claims,
    task_counts,
)

#: PostgreSQL: the function saving a batch of tasks in one call (schema v4).
SAVE_TASKS = "a2a_save_tasks"

#: PostgreSQL: the function saving a batch of tasks with their push deliveries (schema v6).
SAVE_TASKS_WITH_DELIVERIES = "a2a_save_tasks_v6"

#: PostgreSQL: the function recording a batch of message claims in one call.
CLAIM_MESSAGES = "a2a_claim_messages"
