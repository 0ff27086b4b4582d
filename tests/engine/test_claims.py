"""Idempotent sends at the engine: a caller's message id runs the agent once."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import msgspec
import pytest

from a2a_hub.engine import TaskEngine
from a2a_hub.engine.caller import Caller
from a2a_hub.engine.claims import send_digest
from a2a_hub.protocol import fieldnames
from a2a_hub.protocol.errors import (
    IdempotencyKeyReusedError,
    InvalidParamsError,
    StoreUnavailableError,
    UnsupportedOperationError,
)
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
from tests.support.agents import Counted, CountedReply, PizzaExecutor, SlowExecutor

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


# --- a key used for another message ------------------------------------------------------


def variants(mid: str, other_task: str) -> list[SendMessageRequest]:
    """Sends of message id ``mid`` that differ from ``request(mid, "pizza")``: each is
    another message (``other_task``: a task the message could continue)."""
    text = request(mid, "other text")
    context = request(mid, "pizza")
    context.message.context_id = "another-context"
    task = request(mid, "pizza", task_id=other_task)
    meta = request(mid, "pizza")
    meta.message.metadata = {"n": 1}
    req_meta = request(mid, "pizza")
    req_meta.metadata = {"n": 1}
    modes = request(mid, "pizza")
    modes.configuration = SendMessageConfiguration(accepted_output_modes=["text/plain"])
    return [text, context, task, meta, req_meta, modes]


async def test_a_message_id_reused_for_another_message_is_refused_before_anything_runs() -> None:
    store = MemoryStore()
    engine = TaskEngine("a", PizzaExecutor(), store)
    mid = str(uuid.uuid4())
    first = await engine.send(request(mid, "pizza"), caller=ALICE)
    waiting = await engine.send(request(str(uuid.uuid4()), "pizza"), caller=ALICE)
    assert isinstance(first, Task) and isinstance(waiting, Task)
    assert waiting.status.state is TaskState.INPUT_REQUIRED
    before = (await store.list_tasks("a", _everything())).tasks
    for other in variants(mid, waiting.id):
        with pytest.raises(IdempotencyKeyReusedError, match=f"Message id {mid} was already used"):
            await engine.send(other, caller=ALICE)
        with pytest.raises(IdempotencyKeyReusedError) as caught:
            await drain(engine, other, ALICE)
        assert caught.value.code == -32602 and caught.value.http_status == 422
        assert caught.value.data == {"reason": "IDEMPOTENCY_KEY_REUSED", "messageId": mid}
    assert (await store.list_tasks("a", _everything())).tasks == before
    # what only shapes the answer is not part of the message
    again = request(mid, "pizza", immediate=True)
    assert again.configuration is not None
    again.configuration.history_length = 0
    answer = await engine.send(again, caller=ALICE)
    assert isinstance(answer, Task) and answer.id == first.id
    assert (await store.list_tasks("a", _everything())).tasks == before


async def test_a_different_message_under_a_key_in_use_is_refused_while_its_run_works() -> None:
    agent = SlowExecutor()
    engine = TaskEngine("a", agent, MemoryStore())
    mid = str(uuid.uuid4())
    # a 0.1 client chooses the task id: the repeat finds the run this process serves
    stream = await engine.send_stream(request(mid), new_task_id="t-1", caller=ALICE)
    await agent.started.wait()
    with pytest.raises(IdempotencyKeyReusedError):
        await engine.send(request(mid, "other"), new_task_id="t-1", caller=ALICE)
    # and a new task's run, found through the store's claim
    key = str(uuid.uuid4())
    other = await engine.send(request(mid, immediate=True), caller=ALICE, idempotency_key=key)
    assert isinstance(other, Task) and other.id != "t-1"
    with pytest.raises(IdempotencyKeyReusedError, match=f"Idempotency-Key {key} was"):
        await engine.send(request(mid, "other"), caller=ALICE, idempotency_key=key)
    same = await engine.send(request(mid, immediate=True), caller=ALICE, idempotency_key=key)
    assert isinstance(same, Task) and same.id == other.id
    stream.close()
    await engine.close()


async def test_an_idempotency_key_sent_50_times_at_once_runs_once() -> None:
    agent = Counted(delay=0.2)
    engine = TaskEngine("a", agent, MemoryStore())
    key, mid = str(uuid.uuid4()), str(uuid.uuid4())
    results = await asyncio.gather(
        *(engine.send(request(mid), caller=ALICE, idempotency_key=key) for _ in range(50))
    )
    assert agent.runs == 1
    assert len({r.id for r in results if isinstance(r, Task)}) == 1 and len(results) == 50
    # another message id under the same key is another message: refused
    with pytest.raises(IdempotencyKeyReusedError) as caught:
        await engine.send(request(str(uuid.uuid4())), caller=ALICE, idempotency_key=key)
    assert caught.value.data is not None and caught.value.data["idempotencyKey"] == key
    # the key replaces the message id: the same message id under another key, or none, runs
    await engine.send(request(mid), caller=ALICE, idempotency_key=str(uuid.uuid4()))
    await engine.send(request(mid), caller=ALICE)
    assert agent.runs == 3
    # another caller's key is its own
    await engine.send(request(mid), caller=BOB, idempotency_key=key)
    assert agent.runs == 4


async def test_a_direct_reply_keeps_the_digest_of_its_message() -> None:
    agent = CountedReply(delay=0)
    engine = TaskEngine("a", agent, MemoryStore())
    mid = str(uuid.uuid4())
    reply = await engine.send(request(mid), caller=ALICE)
    assert isinstance(reply, Message)
    with pytest.raises(IdempotencyKeyReusedError):
        await engine.send(request(mid, "other"), caller=ALICE)
    again = await engine.send(request(mid), caller=ALICE)
    assert isinstance(again, Message) and again.message_id == reply.message_id
    assert agent.runs == 1


async def test_a_claim_written_without_a_digest_matches_every_repeat() -> None:
    """Claims of an older version have no digest: a repeat is answered as it was then."""
    store = MemoryStore()
    agent = Counted(delay=0)
    engine = TaskEngine("a", agent, store)
    first = await engine.send(request(str(uuid.uuid4())), caller=ALICE)
    assert isinstance(first, Task)
    old, mid = MessageClaim(task_id=first.id, created=time.time()), str(uuid.uuid4())
    assert await store.claim_message("a", "alice", mid, old) is None
    answer = await engine.send(request(mid, "anything"), caller=ALICE)
    assert isinstance(answer, Task) and answer.id == first.id and agent.runs == 1


@pytest.mark.parametrize("key", ["", " k", "k" * 256, "caf\u00e9", "a\nb"])
async def test_a_bad_idempotency_key_is_invalid_params(key: str) -> None:
    agent = Counted(delay=0)
    engine = TaskEngine("a", agent, MemoryStore())
    with pytest.raises(InvalidParamsError, match="Idempotency-Key"):
        await engine.send(request(str(uuid.uuid4())), caller=ALICE, idempotency_key=key)
    assert agent.runs == 0


def test_the_digest_does_not_depend_on_the_order_of_json_keys() -> None:
    def decoded(body: str) -> SendMessageRequest:
        return fieldnames.decode(body.encode(), SendMessageRequest)

    message = '"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}'
    a = decoded("{" + message + ', "metadata": {"x": 1, "y": {"p": [1, 2], "q": null}}}')
    b = decoded('{"metadata": {"y": {"q": null, "p": [1, 2]}, "x": 1}, ' + message + "}")
    c = decoded("{" + message + ', "metadata": {"x": 1, "y": {"p": [2, 1], "q": null}}}')
    assert send_digest(a) == send_digest(b) != send_digest(c)
    shaped = msgspec.structs.replace(
        a, configuration=SendMessageConfiguration(return_immediately=True, history_length=2)
    )
    assert send_digest(shaped) == send_digest(a)


def _everything() -> object:
    from a2a_hub.stores.base import TaskQuery

    return TaskQuery(page_size=100)
