"""The registry's conversation store: batches of messages appended in order and once, on
SQLite and PostgreSQL (new conversations, older ones, repeated message ids, several agents,
two registries appending to one conversation at once)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from a2a_hub.protocol.types import Message, Part, Role
from a2a_hub.registry import Registry
from tests.support.stores import POSTGRES_URL, missing_service


@pytest.fixture(params=["sqlite", "postgresql"])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/registry.db"
        return
    probe = Registry(POSTGRES_URL)
    try:
        await probe.open()
    except Exception as exc:
        missing_service(f"PostgreSQL unavailable: {exc}")
    await probe.close()
    yield POSTGRES_URL


def msg(mid: str) -> Message:
    return Message(message_id=mid, role=Role.USER, parts=[Part(text=mid)])


async def test_batches_append_in_order_once(url: str) -> None:
    registry = Registry(url)
    await registry.open()
    try:
        agent, other = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
        old, new = "ctx-old", "ctx-new"
        assert await registry.append_batch([(agent, old, "ann", "t1", [msg("m1"), msg("m2")])]) == 2
        added = await registry.append_batch(
            [
                (agent, old, "ann", "t2", [msg("m2"), msg("m3")]),  # m2 is known: skipped
                # another caller's message with ann's context id: never in ann's (item 30.11)
                (agent, old, "bob", "t5", [msg("intruder")]),
                (agent, new, "bob", "t3", [msg("n1"), msg("n1"), msg("n2")]),  # n1 twice
                (other, old, None, "t4", [msg("m1")]),  # another agent's conversation
                (agent, new, "bob", "t3", [msg("n3")]),
            ]
        )
        assert added == 5
        owner, got = await registry.conversation(agent, old) or (None, [])
        assert owner == "ann"  # set when the conversation was created, never changed
        assert [(seq, m.message_id) for seq, m in got] == [(1, "m1"), (2, "m2"), (3, "m3")]
        # a batch that creates a conversation takes only its creator's messages
        assert await registry.append_batch(
            [(agent, "ctx-two", "cy", "t6", [msg("c1")]), (agent, "ctx-two", "dee", "t7",
              [msg("d1")]), (agent, "ctx-two", "cy", "t6", [msg("c2")])]
        ) == 2  # fmt: skip
        owner, got = await registry.conversation(agent, "ctx-two") or (None, [])
        assert owner == "cy" and [(s, m.message_id) for s, m in got] == [(1, "c1"), (2, "c2")]
        owner, got = await registry.conversation(agent, new) or (None, [])
        assert owner == "bob"
        assert [(seq, m.message_id) for seq, m in got] == [(1, "n1"), (2, "n2"), (3, "n3")]
        assert [
            m.message_id for _, m in (await registry.conversation(other, old) or ("", []))[1]
        ] == ["m1"]
        # the next batch continues each conversation where it ended
        assert await registry.append_batch([(agent, new, "bob", "t5", [msg("n4"), msg("n1")])]) == 1
        _, got = await registry.conversation(agent, new, after=2) or (None, [])
        assert [(seq, m.message_id) for seq, m in got] == [(3, "n3"), (4, "n4")]
    finally:
        await registry.close()


async def test_two_registries_appending_to_one_conversation_keep_one_order(url: str) -> None:
    if url.startswith("sqlite"):
        pytest.skip("SQLite: instances sharing a registry use PostgreSQL")
    one, two = Registry(url), Registry(url)
    await one.open()
    await two.open()
    try:
        agent, ctx = f"race-{uuid.uuid4().hex[:8]}", "ctx"
        await asyncio.gather(
            *(
                r.append_batch([(agent, ctx, None, "t", [msg(f"{name}{i}")])])
                for i in range(10)
                for name, r in (("a", one), ("b", two))
            )
        )
        _, got = await one.conversation(agent, ctx, limit=100) or (None, [])
        assert [seq for seq, _ in got] == list(range(1, 21))
        assert sorted(m.message_id for _, m in got) == sorted(
            f"{n}{i}" for n in "ab" for i in range(10)
        )
    finally:
        await one.close()
        await two.close()
