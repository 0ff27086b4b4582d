"""The registry's SQL schema: tables, its version and the migrations between versions.

Tables are prefixed ``a2a_reg_`` so that the registry can share the task store's
database (the default when the store is SQL) without touching its tables; the
registry keeps its own version row (``a2a_reg_meta``, name ``schema``).
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
    select,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from a2a_hub.stores.sql.database import Step, VersionedSchema, create_table, dialect_insert

__all__ = [
    "REGISTRY_SCHEMA",
    "REGISTRY_SCHEMA_VERSION",
    "agents",
    "api_keys",
    "conversations",
    "mcp_servers",
    "messages",
    "meta",
    "metadata",
    "setup_registry_schema",
]

#: Version of the registry schema this code writes.  Bump it and add an entry to
#: ``_MIGRATIONS`` (``version -> coroutine upgrading from version - 1``).
REGISTRY_SCHEMA_VERSION = 2

_PG_SCHEMA_LOCK = 0x0A2A_0BEE  # pg_advisory_xact_lock key serialising registry setup

metadata = MetaData()

#: Named values: ``schema`` (the version), ``agents`` (bumped by every agent change),
#: ``keys`` (bumped by every revocation), ``secret`` (the generated HMAC secret).
meta = Table(
    "a2a_reg_meta",
    metadata,
    Column("name", String, primary_key=True),
    Column("value", String, nullable=False),
    Column("number", Integer, nullable=False, default=0),
)

api_keys = Table(
    "a2a_reg_api_keys",
    metadata,
    Column("key_id", String, primary_key=True),
    # HMAC-SHA-256 of the key under the server secret (hex); the key itself is never stored.
    Column("key_hash", String, nullable=False, unique=True),
    Column("prefix", String, nullable=False),  # the first characters, for people to tell keys apart
    Column("name", String, nullable=True),
    Column("principal", String, nullable=False),
    Column("agents", String, nullable=True),  # JSON list of agent ids; NULL: every agent
    Column("scopes", String, nullable=False),  # space-separated
    Column("created_at", Double, nullable=False),
    Column("expires_at", Double, nullable=True),
    Column("revoked_at", Double, nullable=True),
    Column("last_used_at", Double, nullable=True),
)
Index("ix_a2a_reg_api_keys_principal", api_keys.c.principal)

agents = Table(
    "a2a_reg_agents",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("spec", LargeBinary, nullable=False),  # the AgentSpec as JSON
    Column("updated_at", Double, nullable=False),
)

conversations = Table(
    "a2a_reg_conversations",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("context_id", String, primary_key=True),
    Column("owner", String, nullable=True),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
    Column("last_seq", Integer, nullable=False),
)
Index("ix_a2a_reg_conversations_updated", conversations.c.updated_at)

messages = Table(
    "a2a_reg_messages",
    metadata,
    Column("agent_id", String, primary_key=True),
    Column("context_id", String, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("message_id", String, nullable=False),
    Column("task_id", String, nullable=True),
    Column("created_at", Double, nullable=False),
    Column("data", LargeBinary, nullable=False),  # the Message as JSON
)
Index(
    "ix_a2a_reg_messages_id",
    messages.c.agent_id,
    messages.c.context_id,
    messages.c.message_id,
    unique=True,
)

mcp_servers = Table(
    "a2a_reg_mcp_servers",
    metadata,
    Column("name", String, primary_key=True),
    Column("transport", String, nullable=False),  # stdio | streamable-http
    Column("command", String, nullable=True),  # JSON list (stdio)
    Column("url", String, nullable=True),  # streamable-http
    Column("headers", String, nullable=True),  # JSON object
    Column("updated_at", Double, nullable=False),
    Column("public", Integer, nullable=True),  # v2: 1 = listed in the AI catalog
)

_TABLES = (api_keys, agents, conversations, messages, mcp_servers)


# Upgrades, keyed by the version they produce; each runs inside the setup transaction.
async def _v2_public_mcp_servers(conn: AsyncConnection) -> None:
    """v2: MCP servers may be marked public (listed in /.well-known/ai-catalog.json)."""
    await conn.execute(text(f"ALTER TABLE {mcp_servers.name} ADD COLUMN public INTEGER"))


_MIGRATIONS: dict[int, Step] = {2: _v2_public_mcp_servers}


async def _read_version(conn: AsyncConnection) -> int | None:
    await create_table(conn, meta)
    found = (
        await conn.execute(select(meta.c.value).where(meta.c.name == "schema"))
    ).scalar_one_or_none()
    return None if found is None else int(found)


async def _create(conn: AsyncConnection) -> None:
    """The current tables in a database without them, and the meta rows."""
    for table in _TABLES:
        await create_table(conn, table)
    rows = [
        {"name": "schema", "value": str(REGISTRY_SCHEMA_VERSION), "number": 0},
        {"name": "agents", "value": "", "number": 0},
        {"name": "keys", "value": "", "number": 0},
    ]
    insert = dialect_insert(conn.dialect.name)
    await conn.execute(insert(meta).values(rows).on_conflict_do_nothing())


async def _write_version(conn: AsyncConnection, version: int) -> None:
    await conn.execute(update(meta).where(meta.c.name == "schema").values(value=str(version)))


#: The registry's schema: its tables, version row (``schema`` in ``a2a_reg_meta``),
#: migrations; set up by the runner the task store uses too.
REGISTRY_SCHEMA = VersionedSchema(
    what="Registry",
    version=REGISTRY_SCHEMA_VERSION,
    lock=_PG_SCHEMA_LOCK,
    read_version=_read_version,
    create=_create,
    write_version=_write_version,
    migrations=_MIGRATIONS,
)


async def setup_registry_schema(conn: AsyncConnection, safe_url: str) -> None:
    """Create the registry's tables, or upgrade older ones (in ``conn``'s transaction);
    refuse a schema newer than this code."""
    await REGISTRY_SCHEMA.setup(conn, safe_url)
