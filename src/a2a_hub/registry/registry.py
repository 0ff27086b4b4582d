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
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any, Literal

import msgspec
from sqlalchemy import and_, bindparam, delete, event, insert, or_, select, update
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from a2a_hub.protocol.types import Message
from a2a_hub.registry.schema import (
    agents,
    api_keys,
    conversations,
    mcp_servers,
    messages,
    meta,
    setup_registry_schema,
)
from a2a_hub.settings import AgentSpec

__all__ = [
    "DEFAULT_REGISTRY",
    "KEY_PREFIX",
    "SCOPES",
    "KeyInfo",
    "McpServer",
    "Registry",
    "RegistryError",
    "UnknownEntryError",
    "parse_duration",
    "registry_url",
]

DEFAULT_REGISTRY = "sqlite:///.a2a-hub/registry.db"

#: Every API key starts with this (so that scanners and people recognise one).
KEY_PREFIX = "a2ah_"

#: What a key may do: call its agents; see every task of its agents; administer the hub.
SCOPES = ("invoke", "read-all", "admin")

_PREFIX_LEN = len(KEY_PREFIX) + 6  # shown in listings: "a2ah_" + 6 characters


class RegistryError(ValueError):
    """A registry request that cannot be done (unknown id, bad value); the message says why."""


class UnknownEntryError(RegistryError):
    """The registry has no entry with that id or name."""


class KeyInfo(msgspec.Struct, kw_only=True, rename="camel"):
    """An API key as the registry knows it (never the key itself)."""

    id: str
    prefix: str
    principal: str
    scopes: list[str]
    agents: list[str] | None  # None: every agent
    created_at: float
    name: str | None = None
    expires_at: float | None = None
    revoked_at: float | None = None
    last_used_at: float | None = None

    def usable(self, now: float) -> bool:
        """Neither revoked nor expired at ``now``."""
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class McpServer(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An MCP server definition (used by agent tools): stdio ``command`` or HTTP ``url``."""

    name: str
    transport: Literal["stdio", "streamable-http"]
    command: list[str] | None = None
    url: str | None = None
    headers: dict[str, str] | None = None


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


def _engine_url(url: str) -> URL:
    parsed = make_url(url)
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "aiosqlite"):
        return parsed.set(drivername="sqlite+aiosqlite")
    if backend in ("postgresql", "postgres") and driver in ("", "asyncpg"):
        return parsed.set(drivername="postgresql+asyncpg")
    raise RegistryError(
        "the registry needs sqlite:///PATH or postgresql://USER@HOST/DB, not "
        f"{parsed.render_as_string(hide_password=True)!r}"
    )


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=5000")
    finally:
        cursor.close()


def _key_info(row: Any) -> KeyInfo:
    return KeyInfo(
        id=row.key_id,
        prefix=row.prefix,
        principal=row.principal,
        scopes=row.scopes.split(),
        agents=None if row.agents is None else json.loads(row.agents),
        created_at=row.created_at,
        name=row.name,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        last_used_at=row.last_used_at,
    )


class Registry:
    """API keys, agents and MCP servers in SQL; :meth:`open` before use, :meth:`close` after."""

    #: How often (seconds) a key's ``last_used_at`` is written at most.
    LAST_USED_EVERY = 60.0

    def __init__(self, url: str, *, secret: str | None = None) -> None:
        self.url = url
        self._engine_url = _engine_url(url)
        self.safe_url = make_url(url).render_as_string(hide_password=True)
        self._secret: bytes | None = secret.encode() if secret else None
        self._engine: AsyncEngine | None = None

    def __repr__(self) -> str:
        return f"Registry({self.safe_url!r})"

    @property
    def engine(self) -> AsyncEngine:
        """The SQLAlchemy engine (between :meth:`open` and :meth:`close`)."""
        if self._engine is None:
            raise RuntimeError(f"{self!r} is not open; await registry.open() first")
        return self._engine

    async def open(self) -> None:
        """Connect, create or upgrade the schema, and read (or generate) the secret."""
        if self._engine is not None:
            return
        options: dict[str, Any] = {}
        if self._engine_url.get_backend_name() == "sqlite":
            database = self._engine_url.database or ""
            if database and database != ":memory:" and not database.startswith("file:"):
                Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(self._engine_url, **options)
        if self._engine_url.get_backend_name() == "sqlite":
            event.listen(engine.sync_engine, "connect", _sqlite_on_connect)
        try:
            async with engine.begin() as conn:
                await setup_registry_schema(conn, self.safe_url)
                if self._secret is None:
                    made = await conn.execute(
                        _insert_ignore(conn.dialect.name).values(
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
            await engine.dispose()
            raise
        self._engine = engine

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
        """Release the connections."""
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

    # --- API keys -----------------------------------------------------------------------

    def hash_key(self, key: str) -> str:
        """The keyed hash stored for ``key`` (HMAC-SHA-256 under the secret, hex)."""
        if self._secret is None:
            raise RuntimeError(f"{self!r} is not open; await registry.open() first")
        return hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()

    async def create_key(
        self,
        *,
        principal: str | None = None,
        agents: list[str] | None = None,
        scopes: list[str] | None = None,
        name: str | None = None,
        expires_in: float | None = None,
    ) -> tuple[str, KeyInfo]:
        """A new key (shown only here) and its record.

        ``agents`` None opens every agent; ``scopes`` defaults to ``["invoke"]``;
        ``principal`` defaults to ``name``, else to the key's id (its own principal).
        """
        scopes = list(dict.fromkeys(scopes or ["invoke"]))
        unknown = [s for s in scopes if s not in SCOPES]
        if unknown:
            raise RegistryError(f"unknown scope {unknown[0]!r}; scopes: {', '.join(SCOPES)}")
        if agents is not None and not agents:
            raise RegistryError("a key must open at least one agent (or every agent)")
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        key_id = "key_" + secrets.token_hex(8)
        now = time.time()
        info = KeyInfo(
            id=key_id,
            prefix=key[:_PREFIX_LEN],
            principal=principal or name or key_id,
            scopes=scopes,
            agents=None if agents is None else sorted(set(agents)),
            created_at=now,
            name=name,
            expires_at=None if expires_in is None else now + expires_in,
        )
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(api_keys).values(
                    key_id=info.id,
                    key_hash=self.hash_key(key),
                    prefix=info.prefix,
                    name=info.name,
                    principal=info.principal,
                    agents=None if info.agents is None else json.dumps(info.agents),
                    scopes=" ".join(info.scopes),
                    created_at=info.created_at,
                    expires_at=info.expires_at,
                )
            )
        return key, info

    async def lookup_key(self, key: str) -> KeyInfo | None:
        """The record of ``key`` (revoked and expired ones too), or None if unknown.

        The row is found by its keyed hash, and the hashes compared again in
        constant time; ``last_used_at`` is refreshed at most every
        :attr:`LAST_USED_EVERY` seconds.
        """
        if not key.startswith(KEY_PREFIX) or len(key) > 200:
            return None
        digest = self.hash_key(key)
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(select(api_keys).where(api_keys.c.key_hash == digest))
            ).first()
            if row is None or not hmac.compare_digest(row.key_hash, digest):
                return None
            info = _key_info(row)
            now = time.time()
            if info.usable(now) and (
                info.last_used_at is None or now - info.last_used_at > self.LAST_USED_EVERY
            ):
                await conn.execute(
                    update(api_keys).where(api_keys.c.key_id == info.id).values(last_used_at=now)
                )
                await conn.commit()
                info.last_used_at = now
        return info

    async def list_keys(self, principal: str | None = None) -> list[KeyInfo]:
        """Every key (of ``principal`` if given), oldest first."""
        query = select(api_keys).order_by(api_keys.c.created_at, api_keys.c.key_id)
        if principal is not None:
            query = query.where(api_keys.c.principal == principal)
        async with self.engine.connect() as conn:
            return [_key_info(row) for row in await conn.execute(query)]

    async def get_key(self, key_id: str) -> KeyInfo:
        """The key with that id (or whose display prefix it is)."""
        async with self.engine.connect() as conn:
            rows = (
                await conn.execute(
                    select(api_keys).where(
                        (api_keys.c.key_id == key_id) | (api_keys.c.prefix == key_id)
                    )
                )
            ).all()
        if not rows:
            raise UnknownEntryError(f"no API key {key_id!r} (see: a2a-hub keys list)")
        if len(rows) > 1:
            raise RegistryError(f"{key_id!r} names several keys; use the key id")
        return _key_info(rows[0])

    async def revoke_key(self, key_id: str) -> KeyInfo:
        """Revoke a key (by id or display prefix): it stops working at once here, and on
        other instances within their ``auth.cache_seconds``."""
        info = await self.get_key(key_id)
        if info.revoked_at is None:
            info.revoked_at = time.time()
            async with self.engine.begin() as conn:
                await conn.execute(
                    update(api_keys)
                    .where(api_keys.c.key_id == info.id)
                    .values(revoked_at=info.revoked_at)
                )
                await _bump(conn, "keys")
        return info

    async def has_admin_key(self) -> bool:
        """Whether a usable key with the ``admin`` scope exists (the admin API is on)."""
        return any("admin" in k.scopes and k.usable(time.time()) for k in await self.list_keys())

    # --- agents -------------------------------------------------------------------------

    async def agents_version(self) -> int:
        """A counter bumped by every agent change (cheap to poll)."""
        async with self.engine.connect() as conn:
            return int(
                (
                    await conn.execute(select(meta.c.number).where(meta.c.name == "agents"))
                ).scalar_one()
            )

    async def list_agents(self) -> list[AgentSpec]:
        """Every registered agent, by id."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(select(agents.c.spec).order_by(agents.c.agent_id))
            return [msgspec.json.decode(row.spec, type=AgentSpec) for row in rows]

    async def get_agent(self, agent_id: str) -> AgentSpec | None:
        """The registered agent with that id, if any."""
        async with self.engine.connect() as conn:
            data = (
                await conn.execute(select(agents.c.spec).where(agents.c.agent_id == agent_id))
            ).scalar_one_or_none()
        return None if data is None else msgspec.json.decode(data, type=AgentSpec)

    async def put_agent(self, spec: AgentSpec) -> bool:
        """Register or replace an agent; True if anything changed."""
        data = msgspec.json.encode(spec)
        async with self.engine.begin() as conn:
            old = (
                await conn.execute(select(agents.c.spec).where(agents.c.agent_id == spec.id))
            ).scalar_one_or_none()
            if old == data:
                return False
            if old is None:
                await conn.execute(
                    insert(agents).values(agent_id=spec.id, spec=data, updated_at=time.time())
                )
            else:
                await conn.execute(
                    update(agents)
                    .where(agents.c.agent_id == spec.id)
                    .values(spec=data, updated_at=time.time())
                )
            await _bump(conn, "agents")
        return True

    async def delete_agent(self, agent_id: str) -> bool:
        """Unregister an agent; True if it was registered."""
        async with self.engine.begin() as conn:
            gone = (
                await conn.execute(delete(agents).where(agents.c.agent_id == agent_id))
            ).rowcount
            if gone:
                await _bump(conn, "agents")
        return bool(gone)

    # --- conversations ------------------------------------------------------------------

    async def append_messages(
        self,
        agent_id: str,
        context_id: str,
        owner: str | None,
        task_id: str | None,
        new: list[Message],
    ) -> int:
        """Append messages to one conversation (see :meth:`append_batch`)."""
        return await self.append_batch([(agent_id, context_id, owner, task_id, new)])

    async def append_batch(
        self, entries: list[tuple[str, str, str | None, str | None, list[Message]]]
    ) -> int:
        """Append messages to conversations, in order, in one transaction of a few
        statements whatever the batch's size; a message id a conversation holds already
        is skipped.  Each entry is ``(agent_id, context_id, owner, task_id, messages)``;
        a conversation's owner is set when it is created.  Returns how many were added.

        Each conversation is inserted first (kept if it exists: this also takes the
        write lock, or on PostgreSQL the rows' locks, before anything is read), already
        holding the ``last_seq`` it gets if the batch creates it.  A conversation this
        batch created (its ``created_at`` is this batch's) holds none of the messages,
        so only older ones are checked for known message ids and updated afterwards."""
        if not entries:
            return 0
        now = time.time()
        owners: dict[tuple[str, str], str | None] = {}
        fresh_ids: dict[tuple[str, str], dict[str, None]] = {}
        for agent_id, context_id, owner, _, new in entries:
            owners.setdefault((agent_id, context_id), owner)
            ids = fresh_ids.setdefault((agent_id, context_id), {})
            for message in new:
                ids[message.message_id] = None
        # Per agent, "context_id IN (…)": an index serves it on SQLite and PostgreSQL alike
        # (a row-value IN list makes SQLite scan the whole table); extra rows are ignored.
        contexts_of: dict[str, list[str]] = {}
        for agent_id, context_id in owners:
            contexts_of.setdefault(agent_id, []).append(context_id)
        cc, mc = conversations.c, messages.c
        async with self.engine.begin() as conn:
            await conn.execute(
                _insert_ignore(conn.dialect.name, conversations),
                [
                    {
                        "agent_id": a,
                        "context_id": c,
                        "owner": owner,
                        "created_at": now,
                        "updated_at": now,
                        "last_seq": len(fresh_ids[(a, c)]),
                    }
                    for (a, c), owner in owners.items()
                ],
            )
            found = await conn.execute(
                select(cc.agent_id, cc.context_id, cc.last_seq, cc.created_at)
                .where(
                    or_(
                        *(
                            and_(cc.agent_id == a, cc.context_id.in_(cs))
                            for a, cs in contexts_of.items()
                        )
                    )
                )
                .with_for_update()
            )
            seqs: dict[tuple[str, str], int] = {}
            older: dict[str, list[str]] = {}
            older_pairs: list[tuple[str, str]] = []
            for r in found:
                pair = (r.agent_id, r.context_id)
                if pair not in owners:
                    continue
                if r.created_at == now and r.last_seq == len(fresh_ids[pair]):
                    seqs[pair] = 0  # created by this batch: numbered from 1, nothing known
                else:
                    seqs[pair] = int(r.last_seq)
                    older.setdefault(r.agent_id, []).append(r.context_id)
                    older_pairs.append(pair)
            last_of = dict(seqs)
            known: set[tuple[str, str, str]] = set()
            if older:
                wanted = or_(
                    *(
                        and_(
                            mc.agent_id == a,
                            mc.context_id.in_(cs),
                            mc.message_id.in_(
                                {m.message_id for e in entries if e[0] == a for m in e[4]}
                            ),
                        )
                        for a, cs in older.items()
                    )
                )
                known = {
                    (r.agent_id, r.context_id, r.message_id)
                    for r in await conn.execute(
                        select(mc.agent_id, mc.context_id, mc.message_id).where(wanted)
                    )
                }
            rows = []
            for agent_id, context_id, _, task_id, new in entries:
                for message in new:
                    ident = (agent_id, context_id, message.message_id)
                    if ident in known:
                        continue
                    known.add(ident)
                    seqs[(agent_id, context_id)] += 1
                    rows.append(
                        {
                            "agent_id": agent_id,
                            "context_id": context_id,
                            "seq": seqs[(agent_id, context_id)],
                            "message_id": message.message_id,
                            "task_id": message.task_id or task_id,
                            "created_at": now,
                            "data": msgspec.json.encode(message),
                        }
                    )
            if rows:
                await conn.execute(insert(messages), rows)
                touched = {(a, c) for a, c in older_pairs if seqs[(a, c)] > last_of[(a, c)]}
                if touched:
                    await conn.execute(
                        update(conversations)
                        .where(
                            (conversations.c.agent_id == bindparam("a"))
                            & (conversations.c.context_id == bindparam("c"))
                        )
                        .values(last_seq=bindparam("s"), updated_at=now),
                        [{"a": a, "c": c, "s": seqs[(a, c)]} for a, c in touched],
                    )
        return len(rows)

    async def conversation(
        self, agent_id: str, context_id: str, *, after: int = 0, limit: int = 50
    ) -> tuple[str | None, list[tuple[int, Message]]] | None:
        """The owner and up to ``limit`` messages (with their position) after position
        ``after``; None if the conversation is unknown."""
        async with self.engine.connect() as conn:
            found = (
                await conn.execute(
                    select(conversations.c.owner).where(
                        (conversations.c.agent_id == agent_id)
                        & (conversations.c.context_id == context_id)
                    )
                )
            ).first()
            if found is None:
                return None
            rows = await conn.execute(
                select(messages.c.seq, messages.c.data)
                .where(
                    (messages.c.agent_id == agent_id)
                    & (messages.c.context_id == context_id)
                    & (messages.c.seq > after)
                )
                .order_by(messages.c.seq)
                .limit(limit)
            )
            return found.owner, [
                (row.seq, msgspec.json.decode(row.data, type=Message)) for row in rows
            ]

    async def conversation_tail(
        self, agent_id: str, context_id: str, limit: int = 50
    ) -> tuple[str | None, list[Message]] | None:
        """The owner and the last ``limit`` messages of a conversation (oldest first);
        None if the conversation is unknown."""
        async with self.engine.connect() as conn:
            found = (
                await conn.execute(
                    select(conversations.c.owner).where(
                        (conversations.c.agent_id == agent_id)
                        & (conversations.c.context_id == context_id)
                    )
                )
            ).first()
            if found is None:
                return None
            rows = await conn.execute(
                select(messages.c.data)
                .where((messages.c.agent_id == agent_id) & (messages.c.context_id == context_id))
                .order_by(messages.c.seq.desc())
                .limit(limit)
            )
            tail = [msgspec.json.decode(row.data, type=Message) for row in rows]
        return found.owner, tail[::-1]

    async def list_conversations(
        self, agent_id: str | None = None, owner: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Conversations, most recently updated first."""
        query = select(conversations).order_by(conversations.c.updated_at.desc()).limit(limit)
        if agent_id is not None:
            query = query.where(conversations.c.agent_id == agent_id)
        if owner is not None:
            query = query.where(conversations.c.owner == owner)
        async with self.engine.connect() as conn:
            return [
                {
                    "agentId": row.agent_id,
                    "contextId": row.context_id,
                    "owner": row.owner,
                    "createdAt": row.created_at,
                    "updatedAt": row.updated_at,
                    "messages": row.last_seq,
                }
                for row in await conn.execute(query)
            ]

    async def forget_conversations(self, older_than: float) -> int:
        """Delete conversations not updated for ``older_than`` seconds; how many went."""
        cutoff = time.time() - older_than
        async with self.engine.begin() as conn:
            old = (
                await conn.execute(
                    select(conversations.c.agent_id, conversations.c.context_id).where(
                        conversations.c.updated_at < cutoff
                    )
                )
            ).all()
            for row in old:
                for table in (messages, conversations):
                    await conn.execute(
                        delete(table).where(
                            (table.c.agent_id == row.agent_id)
                            & (table.c.context_id == row.context_id)
                        )
                    )
        return len(old)

    # --- MCP servers --------------------------------------------------------------------

    async def list_mcp_servers(self) -> list[McpServer]:
        """Every MCP server definition, by name."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(select(mcp_servers).order_by(mcp_servers.c.name))
            return [_mcp(row) for row in rows]

    async def get_mcp_server(self, name: str) -> McpServer | None:
        """The MCP server definition with that name, if any."""
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(select(mcp_servers).where(mcp_servers.c.name == name))
            ).first()
        return None if row is None else _mcp(row)

    async def put_mcp_server(self, server: McpServer) -> None:
        """Create or replace an MCP server definition."""
        if server.transport == "stdio" and not server.command:
            raise RegistryError(f"MCP server {server.name!r}: stdio needs a command")
        if server.transport == "streamable-http" and not server.url:
            raise RegistryError(f"MCP server {server.name!r}: streamable-http needs a url")
        values = {
            "transport": server.transport,
            "command": None if server.command is None else json.dumps(server.command),
            "url": server.url,
            "headers": None if server.headers is None else json.dumps(server.headers),
            "updated_at": time.time(),
        }
        async with self.engine.begin() as conn:
            done = (
                await conn.execute(
                    update(mcp_servers).where(mcp_servers.c.name == server.name).values(**values)
                )
            ).rowcount
            if not done:
                await conn.execute(insert(mcp_servers).values(name=server.name, **values))

    async def delete_mcp_server(self, name: str) -> bool:
        """Remove an MCP server definition; True if it existed."""
        async with self.engine.begin() as conn:
            return bool(
                (await conn.execute(delete(mcp_servers).where(mcp_servers.c.name == name))).rowcount
            )


def _mcp(row: Any) -> McpServer:
    return McpServer(
        name=row.name,
        transport=row.transport,
        command=None if row.command is None else json.loads(row.command),
        url=row.url,
        headers=None if row.headers is None else json.loads(row.headers),
    )


def _insert_ignore(dialect: str, table: Any = meta) -> Any:
    from sqlalchemy.dialects import postgresql, sqlite

    make = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return make(table).on_conflict_do_nothing()


async def _bump(conn: Any, name: str) -> None:
    await conn.execute(update(meta).where(meta.c.name == name).values(number=meta.c.number + 1))
