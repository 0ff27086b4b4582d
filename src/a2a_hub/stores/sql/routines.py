"""The SQL that runs inside the database: PostgreSQL's batch functions (saves, saves
with push deliveries, message claims) and the triggers keeping the task counts, as the
migrations of :mod:`.migrations` install them."""

from __future__ import annotations

from a2a_hub.stores.sql.schema import (
    CLAIM_MESSAGES,
    COUNTED_SETTING,
    SAVE_TASKS,
    SAVE_TASKS_WITH_DELIVERIES,
    events,
    message_claims,
    push_outbox,
    task_counts,
    tasks,
)

__all__ = [
    "BATCH_FUNCTIONS",
    "CLAIM_MESSAGES_SQL",
    "PG_COUNT_DELETED_FUNCTION",
    "PG_COUNT_FUNCTION",
    "PG_COUNT_TRIGGERS",
    "SAVE_TASKS_SQL",
    "SAVE_TASKS_V6_SQL",
    "SQLITE_COUNT_TRIGGERS",
]

# The plans of a PL/pgSQL function's statements are cached per connection, and after five
# calls PostgreSQL keeps a generic plan if it looks no dearer: on a table analyzed while
# empty (and no autovacuum to analyze it again) that is a sequential scan, which each key
# lookup then repeats however large the table grows (bench/README.md).  The batch functions
# run with sequential scans disabled (v10): every statement of theirs reads by key, so the
# generic plan is the index's whatever the statistics say.  (Custom plans every call,
# plan_cache_mode = force_custom_plan, also hold, but made a batch 75 % dearer or more:
# bench/pg_plans.py.)
_PLANS = "SET enable_seqscan = off"

# Saves a batch of tasks (snapshot + events each) in order, in the caller's transaction.
# Save i: the snapshot p_data[i] (with the columns next to it), and the p_count[i] events
# p_events[pos + 1 .. pos + p_count[i]] (pos: the events of the saves before it) numbered
# from p_first[i].  Each save does what the store's save plan (tasks.py) does on SQLite:
# no events -> upsert the snapshot; events from 1 -> insert, or replace a snapshot that
# has no events yet; events from n > 1 -> update the row whose last_seq is n - 1; the
# owner is written only when the row is inserted, so it never changes.  A save
# whose events do not continue the log changes nothing and is reported, the others go on.
# Returns, per save, -1 if it was written, else the task's last stored seq (a conflict).
# Each save with events sends NOTIFY p_channel 'agent_id task_id last_seq' (NULL: none).
SAVE_TASKS_SQL = f"""
CREATE OR REPLACE FUNCTION {SAVE_TASKS}(
    p_agent text[], p_task text[], p_context text[], p_state text[], p_updated float8[],
    p_data bytea[], p_owner text[], p_first int[], p_count int[], p_events bytea[],
    p_channel text
) RETURNS int[] LANGUAGE plpgsql {_PLANS} AS $fn$
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


# As a2a_save_tasks, plus each save's push deliveries, and (since v9) the task counts: each
# written save whose state changed moves its task from the old state's count to the new
# one's, and the batch applies the sums at the end, one change per count row in key order;
# the transaction says so (COUNTED_SETTING) and the row triggers stand aside.  Also: each
# save's push deliveries, inserted (a delivery already there
# is kept) only when the save itself is written: save i owns the p_dcount[i] deliveries
# at positions v_dpos + 1 .. v_dpos + p_dcount[i] of the d_* arrays.
SAVE_TASKS_V6_SQL = f"""
CREATE OR REPLACE FUNCTION {SAVE_TASKS_WITH_DELIVERIES}(
    p_agent text[], p_task text[], p_context text[], p_state text[], p_updated float8[],
    p_data bytea[], p_owner text[], p_first int[], p_count int[], p_events bytea[],
    p_channel text, p_dcount int[], d_config text[], d_seq int[], d_snap int[],
    d_attempts int[], d_due float8[], d_first float8[], d_error text[], d_dead int[]
) RETURNS int[] LANGUAGE plpgsql {_PLANS} AS $fn$
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


# Claim i: record p_data[i] under (p_agent[i], p_owner[i], p_message[i]) unless a claim is
# there; with p_reply[i] true, complete the claim there if it is of task p_task[i] and has
# no reply yet (p_data[i] then replaces it).  Claims are taken in the order given (callers
# sort them, so that two instances never wait on each other in opposite orders).  Returns
# one row per claim that was not recorded: its position and the claim already there.
CLAIM_MESSAGES_SQL = f"""
CREATE OR REPLACE FUNCTION {CLAIM_MESSAGES}(
    p_agent text[], p_owner text[], p_message text[], p_created float8[], p_data bytea[],
    p_task text[], p_reply bool[]
) RETURNS TABLE(o_pos int, o_data bytea) LANGUAGE plpgsql {_PLANS} AS $fn$
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


# The counts' triggers.  PostgreSQL: a plpgsql function called for each inserted task and
# each update that changes a state (tested before any function is called), unless the
# batch save function writes them (it counts its batch itself, see SAVE_TASKS_V6_SQL).
PG_COUNT_FUNCTION = f"""
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
PG_COUNT_DELETED_FUNCTION = f"""
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
PG_COUNT_TRIGGERS = {
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


SQLITE_COUNT_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS a2a_tasks_count_insert AFTER INSERT ON {tasks.name} "
    f"BEGIN {_sqlite_count('NEW', '1')} END",
    f"CREATE TRIGGER IF NOT EXISTS a2a_tasks_count_delete AFTER DELETE ON {tasks.name} "
    f"BEGIN {_sqlite_count('OLD', '-1')} END",
    f"CREATE TRIGGER IF NOT EXISTS a2a_tasks_count_state AFTER UPDATE OF state ON {tasks.name} "
    f"WHEN OLD.state <> NEW.state "
    f"BEGIN {_sqlite_count('OLD', '-1')} {_sqlite_count('NEW', '1')} END",
)


#: PostgreSQL: the batch functions (their names and definitions), which the store calls
#: on its hot path and which v10 redefined with their plan setting.
BATCH_FUNCTIONS = {
    SAVE_TASKS: SAVE_TASKS_SQL,
    SAVE_TASKS_WITH_DELIVERIES: SAVE_TASKS_V6_SQL,
    CLAIM_MESSAGES: CLAIM_MESSAGES_SQL,
}
