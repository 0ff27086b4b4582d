"""Conversations in the registry: the messages of each (agent, context id), appended in
batches by the conversation recorders, read back by position or from the end, listed
and forgotten after a while."""

from __future__ import annotations

import time
from typing import Any

import msgspec
from sqlalchemy import and_, bindparam, delete, insert, or_, select, update

from a2a_hub.protocol.types import Message
from a2a_hub.registry.base import RegistryBase, insert_ignore
from a2a_hub.registry.schema import conversations, messages

__all__ = ["RegistryConversations"]


class RegistryConversations(RegistryBase):
    """Stored conversations: append, read, list, forget."""

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
        a conversation's owner is set when it is created, and only its owner's messages
        join it: another caller using the same context id adds nothing to it (that caller's
        messages stay in its own tasks).  Returns how many were added.

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
            if owners[(agent_id, context_id)] != owner:
                continue  # not the messages of the owner it would be created for
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
                insert_ignore(conn.dialect.name, conversations),
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
                select(cc.agent_id, cc.context_id, cc.owner, cc.last_seq, cc.created_at)
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
            #: The owner of each conversation: only its owner's messages join it.
            owner_of: dict[tuple[str, str], str | None] = {}
            older: dict[str, list[str]] = {}
            older_pairs: list[tuple[str, str]] = []
            for r in found:
                pair = (r.agent_id, r.context_id)
                if pair not in owners:
                    continue
                owner_of[pair] = r.owner
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
            for agent_id, context_id, owner, task_id, new in entries:
                if owner != owner_of.get((agent_id, context_id), owner):
                    continue  # another caller's context id: never written into its owner's
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
