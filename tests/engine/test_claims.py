"""Idempotent sends at the engine: a caller's message id runs the agent once."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from a2a_hub.engine import TaskEngine
from a2a_hub.engine.caller import Caller
from a2a_hub.protocol.errors import StoreUnavailableError, UnsupportedOperationError
from a2a_hub.protocol.types import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a_hub.stores.base import MessageClaim
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import Counted, CountedReply, PizzaExecutor

ALICE = Caller(principal="alice")
BOB = Caller(principal="bob")


def request(
    message_id: str, text: str = "hi", *, immediate: bool = False, task_id: str | None = None
) -> SendMessageRequest:
    message = Message(message_id=message_id, role=Role.USER, parts=[Part(text=text)])
    if task_id is not None:
        message.task_id = task_id
    config = SendMessageConfiguration(return_immediately=True) if immediate else None
    return SendMessageRequest(message=message, configuration=config)


class FlakyStore(MemoryStore):
    """A memory store whose claims fail while ``down``, and its saves while ``saves_down``
    (the store's outage error)."""

    down = False
    saves_down = False

    async def claim_message(
        self, agent_id: str, owner: str | None, message_id: str, claim: MessageClaim
    ) -> MessageClaim | None:
        if self.down:
            raise StoreUnavailableError("Task store memory:// is unavailable (test outage)")
        return await super().claim_message(agent_id, owner, message_id, claim)

    async def save_task(self, agent_id: str, task: Task, *args: Any, **kwargs: Any) -> None:
        if self.saves_down:
            raise StoreUnavailableError("Task store memory:// is unavailable (test outage)")
        await super().save_task(agent_id, task, *args, **kwargs)


async def drain(engine: TaskEngine, req: SendMessageRequest, caller: Caller) -> list[object]:
    stream = await engine.send_stream(req, caller=caller)
    return [event.event async for event in stream]


async def test_one_message_sent_50_times_at_once_runs_once_in_every_kind_of_send() -> None:
    agent = Counted(delay=0.2)
    engine = TaskEngine("a", agent, MemoryStore())
    mid = str(uuid.uuid4())
    sends = []
    for i in range(50):
        kind = i % 3
        if kind == 0:
            sends.append(engine.send(request(mid), caller=ALICE))
        elif kind == 1:
            sends.append(engine.send(request(mid, immediate=True), caller=ALICE))
        else:
            sends.append(drain(engine, request(mid), ALICE))
    results = await asyncio.gather(*sends)
    assert agent.runs == 1
    task_ids = set()
    for i, result in enumerate(results):
        if i % 3 == 0:
            assert isinstance(result, Task) and result.status.state is TaskState.COMPLETED
            assert result.artifacts and result.artifacts[0].parts[0].text == "counted: hi"
            task_ids.add(result.id)
        elif i % 3 == 1:
            assert isinstance(result, Task)
            task_ids.add(result.id)
        else:
            assert isinstance(result, list) and result
            last = result[-1]
            assert last.status_update is not None  # type: ignore[attr-defined]
            assert last.status_update.status.state is TaskState.COMPLETED  # type: ignore[attr-defined]
            task_ids.add(last.status_update.task_id)  # type: ignore[attr-defined]
    assert len(task_ids) == 1
    # a repeat after the task finished answers with it, without running it again
    again = await engine.send(request(mid), caller=ALICE)
    assert isinstance(again, Task) and again.id in task_ids
    assert again.status.state is TaskState.COMPLETED
    streamed = await drain(engine, request(mid), ALICE)
    assert streamed[-1].status_update.status.state is TaskState.COMPLETED  # type: ignore[attr-defined]
    assert agent.runs == 1


async def test_a_direct_reply_is_answered_to_every_repeat() -> None:
    agent = CountedReply(delay=0.1)
    engine = TaskEngine("a", agent, MemoryStore())
    mid = str(uuid.uuid4())
    results = await asyncio.gather(*(engine.send(request(mid), caller=ALICE) for _ in range(20)))
    assert agent.runs == 1
    assert all(isinstance(r, Message) for r in results)
    assert {r.message_id for r in results} == {results[0].message_id}  # type: ignore[union-attr]
    later = await engine.send(request(mid), caller=ALICE)
    assert isinstance(later, Message) and later.message_id == results[0].message_id  # type: ignore[union-attr]
    streamed = await drain(engine, request(mid), ALICE)
    assert [e.message.message_id for e in streamed] == [later.message_id]  # type: ignore[attr-defined]
    assert agent.runs == 1


async def test_another_caller_with_the_same_message_id_sends_another_message() -> None:
    agent = Counted(delay=0)
    engine = TaskEngine("a", agent, MemoryStore())
    mid = str(uuid.uuid4())
    first = await engine.send(request(mid), caller=ALICE)
    second = await engine.send(request(mid), caller=BOB)
    assert isinstance(first, Task) and isinstance(second, Task)
    assert first.id != second.id and agent.runs == 2
    # and the same caller on another agent of the same store
    other = TaskEngine("b", agent, engine.store)
    third = await other.send(request(mid), caller=ALICE)
    assert isinstance(third, Task) and agent.runs == 3


async def test_a_repeated_continuation_follows_its_first_turn() -> None:
    engine = TaskEngine("a", PizzaExecutor(), MemoryStore())
    first = await engine.send(request(str(uuid.uuid4()), "pizza"), caller=ALICE)
    assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
    mid = str(uuid.uuid4())
    answers = await asyncio.gather(
        *(engine.send(request(mid, "margherita", task_id=first.id), caller=ALICE) for _ in range(5))
    )
    for answer in answers:
        assert isinstance(answer, Task) and answer.id == first.id
        assert answer.status.state is TaskState.COMPLETED
    history = (await engine.get_task(first.id, caller=ALICE)).history or []
    assert [m.parts[0].text for m in history if m.role is Role.USER] == ["pizza", "margherita"]


async def test_a_failed_claim_answers_the_error_and_runs_nothing() -> None:
    store = FlakyStore()
    agent = Counted(delay=0)
    engine = TaskEngine("a", agent, store)
    mid = str(uuid.uuid4())
    store.down = True
    for immediate in (False, True):
        with pytest.raises(StoreUnavailableError):
            await engine.send(request(mid, immediate=immediate), caller=ALICE)
    with pytest.raises(StoreUnavailableError):
        await engine.send_stream(request(mid), caller=ALICE)
    assert agent.runs == 0 and not engine.runs
    assert (await store.list_tasks("a", _everything())).tasks == []
    store.down = False  # the retry runs it, once
    task = await engine.send(request(mid), caller=ALICE)
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert agent.runs == 1


async def test_a_first_attempt_that_left_nothing_is_a_clear_error() -> None:
    store = MemoryStore()
    engine = TaskEngine("a", Counted(delay=0), store)
    engine.claims.patience = 0.2
    mid = str(uuid.uuid4())
    lost = MessageClaim(task_id="lost-task", instance="gone", created=0.0)
    assert await store.claim_message("a", "alice", mid, lost) is None
    with pytest.raises(UnsupportedOperationError, match="new messageId"):
        await engine.send(request(mid), caller=ALICE)


async def test_a_non_blocking_send_whose_first_write_fails_is_the_one_its_retry_finds() -> None:
    store = FlakyStore()
    agent = Counted(delay=0.05)
    engine = TaskEngine("a", agent, store)
    mid = str(uuid.uuid4())
    store.saves_down = True
    with pytest.raises(StoreUnavailableError):
        await engine.send(request(mid, immediate=True), caller=ALICE)
    await asyncio.sleep(0.2)  # the task runs meanwhile; nothing can be written
    store.saves_down = False  # back: the flusher writes it, and the retry finds it
    task = await engine.send(request(mid), caller=ALICE)
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert agent.runs == 1
    stored = await store.get_task("a", task.id)
    assert stored is not None and stored.status.state is TaskState.COMPLETED
    await engine.close()


async def test_a_blocking_send_whose_end_cannot_be_written_is_written_once_the_store_is_back() -> (
    None
):
    """The agent finished during an outage: the request is answered with the error at once,
    the run keeps its end and writes it when the store is back (it never stays "working"),
    and a retry of the message answers with the completed task, without running it again."""
    store = FlakyStore()
    agent = Counted(delay=0.05)
    engine = TaskEngine("a", agent, store)
    mid = str(uuid.uuid4())
    store.saves_down = True
    with pytest.raises(StoreUnavailableError):
        await engine.send(request(mid), caller=ALICE)
    assert agent.runs == 1
    retry = asyncio.ensure_future(engine.send(request(mid), caller=ALICE))
    await asyncio.sleep(0.2)
    store.saves_down = False
    task = await retry
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    stored = await store.get_task("a", task.id)
    assert stored is not None and stored.status.state is TaskState.COMPLETED
    assert agent.runs == 1
    assert engine.live(task.id) is None  # the run ended once its end was written
    await engine.close()


def _everything() -> object:
    from a2a_hub.stores.base import TaskQuery

    return TaskQuery(page_size=100)
