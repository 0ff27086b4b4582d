"""`make bench`, part 1: a2a-hub vs the official a2a-sdk (Python) and @a2a-js/sdk (JavaScript)
vs the bare-stack ceiling.

Four servers doing the same echo work (Task, one artifact ``echo: <text>``, completed), each
its own process pinned to core 0 with ``taskset`` and bound to 127.0.0.1: one uvicorn worker
(uvloop + httptools, no access log) for the Python ones, one Node.js process (no cluster) for
bench/js/server.js, the JavaScript SDK's Express app (``make bench`` runs ``npm ci`` in
bench/js); the load generator ``wrk`` pinned to core 1, the same
connections, payloads and durations for every server.  Each scenario: a warm-up run per
server, then BENCH_ROUNDS rounds in which every server gets one run (the order rotates from
round to round), and the median of the rounds.

Settings (environment):

    BENCH_DURATION  seconds per measured run (5)      BENCH_ROUNDS       rounds (3)
    BENCH_WARMUP    seconds of warm-up (2)            BENCH_CONNECTIONS  wrk -c (32)
    BENCH_THREADS   wrk -t (1)                        BENCH_TIMEOUT      wrk --timeout (10s)
    BENCH_ONLY      comma-separated scenario keys     BENCH_PIN=0        no taskset
    BENCH_GRPC_CHANNELS  connections the gRPC load's callers share (4)
    BENCH_REDIS_URL     (redis://127.0.0.1:6379/0)
    BENCH_POSTGRES_URL  (postgresql://postgres@127.0.0.1:5432/test)
    BENCH_BASELINE      another checkout of a2a-hub with its own .venv (an A/B run): every
                        a2a-hub server runs a second time from that tree ("a2a-hub@base"), in
                        the same rounds, and the table gains a hub/base column; results go to
                        bench/.work/ab.json, bench/results.json is left alone

The ``grpc`` scenario (SendMessage over the 1.0 gRPC binding, a2a-hub vs the SDKs' own gRPC
servers) has no wrk: bench/grpc_load.py generates its load the same way (same core, the same
number of concurrent callers, fresh message ids, every answer checked) and reports wrk's
figures.  The Python SDK's gRPC server needs ``a2a-sdk[grpc]`` in bench/.venv-sdk, the
JavaScript one ``@grpc/grpc-js`` in bench/js (``make bench`` installs both); without them
those servers are listed as skipped, and so are both a2a-js servers without Node.js >= 20.

Writes bench/results.json and bench/results.png; logs and request bodies in bench/.work/.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlib import (
    BENCH,
    CLIENT_CPU,
    HUB_CLI,
    PINNED,
    SDK_PYTHON,
    SERVER_CPU,
    WORK,
    Server,
    busy_cpu_seconds,
    draw_chart,
    env_float,
    env_int,
    free_port,
    http,
    machine_info,
    pin,
    proc_cpu_seconds,
    raise_fd_limit,
    save_results,
    serve_argv,
    show,
)
from benchlib import HUB_PYTHON as _HUB_PYTHON
from oidc_issuer import AUDIENCE, BenchIssuer
from rich.console import Console
from rich.table import Table

console = Console(width=200)

# wrk takes whole seconds.
DURATION = max(1, round(env_float("BENCH_DURATION", 5.0)))
ROUNDS = env_int("BENCH_ROUNDS", 3)
WARMUP = max(0, round(env_float("BENCH_WARMUP", 2.0)))
CONNECTIONS = env_int("BENCH_CONNECTIONS", 32)
# HTTP/2 connections the gRPC load's CONNECTIONS callers share.
GRPC_CHANNELS = env_int("BENCH_GRPC_CHANNELS", 4)
THREADS = env_int("BENCH_THREADS", 1)
TIMEOUT = env_float("BENCH_TIMEOUT", 10.0)
ONLY = {s.strip() for s in (os.environ.get("BENCH_ONLY") or "").split(",") if s}
# The bench's own key prefix, so it never touches anyone else's keys in the shared Redis.
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0?prefix=a2a-bench")
POSTGRES_URL = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
LUA = BENCH / "wrk" / "a2a.lua"
TEXT = "hello bench"
PREFIX = "/a2a/echo"
DB_AGENT = "bench-echo"  # the agent id of what the bench writes to the shared PostgreSQL and Redis

#: An A/B run's other tree (``BENCH_BASELINE``): its a2a-hub servers run beside this tree's.
BASELINE = (
    Path(os.environ["BENCH_BASELINE"]).resolve() if os.environ.get("BENCH_BASELINE") else None
)
BASE_TAG = "@base"  # "a2a-hub@base", "a2a-hub@base/sqlite": the baseline tree's servers

HUB, SDK, JS, CEILING = "a2a-hub", "a2a-sdk", "a2a-js", "ceiling"
JS_DIR = BENCH / "js"  # package.json + package-lock.json; make bench runs npm ci there
NODE = shutil.which("node")

# --- request bodies (the same bytes go to every server; @MID@ is fresh per request) --------

MSG_10 = {"messageId": "@MID@", "role": "ROLE_USER", "parts": [{"text": TEXT}]}
MSG_03 = {
    "kind": "message",
    "messageId": "@MID@",
    "role": "user",
    "parts": [{"kind": "text", "text": TEXT}],
}


def rpc_body(method: str, params: dict[str, Any]) -> str:
    return json.dumps(
        {"jsonrpc": "2.0", "id": "@MID@", "method": method, "params": params},
        separators=(",", ":"),
    )


JSON_CT = "Content-Type: application/json"
V10 = "A2A-Version: 1.0"
V03 = "A2A-Version: 0.3"


@dataclass
class Scenario:
    key: str
    title: str
    servers: list[str]
    path: str  # after the agent's prefix
    headers: list[str]
    body: str  # with @MID@ (and @TASK@ for GetTask)
    expects: list[str]
    #: The scenario whose SDK and ceiling figures a2a-hub is compared with (default: itself).
    baseline: str | None = None
    note: str = ""
    short: str = ""  # label in the chart
    #: Load from bench/grpc_load.py (a blocking gRPC SendMessage) instead of wrk.
    grpc: bool = False


SEND_10 = rpc_body("SendMessage", {"message": MSG_10})

#: The ``send-auth`` scenario's issuer (started only when a2a-hub/oidc runs) and token.
ISSUER = BenchIssuer(free_port())
BEARER = f"Authorization: Bearer {ISSUER.token('bench')}"

SCENARIOS = [
    Scenario(
        "send",
        "SendMessage 1.0 JSON-RPC (blocking, memory)",
        [HUB, SDK, JS, CEILING],
        "",
        [JSON_CT, V10],
        SEND_10,
        ["TASK_STATE_COMPLETED", f"echo: {TEXT}"],
        short="SendMessage\n1.0 JSON-RPC",
    ),
    Scenario(
        "send03",
        "message/send 0.3 JSON-RPC (blocking, memory)",
        [HUB, SDK, JS, CEILING],
        "",
        [JSON_CT, V03],
        rpc_body("message/send", {"message": MSG_03, "configuration": {"blocking": True}}),
        ["completed", f"echo: {TEXT}"],
        short="message/send\n0.3 JSON-RPC",
    ),
    Scenario(
        "rest",
        "REST POST /message:send 1.0 (memory)",
        [HUB, SDK, JS, CEILING],
        "/message:send",
        [JSON_CT, V10],
        json.dumps({"message": MSG_10}, separators=(",", ":")),
        ["TASK_STATE_COMPLETED", f"echo: {TEXT}"],
        short="REST POST\n/message:send",
    ),
    Scenario(
        "stream",
        "SendStreamingMessage 1.0 (SSE read to the end)",
        [HUB, SDK, JS, CEILING],
        "",
        [JSON_CT, V10, "Accept: text/event-stream"],
        rpc_body("SendStreamingMessage", {"message": MSG_10}),
        ["TASK_STATE_COMPLETED", f"echo: {TEXT}"],
        short="SendStreaming-\nMessage (SSE)",
    ),
    Scenario(
        "get",
        "GetTask 1.0 JSON-RPC (existing task)",
        [HUB, SDK, JS, CEILING],
        "",
        [JSON_CT, V10],
        rpc_body("GetTask", {"id": "@TASK@"}),
        ["TASK_STATE_COMPLETED", f"echo: {TEXT}"],
        short="GetTask\n1.0 JSON-RPC",
    ),
    Scenario(
        "send-sqlite",
        "SendMessage 1.0, SQLite store",
        [f"{HUB}/sqlite"],
        "",
        [JSON_CT, V10],
        SEND_10,
        ["TASK_STATE_COMPLETED", f"echo: {TEXT}"],
        baseline="send",
        note="vs the SDKs' and the ceiling's in-memory SendMessage",
        short="SendMessage\nSQLite store",
    ),
    Scenario(
        "send-sdk-executor",
        "SendMessage 1.0, the a2a-sdk's echo executor hosted by a2a-hub (memory)",
        [f"{HUB}/sdk-executor", SDK],
        "",
        [JSON_CT, V10],
        SEND_10,
        ["TASK_STATE_COMPLETED", f"echo: {TEXT}"],
        note="bench/sdk_server.py's EchoExecutor on a2a-hub (kind python, unchanged) and on the "
        "SDK's own server, in the same rounds",
        short="SendMessage\nSDK executor",
    ),
    Scenario(
        "send-redis",
        "SendMessage 1.0, Redis store",
        [f"{HUB}/redis"],
        "",
        [JSON_CT, V10],
        SEND_10,
        ["TASK_STATE_COMPLETED", f"echo: {TEXT}"],
        baseline="send",
        note="vs the SDKs' and the ceiling's in-memory SendMessage",
        short="SendMessage\nRedis store",
    ),
    Scenario(
        "send-postgres",
        "SendMessage 1.0, PostgreSQL store",
        [f"{HUB}/postgres"],
        "",
        [JSON_CT, V10],
        SEND_10,
        ["TASK_STATE_COMPLETED", f"echo: {TEXT}"],
        baseline="send",
        note="vs the SDKs' and the ceiling's in-memory SendMessage",
        short="SendMessage\nPostgreSQL store",
    ),
    Scenario(
        "send-auth",
        "SendMessage 1.0 with a bearer token / an unreached rate limit",
        [HUB, f"{HUB}/oidc", f"{HUB}/limited"],
        "",
        [JSON_CT, V10, BEARER],
        SEND_10,
        ["TASK_STATE_COMPLETED", f"echo: {TEXT}"],
        baseline="send",
        note="the same requests (token included) to a plain hub (ignores it), one verifying "
        "it (auth = oidc) and one under a limits rate it never reaches",
        short="SendMessage\nbearer / limit",
    ),
    Scenario(
        "grpc",
        "SendMessage 1.0 gRPC (blocking, memory)",
        [f"{HUB}/grpc", f"{SDK}/grpc", f"{JS}/grpc"],
        "",
        ["a2a-version: 1.0 (gRPC metadata)"],
        "lf.a2a.v1.SendMessageRequest {tenant: echo, message: {messageId, ROLE_USER, text}}",
        ["TASK_STATE_COMPLETED", f"echo: {TEXT}"],
        note="load from bench/grpc_load.py, not wrk; no ceiling for gRPC",
        short="SendMessage\n1.0 gRPC",
        grpc=True,
    ),
]


# --- servers ---------------------------------------------------------------------------


@dataclass
class Target:
    """A server under test and what the bench knows about it."""

    server: Server
    prefix: str
    store: str | None = None
    skipped: str | None = None
    agent: str = DB_AGENT  # the agent id its rows are stored under (shared stores)
    acked: int = 0  # responses counted ok (for the durability check)
    db_before: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def hub_server(
    key: str,
    store: str,
    agent: str = "echo",
    grpc_port: int | None = None,
    cli: Path = HUB_CLI,
    executor: str | None = None,
    env: dict[str, str] | None = None,
) -> Server:
    port = free_port()
    if executor is not None:  # an executor by import path, from bench/ (kind python)
        spec = f"{agent}={executor}"
    else:
        spec = agent if agent.startswith("echo") else f"{agent}=echo"
    argv = serve_argv(cli, port, spec, store=store)
    if grpc_port is not None:
        argv += ["--grpc-port", str(grpc_port)]
    if executor is not None:
        argv += ["--app-dir", str(BENCH)]
    return Server(key, argv, port, "/healthz", env=env or {})


def build_targets(tmp: Path) -> dict[str, Target]:
    sqlite_url = f"sqlite:///{tmp / 'bench.db'}"
    targets = {
        HUB: Target(hub_server(HUB, "memory://"), PREFIX, "memory://"),
        SDK: Target(
            Server(
                SDK,
                [str(SDK_PYTHON), str(BENCH / "sdk_server.py"), str(port := free_port())],
                port,
                f"{PREFIX}/.well-known/agent-card.json",
            ),
            PREFIX,
            "InMemoryTaskStore",
        ),
        JS: Target(
            Server(
                JS,
                [NODE or "node", str(JS_DIR / "server.js"), str(port4 := free_port())],
                port4,
                f"{PREFIX}/.well-known/agent-card.json",
                env={"NODE_ENV": "production"},
            ),
            PREFIX,
            "InMemoryTaskStore",
            skipped=js_missing(),
        ),
        CEILING: Target(
            Server(
                CEILING,
                [str(_HUB_PYTHON), str(BENCH / "ceiling_server.py"), str(port2 := free_port())],
                port2,
                "/healthz",
            ),
            PREFIX,
        ),
        f"{HUB}/sqlite": Target(hub_server(f"{HUB}/sqlite", sqlite_url), PREFIX, sqlite_url),
        # bench/sdk_server.py's EchoExecutor, the a2a-sdk's own executor, hosted by a2a-hub
        f"{HUB}/sdk-executor": Target(
            hub_server(f"{HUB}/sdk-executor", "memory://", executor="sdk_server:EchoExecutor"),
            PREFIX,
            "memory://",
        ),
        f"{HUB}/oidc": Target(
            hub_server(
                f"{HUB}/oidc",
                "memory://",
                "echo?auth=oidc",
                env={
                    "A2A_HUB_AUTH_OIDC_ISSUER": ISSUER.url,
                    "A2A_HUB_AUTH_OIDC_AUDIENCE": AUDIENCE,
                },
            ),
            PREFIX,
            "memory://",
        ),
        f"{HUB}/limited": Target(
            hub_server(
                f"{HUB}/limited",
                "memory://",
                env={"A2A_HUB_LIMITS": "caller=*;rate=1000000/second"},
            ),
            PREFIX,
            "memory://",
        ),
        f"{HUB}/redis": Target(
            hub_server(f"{HUB}/redis", REDIS_URL, DB_AGENT), f"/a2a/{DB_AGENT}", REDIS_URL
        ),
        f"{HUB}/postgres": Target(
            hub_server(f"{HUB}/postgres", POSTGRES_URL, DB_AGENT),
            f"/a2a/{DB_AGENT}",
            POSTGRES_URL,
        ),
        f"{HUB}/grpc": Target(
            hub_server(f"{HUB}/grpc", "memory://", grpc_port=(hub_grpc := free_port())),
            PREFIX,
            "memory://",
            extra={"grpc_port": hub_grpc},
        ),
        f"{SDK}/grpc": Target(
            Server(
                f"{SDK}/grpc",
                [
                    str(SDK_PYTHON),
                    str(BENCH / "sdk_server.py"),
                    str(port3 := free_port()),
                    str(sdk_grpc := free_port()),
                ],
                port3,
                f"{PREFIX}/.well-known/agent-card.json",
            ),
            PREFIX,
            "InMemoryTaskStore",
            extra={"grpc_port": sdk_grpc},
        ),
        f"{JS}/grpc": Target(
            Server(
                f"{JS}/grpc",
                [
                    NODE or "node",
                    str(JS_DIR / "server.js"),
                    str(port5 := free_port()),
                    str(js_grpc := free_port()),
                ],
                port5,
                f"{PREFIX}/.well-known/agent-card.json",
                env={"NODE_ENV": "production"},
            ),
            PREFIX,
            "InMemoryTaskStore",
            skipped=js_missing(),
            extra={"grpc_port": js_grpc},
        ),
    }
    if BASELINE is not None:
        targets.update(baseline_targets(tmp, BASELINE))
    return targets


def js_missing() -> str | None:
    """Why the JavaScript SDK's server cannot start (no node, no ``npm ci`` yet), or None."""
    if NODE is None:
        return "node is not installed (Node.js >= 20 runs bench/js/server.js)"
    if not (JS_DIR / "node_modules" / "@a2a-js" / "sdk" / "package.json").exists():
        return "bench/js/node_modules is missing (make bench runs npm ci there)"
    return None


def baseline_targets(tmp: Path, tree: Path) -> dict[str, Target]:
    """The a2a-hub servers once more, run from another checkout (an A/B run): each shared
    store gets an agent id (and Redis prefix) of its own, so the store checks stay apart."""
    cli = tree / ".venv" / "bin" / "a2a-hub"
    if not cli.exists():
        raise SystemExit(f"BENCH_BASELINE={tree}: no {cli} (run `make test` or `make demo` there)")
    agent = f"{DB_AGENT}-base"
    redis_url = REDIS_URL.replace("prefix=a2a-bench", "prefix=a2a-bench-base")
    sqlite_url = f"sqlite:///{tmp / 'bench-base.db'}"
    memory = f"{HUB}{BASE_TAG}"
    return {
        memory: Target(hub_server(memory, "memory://", cli=cli), PREFIX, "memory://"),
        f"{memory}/sqlite": Target(
            hub_server(f"{memory}/sqlite", sqlite_url, cli=cli), PREFIX, sqlite_url
        ),
        f"{memory}/redis": Target(
            hub_server(f"{memory}/redis", redis_url, agent, cli=cli),
            f"/a2a/{agent}",
            redis_url,
            agent=agent,
        ),
        f"{memory}/postgres": Target(
            hub_server(f"{memory}/postgres", POSTGRES_URL, agent, cli=cli),
            f"/a2a/{agent}",
            POSTGRES_URL,
            agent=agent,
        ),
        f"{memory}/sdk-executor": Target(
            hub_server(
                f"{memory}/sdk-executor",
                "memory://",
                executor="sdk_server:EchoExecutor",
                cli=cli,
            ),
            PREFIX,
            "memory://",
        ),
        f"{memory}/oidc": Target(
            hub_server(
                f"{memory}/oidc",
                "memory://",
                "echo?auth=oidc",
                cli=cli,
                env={
                    "A2A_HUB_AUTH_OIDC_ISSUER": ISSUER.url,
                    "A2A_HUB_AUTH_OIDC_AUDIENCE": AUDIENCE,
                },
            ),
            PREFIX,
            "memory://",
        ),
        f"{memory}/limited": Target(
            hub_server(
                f"{memory}/limited",
                "memory://",
                cli=cli,
                env={"A2A_HUB_LIMITS": "caller=*;rate=1000000/second"},
            ),
            PREFIX,
            "memory://",
        ),
        f"{memory}/grpc": Target(
            hub_server(f"{memory}/grpc", "memory://", grpc_port=(port := free_port()), cli=cli),
            PREFIX,
            "memory://",
            extra={"grpc_port": port},
        ),
    }


def servers_of(sc: Scenario) -> list[str]:
    """The servers a scenario runs on: its own, and in an A/B run each a2a-hub one twice."""
    if BASELINE is None:
        return sc.servers
    twins = [HUB + BASE_TAG + k.removeprefix(HUB) for k in sc.servers if k.startswith(HUB)]
    return [*sc.servers, *twins]


# --- store row counts (every acknowledged task must be in the store) ---------------------


def sqlite_count(url: str) -> int:
    path = url.removeprefix("sqlite:///")
    if not Path(path).exists():
        return 0
    with sqlite3.connect(path) as db:
        try:
            (n,) = db.execute("SELECT count(*) FROM a2a_tasks").fetchone()
        except sqlite3.OperationalError:
            return 0
        return int(n)


async def _pg(url: str, sql: str, *args: Any) -> Any:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(sql, *args)
    finally:
        await conn.close()


def pg_count(url: str, agent: str = DB_AGENT) -> int:
    try:
        n = asyncio.run(_pg(url, "SELECT count(*) FROM a2a_tasks WHERE agent_id = $1", agent))
    except Exception:
        return 0
    return int(n or 0)


#: The tables the bench writes to, by agent id (no foreign key cascades to the events and
#: push configs since schema v10: each is cleaned).
_PG_TABLES = (
    "a2a_tasks",
    "a2a_task_events",
    "a2a_push_configs",
    "a2a_message_claims",
    "a2a_push_outbox",
)


async def _pg_clean(url: str, agent: str) -> None:
    import asyncpg

    from a2a_hub.stores.sql import SqlStore

    # The schema first (made, or upgraded, by this tree's store), so that a fresh database
    # starts like any other: its tables emptied of the bench's rows and analyzed.
    store = SqlStore(url)
    await store.open()
    await store.close()
    conn = await asyncpg.connect(url)
    try:
        for table in _PG_TABLES:
            await conn.execute(f"DELETE FROM {table} WHERE agent_id = $1", agent)
        # this server runs without autovacuum: dead rows and stale statistics from earlier
        # runs would slow the next run down (about 4,500 -> 1,700 req/s seen), so clean up;
        # in a database holding only the bench's rows the tables are then analyzed while
        # empty, the case where cached plans went wrong (issue 29, the seq scans reported)
        for table in (*_PG_TABLES, "a2a_task_counts"):
            await conn.execute(f"VACUUM ANALYZE {table}")
    finally:
        await conn.close()


def pg_clean(url: str, agent: str = DB_AGENT) -> None:
    """Delete the bench's own rows (agent id ``bench-echo``) from the shared database, then
    vacuum and analyze the tables it wrote to."""
    try:
        asyncio.run(_pg_clean(url, agent))
    except Exception as exc:
        if "does not exist" in str(exc):
            return  # no table yet: nothing to clean

        console.print(f"[yellow]could not clean the bench's PostgreSQL rows: {exc}[/yellow]")


#: The tables whose sequential scans the bench counts during a PostgreSQL run (issue 29: a
#: plan cached while they were empty and analyzed made each save scan every task).
_PG_SCANNED = ("a2a_tasks", "a2a_task_events")


async def _pg_scans(url: str) -> tuple[int, int, int]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(
            "SELECT coalesce(sum(seq_scan), 0), coalesce(sum(seq_tup_read), 0), "
            "coalesce(sum(c.reltuples) FILTER (WHERE c.relname = 'a2a_tasks'), -1) "
            "FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
            "WHERE s.relname = ANY($1::text[]) AND s.schemaname = current_schema()",
            list(_PG_SCANNED),
        )
        return int(row[0]), int(row[1]), int(row[2])
    finally:
        await conn.close()


def pg_scans(url: str) -> tuple[int, int, int] | None:
    """Sequential scans of the task and event tables so far, the rows they read, and the
    tasks the statistics say a2a_tasks holds (0: analyzed while empty), or None."""
    try:
        return asyncio.run(_pg_scans(url))
    except Exception:
        return None


def pg_scans_after(url: str, before: tuple[int, int, int] | None) -> str | None:
    """What the server's sequential scans of those tables came to (read once its backends
    have reported their counts: they do as they exit, so until two reads agree)."""
    if before is None:
        return None
    last = pg_scans(url)
    for _ in range(50):
        time.sleep(0.1)
        now = pg_scans(url)
        if now == last:
            break
        last = now
    if last is None:
        return None
    scans, rows = last[0] - before[0], last[1] - before[1]
    analyzed = "analyzed while empty" if before[2] == 0 else f"statistics: {before[2]} tasks"
    return f"{scans} sequential scans of {'/'.join(_PG_SCANNED)} read {rows} rows ({analyzed})"


def _redis(url: str) -> tuple[Any, str]:
    """A redis-py client for ``url`` and the store's key prefix (its ``prefix`` option)."""
    from urllib.parse import parse_qs, urlsplit, urlunsplit

    import redis

    parts = urlsplit(url)
    prefix = parse_qs(parts.query).get("prefix", ["a2a"])[0]
    return redis.Redis.from_url(urlunsplit(parts._replace(query=""))), prefix


def redis_count(url: str, agent: str = DB_AGENT) -> int | None:
    """Tasks of the bench's agent in the Redis store's index (key names from the store)."""
    try:
        from a2a_hub.stores.redis import RedisKeys

        client, prefix = _redis(url)
        with client:
            return int(client.zcard(RedisKeys(prefix, agent).tasks))
    except Exception as exc:
        console.print(f"[yellow]could not count the Redis store's tasks: {exc}[/yellow]")
        return None


def redis_clean(url: str) -> None:
    """Delete the bench's own keys (its ``prefix``) from the shared Redis."""
    try:
        client, prefix = _redis(url)
        if prefix == "a2a":
            return  # the default prefix may hold someone else's tasks: leave it alone
        with client:
            batch: list[bytes] = []
            for key in client.scan_iter(match=f"{prefix}:*", count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    client.delete(*batch)
                    batch.clear()
            if batch:
                client.delete(*batch)
    except Exception as exc:
        console.print(f"[yellow]could not clean the bench's Redis keys: {exc}[/yellow]")


def store_count(target: Target) -> int | None:
    store = target.store or ""
    if store.startswith("sqlite"):
        return sqlite_count(store)
    if store.startswith("postgres"):
        return pg_count(store, target.agent)
    if store.startswith("redis"):
        return redis_count(store, target.agent)
    return None


def store_clean(target: Target) -> None:
    store = target.store or ""
    if store.startswith("postgres"):
        pg_clean(store, target.agent)
    elif store.startswith("redis"):
        redis_clean(store)


# --- wrk -------------------------------------------------------------------------------


def wrk_argv(
    url: str, seconds: int, method: str, path: str, template: Path, sc: Scenario
) -> list[str]:
    nonce = uuid.uuid4().hex[:12]
    return pin(
        CLIENT_CPU,
        [
            "wrk",
            f"-t{THREADS}",
            f"-c{CONNECTIONS}",
            f"-d{seconds}s",
            f"--timeout={TIMEOUT:g}s",
            "-s",
            str(LUA),
            url,
            "--",
            method,
            path,
            str(template),
            nonce,
            "|".join(sc.expects),
            *sc.headers,
        ],
    )


def grpc_load_argv(port: int | str, seconds: int) -> list[str]:
    return pin(
        CLIENT_CPU,
        [
            str(_HUB_PYTHON),
            str(BENCH / "grpc_load.py"),
            f"127.0.0.1:{port}",
            "echo",
            str(seconds),
            str(CONNECTIONS),
            str(GRPC_CHANNELS),
            TEXT,
            uuid.uuid4().hex[:12],
        ],
    )


def run_wrk(target: Target, sc: Scenario, template: Path, seconds: int) -> dict[str, Any]:
    path = target.prefix + sc.path
    if sc.grpc:
        argv = grpc_load_argv(target.extra["grpc_port"], seconds)
    else:
        argv = wrk_argv(target.server.base + path, seconds, "POST", path, template, sc)
    pid = target.server.pid
    cpu0 = proc_cpu_seconds(pid)
    busy0 = busy_cpu_seconds()
    child0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    res = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + TIMEOUT + 60)
    wall = time.monotonic() - t0
    child1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu1 = proc_cpu_seconds(pid)
    busy1 = busy_cpu_seconds()
    out: dict[str, Any] = {}
    bad_sample = ""
    for line in res.stdout.splitlines():
        if line.startswith("WRKJSON "):
            out = json.loads(line[len("WRKJSON ") :])
        elif line.startswith("WRKBAD "):
            bad_sample = line[len("WRKBAD ") :]
    if not out:
        raise RuntimeError(
            f"wrk gave no figures (exit {res.returncode}): {show(argv)}\n"
            f"{(res.stderr or res.stdout).strip()[:2000]}"
        )
    secs = out["duration_us"] / 1e6
    errors = (
        out["bad"]
        + out["connect_errors"]
        + out["read_errors"]
        + out["write_errors"]
        + out["timeouts"]
    )
    client_cpu = (child1.ru_utime + child1.ru_stime) - (child0.ru_utime + child0.ru_stime)
    out.update(
        rps=out["ok"] / secs if secs else 0.0,
        p50_ms=out["lat_p50_us"] / 1000,
        p99_ms=out["lat_p99_us"] / 1000,
        errors=errors,
        bad_sample=bad_sample,
        server_cpu=(cpu1 - cpu0) / wall if wall else 0.0,
        client_cpu=client_cpu / wall if wall else 0.0,
        # Everything else that ran meanwhile (other processes, a database server), in cores.
        other_cpu=max(0.0, ((busy1 - busy0) - (cpu1 - cpu0) - client_cpu) / wall) if wall else 0.0,
        bytes_per_response=out["bytes"] / out["requests"] if out["requests"] else 0,
    )
    target.acked += out["ok"]
    return out


# --- the run ---------------------------------------------------------------------------


def prepare_template(sc: Scenario, key: str, target: Target) -> Path:
    body = sc.body
    if sc.grpc:  # grpc_load.py builds its protobuf requests itself; the body is a description
        return Path("-")
    if "@TASK@" in body:
        # GetTask: create one task first and reuse its id for every request.
        status, raw = http(
            "POST",
            target.server.base + target.prefix,
            json.loads(SEND_10.replace("@MID@", f"setup-{uuid.uuid4()}")),
            {"A2A-Version": "1.0"},
        )
        if status != 200:
            raise RuntimeError(f"{key}: creating the GetTask task failed: {status} {raw[:200]!r}")
        task_id = json.loads(raw)["result"]["task"]["id"]
        body = body.replace("@TASK@", task_id)
        target.extra["get_task_id"] = task_id
    path = WORK / "bodies" / f"{sc.key}-{key.replace('/', '-')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


def median_of(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    def med(name: str) -> float:
        return float(statistics.median(r[name] for r in rounds))

    return {
        "rps": med("rps"),
        "p50_ms": med("p50_ms"),
        "p99_ms": med("p99_ms"),
        "server_cpu": med("server_cpu"),
        "client_cpu": med("client_cpu"),
        "other_cpu": med("other_cpu"),
        "errors": sum(r["errors"] for r in rounds),
        "requests": sum(r["requests"] for r in rounds),
        "bytes_per_response": med("bytes_per_response"),
        "bad_sample": next((r["bad_sample"] for r in rounds if r["bad_sample"]), ""),
        "rounds": [
            {
                k: r[k]
                for k in (
                    "rps",
                    "p50_ms",
                    "p99_ms",
                    "errors",
                    "requests",
                    "ok",
                    "bad",
                    "status_errors",
                    "timeouts",
                    "connect_errors",
                    "read_errors",
                    "write_errors",
                    "server_cpu",
                    "client_cpu",
                    "other_cpu",
                    "lat_max_us",
                )
            }
            for r in rounds
        ],
    }


def run_scenario(sc: Scenario, targets: dict[str, Target]) -> dict[str, Any]:
    live = [k for k in servers_of(sc) if targets[k].skipped is None]
    entry: dict[str, Any] = {
        "key": sc.key,
        "title": sc.title,
        "short": sc.short or sc.title,
        "baseline": sc.baseline or sc.key,
        "note": sc.note,
        "path": sc.path or "(agent URL)",
        "headers": sc.headers,
        "body": sc.body,
        "expects": sc.expects,
        "servers": {},
        "skipped": {k: targets[k].skipped for k in servers_of(sc) if targets[k].skipped},
    }
    if not live:
        return entry
    console.print(f"[bold]{sc.title}[/bold]: " + ", ".join(live))
    templates = {k: prepare_template(sc, k, targets[k]) for k in live}
    if WARMUP > 0:
        for k in live:
            run_wrk(targets[k], sc, templates[k], WARMUP)
            time.sleep(0.3)
    rounds: dict[str, list[dict[str, Any]]] = {k: [] for k in live}
    for r in range(ROUNDS):
        order = live[r % len(live) :] + live[: r % len(live)]
        for k in order:
            if not targets[k].server.alive():
                raise RuntimeError(f"{k} died: {targets[k].server.last_log_line()}")
            res = run_wrk(targets[k], sc, templates[k], DURATION)
            rounds[k].append(res)
            console.print(
                f"  round {r + 1}/{ROUNDS} {k:18} {res['rps']:9.0f} req/s  "
                f"p50 {res['p50_ms']:7.2f} ms  p99 {res['p99_ms']:7.2f} ms  "
                f"errors {res['errors']}  server CPU {res['server_cpu']:.0%}  "
                f"wrk CPU {res['client_cpu']:.0%}  others {res['other_cpu']:.2f} cores"
            )
            time.sleep(0.3)
    for k in live:
        entry["servers"][k] = median_of(rounds[k])
    return entry


def ratios(entries: list[dict[str, Any]]) -> None:
    by_key = {e["key"]: e for e in entries}
    for e in entries:
        base = by_key.get(e["baseline"], e)
        for key, fig in e["servers"].items():
            if not key.startswith(HUB):
                continue
            kind = key.removeprefix(HUB).removeprefix(BASE_TAG)  # "", "/sqlite", "/grpc", ...
            for other, name in ((SDK, "vs_sdk"), (JS, "vs_js"), (CEILING, "vs_ceiling")):
                # the same kind of server: a2a-sdk, or a2a-sdk/grpc beside a2a-hub/grpc (and
                # a2a-sdk itself beside a2a-hub/sdk-executor, which runs the SDK's executor)
                same = other + kind if base is e and other + kind in e["servers"] else other
                ref = base["servers"].get(same)
                fig[name] = fig["rps"] / ref["rps"] if ref and ref["rps"] else None
            twin = e["servers"].get(HUB + BASE_TAG + kind)
            if twin is not None and twin is not fig and twin["rps"]:
                fig["vs_base"] = fig["rps"] / twin["rps"]


def print_table(data: dict[str, Any]) -> None:
    meta = data["meta"]
    hub, sdk, js = meta["hub_env"], meta["sdk_env"], meta.get("js_env", {})
    pinning = (
        f"servers on core {meta['server_cpu']}, wrk on core {meta['client_cpu']}"
        if meta["pinned"]
        else "NOT pinned"
    )
    s = data["settings"]
    title = (
        f"{meta['cores']} cores ({meta['cpu']}), Python {hub.get('python')}, "
        f"a2a-hub {hub.get('a2a-hub')}, a2a-sdk {sdk.get('a2a-sdk')}, "
        f"uvicorn {hub.get('uvicorn')}, starlette {hub.get('starlette')}, "
        f"@a2a-js/sdk {js.get('@a2a-js/sdk')} on express {js.get('express')}, "
        f"Node.js {js.get('node')}\n"
        f"{pinning}; wrk -t{s['threads']} -c{s['connections']}, warm-up {s['warmup_s']:g} s, "
        f"{s['rounds']} x {s['duration_s']:g} s rounds, median"
    )
    table = Table(title=title, title_justify="left")
    for col, justify in (
        ("scenario", "left"),
        ("server", "left"),
        ("req/s", "right"),
        ("p50 ms", "right"),
        ("p99 ms", "right"),
        ("errors", "right"),
        ("B/resp", "right"),
        ("srv CPU", "right"),
        ("wrk CPU", "right"),
        ("others", "right"),
        ("hub/SDK", "right"),
        ("hub/JS", "right"),
        ("hub/ceiling", "right"),
        *([("hub/base", "right")] if BASELINE is not None else []),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for e in data["scenarios"]:
        first = True
        for key, fig in e["servers"].items():
            vs_sdk, vs_js = fig.get("vs_sdk"), fig.get("vs_js")
            vs_ceiling = fig.get("vs_ceiling")
            errors = str(fig["errors"])
            table.add_row(
                e["title"] if first else "",
                key,
                f"{fig['rps']:,.0f}",
                f"{fig['p50_ms']:.2f}",
                f"{fig['p99_ms']:.2f}",
                f"[red]{errors}[/red]" if fig["errors"] else errors,
                f"{fig['bytes_per_response']:.0f}",
                f"{fig['server_cpu']:.0%}",
                f"{fig['client_cpu']:.0%}",
                f"{fig['other_cpu']:.2f}",
                f"{vs_sdk:.2f}x" if vs_sdk else "",
                f"{vs_js:.2f}x" if vs_js else "",
                f"{vs_ceiling:.0%}" if vs_ceiling else "",
                *([f"{fig['vs_base']:.0%}" if fig.get("vs_base") else ""] if BASELINE else []),
            )
            first = False
        for key, why in e["skipped"].items():
            table.add_row(e["title"] if first else "", key, "skipped")
            table.add_row("", f"  [yellow]{why}[/yellow]")
            first = False
        table.add_section()
    console.print(table)
    console.print(
        "  req/s: good responses only (2xx and the body holds the expected completed task); "
        "errors: bad responses + socket errors + timeouts (all rounds); B/resp: bytes per "
        "response, headers included (the same work gives about the same size); srv CPU: the server "
        "process (100% = one core); wrk CPU: the load generator; others: CPU used meanwhile "
        "by every other process, in cores (the database server in the store rows; anything "
        "else is outside load that skews the figures); hub/SDK, hub/JS: req/s ratio to the "
        "Python and the JavaScript SDK; hub/ceiling: share of the ceiling's req/s."
    )
    for e in data["scenarios"]:
        if e.get("note") and e["servers"]:
            console.print(f"  {e['title']}: ratios {e['note']}")
        for key, fig in e["servers"].items():
            if fig["bad_sample"]:
                console.print(
                    f"  [red]{e['title']} / {key}: first bad response:[/red] {fig['bad_sample']}"
                )
    for key, d in data.get("durability", {}).items():
        console.print(f"  store check {key}: {d['verdict']}")


def main() -> int:
    if shutil.which("wrk") is None:
        console.print("[red]wrk is not installed (make bench installs it: apt-get install wrk)")
        return 2
    if not SDK_PYTHON.exists():
        console.print("[red]bench/.venv-sdk is missing (make bench creates it)")
        return 2
    raise_fd_limit()
    if not PINNED:
        console.print(
            "[yellow]fewer than 2 cores (or BENCH_PIN=0): servers and wrk are not pinned[/yellow]"
        )
    scenarios = [s for s in SCENARIOS if not ONLY or s.key in ONLY]
    wanted = {k for s in scenarios for k in servers_of(s)}
    tmp = Path(tempfile.mkdtemp(prefix="a2a-hub-bench-"))
    targets = {k: t for k, t in build_targets(tmp).items() if k in wanted}
    started: list[Target] = []
    entries: list[dict[str, Any]] = []
    durability: dict[str, Any] = {}
    if f"{HUB}/oidc" in targets:
        ISSUER.start()
    try:
        for key, t in targets.items():
            store_clean(t)  # what an earlier, interrupted run may have left
            if t.skipped is not None:  # known before trying (the JS server's node_modules)
                console.print(f"[yellow]{key} skipped: {t.skipped}[/yellow]")
                continue
            why = t.server.start()
            if why is not None:
                t.skipped = f"{t.store or key}: server did not start: {why}"
                console.print(f"[yellow]{key} skipped: {why}[/yellow]")
                continue
            started.append(t)
            t.db_before = store_count(t) or 0
            if (t.store or "").startswith("postgres"):
                t.extra["pg_scans"] = pg_scans(t.store or "")
        for sc in scenarios:
            entries.append(run_scenario(sc, targets))
    finally:
        for t in started:
            t.server.stop()
        for key, t in targets.items():
            if t.skipped is not None or t not in started:
                continue
            after = store_count(t)
            if after is None:
                continue
            rows = after - t.db_before
            in_flight = CONNECTIONS * (1 + ROUNDS)  # a run can end with its requests in flight
            ok = t.acked <= rows <= t.acked + in_flight
            durability[key] = {
                "store": t.store,
                "acknowledged": t.acked,
                "rows_written": rows,
                "ok": ok,
                "verdict": (
                    f"{rows} tasks in the store for {t.acked} acknowledged sends: "
                    + ("every acknowledged task is there" if ok else "MISMATCH")
                ),
            }
            scanned = pg_scans_after(t.store or "", t.extra.get("pg_scans"))
            if scanned is not None:
                durability[key]["seq_scans"] = scanned
                durability[key]["verdict"] += f"; {scanned}"
            store_clean(t)
        shutil.rmtree(tmp, ignore_errors=True)
        ISSUER.stop()

    ratios(entries)
    data: dict[str, Any] = {}  # a fresh file each run; bench/scale.py adds its part after this
    sample = wrk_argv(
        "http://127.0.0.1:PORT/a2a/echo", DURATION, "POST", "/a2a/echo", Path("BODY"), SCENARIOS[0]
    )
    commands: dict[str, Any] = {
        "servers": {k: show(t.server.command) for k, t in targets.items()},
        "wrk": show(sample),
    }
    if any(sc.grpc for sc in scenarios):
        commands["grpc_load"] = show(grpc_load_argv("PORT", DURATION))
    data.update(
        meta=machine_info(),
        settings={
            "duration_s": DURATION,
            "rounds": ROUNDS,
            "warmup_s": WARMUP,
            "connections": CONNECTIONS,
            "threads": THREADS,
            "timeout_s": TIMEOUT,
            "server_cpu": SERVER_CPU if PINNED else None,
            "client_cpu": CLIENT_CPU if PINNED else None,
        },
        commands=commands,
        scenarios=entries,
        durability=durability,
    )
    if BASELINE is not None:  # an A/B run: not the published figures
        data["baseline"] = str(BASELINE)
        (WORK / "ab.json").write_text(json.dumps(data, indent=2) + "\n")
        print_table(data)
        for e in entries:
            for key, fig in e["servers"].items():
                if fig.get("vs_base"):
                    console.print(
                        f"  A/B {e['key']:14} {key:16} {fig['rps']:9,.0f} req/s = "
                        f"{fig['vs_base']:.1%} of the baseline's"
                    )
        console.print(f"wrote {WORK / 'ab.json'} (baseline: {BASELINE})")
        return 0
    save_results(data)
    print_table(data)
    console.print("\n[bold]Commands[/bold]")
    for k, cmd in data["commands"]["servers"].items():
        console.print(f"  {k:18} {cmd}", soft_wrap=True)
    console.print(f"  {'wrk':18} {data['commands']['wrk']}", soft_wrap=True)
    if "grpc_load" in data["commands"]:
        console.print(f"  {'gRPC load':18} {data['commands']['grpc_load']}", soft_wrap=True)
    console.print(
        "  (wrk args after --: method, path, body file (@MID@ -> fresh id per request), "
        "expected substrings, headers; bodies in bench/.work/bodies/)"
    )
    why = draw_chart()
    console.print(
        f"wrote {Path('bench/results.json')}"
        + (f", chart failed: {why}" if why else f" and {Path('bench/results.png')}")
    )
    bad = any(f["errors"] for e in entries for f in e["servers"].values())
    bad = bad or any(not d["ok"] for d in durability.values())
    if bad:
        console.print("[red]some requests failed or a store check did not match: see above[/red]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
