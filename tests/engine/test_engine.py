"""The task engine without HTTP: flows, state machine, history, cancel, list."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Sequence

import msgspec
import pytest

from a2a_hub.agents.echo import EchoExecutor
from a2a_hub.engine import TaskEngine
from a2a_hub.engine.caller import ANONYMOUS, Caller
from a2a_hub.protocol.errors import (
    InvalidParamsError,
    PermissionDeniedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a_hub.protocol.types import (
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a_hub.stores.base import StoredTask, TaskEvent, TaskPage, TaskQuery
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import (
    CrashExecutor,
    LazyExecutor,
    PizzaExecutor,
    RuleBreaker,
    SlowExecutor,
)


def msg(text: str, *, task_id: str | None = None, context_id: str | None = None) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


def req(text: str, **kw: object) -> SendMessageRequest:
    config = kw.pop("configuration", None)
    return SendMessageRequest(message=msg(text, **kw), configuration=config)  # type: ignore[arg-type]


def engine(executor: object, store: MemoryStore | None = None) -> TaskEngine:
    return TaskEngine("a", executor, store or MemoryStore())  # type: ignore[arg-type]


async def test_echo_runs_a_task_to_completion_with_one_artifact() -> None:
    store = MemoryStore()
    eng = engine(EchoExecutor(), store)
    task = await eng.send(req("hi"))
    assert isinstance(task, Task)
    assert task.status.state is TaskState.COMPLETED
    assert task.artifacts is not None and task.artifacts[0].parts[0].text == "echo: hi"
    assert [m.role for m in task.history or []] == [Role.USER]
    stored = await store.get_task("a", task.id)
    assert stored == task
    events = await store.read_events("a", task.id)
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert events[0].event.task is not None
    assert events[-1].event.status_update is not None


async def test_message_reply_creates_no_task() -> None:
    store = MemoryStore()
    eng = engine(EchoExecutor(reply="message"), store)
    answer = await eng.send(req("hi", context_id="ctx-1"))
    assert isinstance(answer, Message)
    assert answer.role is Role.AGENT and answer.parts[0].text == "echo: hi"
    assert answer.context_id == "ctx-1" and answer.task_id is None
    page = await eng.list_tasks(ListTasksRequest())
    assert page.tasks == [] and page.total_size == 0


async def test_non_blocking_send_returns_submitted_then_finishes() -> None:
    eng = engine(EchoExecutor(reply="message"))
    task = await eng.send(
        req("hi", configuration=SendMessageConfiguration(return_immediately=True))
    )
    assert isinstance(task, Task) and task.status.state is TaskState.SUBMITTED
    for _ in range(100):
        got = await eng.get_task(task.id)
        if got.status.state.terminal:
            break
        await asyncio.sleep(0.01)
    # bound to a task, the message reply completes it
    assert got.status.state is TaskState.COMPLETED
    assert got.status.message is not None and got.status.message.parts[0].text == "echo: hi"


async def test_multi_turn_history_is_kept_exactly() -> None:
    eng = engine(PizzaExecutor())
    first = await eng.send(req("I want pizza"))
    assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
    second = await eng.send(req("pineapple", task_id=first.id, context_id=first.context_id))
    assert isinstance(second, Task) and second.status.state is TaskState.COMPLETED
    texts = [m.parts[0].text for m in second.history or []]
    assert texts == [
        "I want pizza",
        "What kind of pizza?",
        "pineapple",
        "Ordered pineapple after 3 messages: I want pizza | What kind of pizza? | pineapple",
    ]
    ids = [m.message_id for m in second.history or []]
    assert len(ids) == len(set(ids))
    # historyLength trims the answer, never what is stored
    short = await eng.get_task(first.id, history_length=1)
    assert [m.parts[0].text for m in short.history or []] == [texts[-1]]
    none = await eng.get_task(first.id, history_length=0)
    assert none.history is None
    full = await eng.get_task(first.id)
    assert len(full.history or []) == 4


async def test_continuing_without_context_infers_it_and_mismatch_is_refused() -> None:
    eng = engine(PizzaExecutor())
    first = await eng.send(req("pizza"))
    assert isinstance(first, Task)
    with pytest.raises(InvalidParamsError, match="does not match"):
        await eng.send(req("x", task_id=first.id, context_id="other"))
    done = await eng.send(req("margherita", task_id=first.id))
    assert isinstance(done, Task) and done.context_id == first.context_id


async def test_terminal_task_refuses_messages_and_cancel() -> None:
    eng = engine(EchoExecutor())
    task = await eng.send(req("hi"))
    assert isinstance(task, Task)
    with pytest.raises(UnsupportedOperationError, match="completed"):
        await eng.send(req("again", task_id=task.id))
    with pytest.raises(TaskNotCancelableError):
        await eng.cancel_task(task.id)
    assert (await eng.get_task(task.id)).history == task.history


async def test_unknown_task() -> None:
    eng = engine(EchoExecutor())
    with pytest.raises(TaskNotFoundError):
        await eng.get_task("nope")
    with pytest.raises(TaskNotFoundError):
        await eng.cancel_task("nope")
    with pytest.raises(TaskNotFoundError):
        await eng.send(req("hi", task_id="nope"))


async def test_cancel_reaches_the_running_executor() -> None:
    slow = SlowExecutor()
    eng = engine(slow)
    pending = asyncio.ensure_future(eng.send(req("work")))
    await asyncio.wait_for(slow.started.wait(), 5)
    # a running task reaches the store within flush_delay (50 ms by default)
    for _ in range(100):
        listed = await eng.list_tasks(ListTasksRequest())
        if listed.tasks:
            break
        await asyncio.sleep(0.01)
    task_id = listed.tasks[0].id
    assert listed.tasks[0].status.state is TaskState.WORKING
    canceled = await eng.cancel_task(task_id)
    assert canceled.status.state is TaskState.CANCELED
    assert slow.canceled_calls == 1
    answered = await asyncio.wait_for(pending, 5)
    assert isinstance(answered, Task) and answered.status.state is TaskState.CANCELED
    assert (await eng.get_task(task_id)).status.state is TaskState.CANCELED


async def test_cancel_of_an_interrupted_task() -> None:
    eng = engine(PizzaExecutor())
    task = await eng.send(req("pizza"))
    assert isinstance(task, Task)
    canceled = await eng.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    assert (await eng.get_task(task.id)).status.state is TaskState.CANCELED


@pytest.mark.parametrize(
    ("executor", "reason"),
    [
        (CrashExecutor(), "the model exploded"),
        (LazyExecutor(), "returned without answering"),
        (RuleBreaker(), "terminal task cannot become working"),
    ],
)
async def test_agent_faults_fail_the_task_with_a_reason(executor: object, reason: str) -> None:
    eng = engine(executor)
    task = await eng.send(req("hi"))
    assert isinstance(task, Task)
    if isinstance(executor, RuleBreaker):
        # the client got the completed task; the broken call afterwards is logged, not stored
        assert task.status.state is TaskState.COMPLETED
        return
    assert task.status.state is TaskState.FAILED
    assert task.status.message is not None
    assert reason in (task.status.message.parts[0].text or "")


async def test_bad_messages_are_refused_before_anything_is_stored() -> None:
    store = MemoryStore()
    eng = engine(EchoExecutor(), store)
    bad = [
        Message(message_id="m", role=Role.USER, parts=[]),
        Message(message_id="m", role=Role.AGENT, parts=[Part(text="x")]),
        Message(message_id="", role=Role.USER, parts=[Part(text="x")]),
        Message(message_id="m", role=Role.USER, parts=[Part(text="x", url="http://x")]),
    ]
    for m in bad:
        with pytest.raises(InvalidParamsError):
            await eng.send(SendMessageRequest(message=m))
    assert (await eng.list_tasks(ListTasksRequest())).total_size == 0


async def test_list_filters_and_pages_newest_first() -> None:
    eng = engine(PizzaExecutor())
    ids = []
    for i in range(7):
        t = await eng.send(req(f"p{i}", context_id="ctx-a" if i % 2 else "ctx-b"))
        assert isinstance(t, Task)
        ids.append(t.id)
        await asyncio.sleep(0.002)
    done = await eng.send(req("x", task_id=ids[0]))
    assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
    seen: list[str] = []
    token = None
    while True:
        page = await eng.list_tasks(ListTasksRequest(page_size=3, page_token=token))
        assert page.total_size == 7 and page.page_size == 3
        seen += [t.id for t in page.tasks]
        token = page.next_page_token
        if not token:
            break
    assert seen == [ids[0], *reversed(ids[1:])]  # the just-updated task first
    only_a = await eng.list_tasks(ListTasksRequest(context_id="ctx-a"))
    assert {t.id for t in only_a.tasks} == {ids[i] for i in (1, 3, 5)}
    completed = await eng.list_tasks(ListTasksRequest(status=TaskState.COMPLETED))
    assert [t.id for t in completed.tasks] == [ids[0]]
    assert all(t.artifacts is None for t in completed.tasks)
    with_art = await eng.list_tasks(
        ListTasksRequest(status=TaskState.COMPLETED, include_artifacts=True)
    )
    assert with_art.tasks[0].artifacts
    for size in (0, 101):
        with pytest.raises(InvalidParamsError, match="pageSize"):
            await eng.list_tasks(ListTasksRequest(page_size=size))


class OwnerStore(MemoryStore):
    """A memory store that keeps each task's owner (recorded at creation) and lists by it,
    and remembers the owner passed with every save."""

    def __init__(self) -> None:
        super().__init__()
        self.owners: dict[str, str | None] = {}
        self.saved_with: dict[str, list[str | None]] = {}

    async def save_task(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent] = (),
        *,
        owner: str | None = None,
    ) -> None:
        await super().save_task(agent_id, task, events, owner=owner)
        self.owners.setdefault(task.id, owner)
        self.saved_with.setdefault(task.id, []).append(owner)

    async def get_task_record(self, agent_id: str, task_id: str) -> StoredTask | None:
        record = await super().get_task_record(agent_id, task_id)
        return None if record is None else record._replace(owner=self.owners.get(task_id))

    async def list_tasks(self, agent_id: str, query: TaskQuery) -> TaskPage:
        if query.owner is None:
            return await super().list_tasks(agent_id, query)
        every = msgspec.structs.replace(query, owner=None, page_size=10_000, page_token=None)
        page = await super().list_tasks(agent_id, every)
        tasks = [t for t in page.tasks if self.owners.get(t.id) == query.owner]
        return TaskPage(tasks=tasks[: query.page_size], next_page_token="", total_size=len(tasks))


ALICE = Caller(principal="alice", key_id="k1", scopes=frozenset({"invoke"}))
BOB = Caller(principal="bob", key_id="k2", scopes=frozenset({"invoke"}))
AUDITOR = Caller(principal="carol", key_id="k3", scopes=frozenset({"read-all"}))


async def refusal(call: Awaitable[object], task_id: str) -> tuple[type, str, object]:
    """The error a call ends with, the task id blanked out (to compare two refusals)."""
    with pytest.raises(Exception) as caught:
        await call
    error = caught.value
    data = getattr(error, "data", None)
    return type(error), str(error).replace(task_id, "ID"), repr(data).replace(task_id, "ID")


async def test_a_caller_sees_only_its_own_tasks_as_if_the_others_did_not_exist() -> None:
    store = OwnerStore()
    eng = engine(PizzaExecutor(), store)
    task = await eng.send(req("pizza"), caller=ALICE)
    assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
    assert store.owners[task.id] == "alice"
    ghost = "no-such-task"
    # every way bob could reach alice's task answers exactly as for an unknown id
    for probe in (
        lambda c, t: eng.get_task(t, caller=c),
        lambda c, t: eng.cancel_task(t, caller=c),
        lambda c, t: eng.subscribe(t, caller=c),
        lambda c, t: eng.subscribe(t, after=0, caller=c),
        lambda c, t: eng.send(req("pepperoni", task_id=t), caller=c),
    ):
        hidden = await refusal(probe(BOB, task.id), task.id)
        unknown = await refusal(probe(BOB, ghost), ghost)
        assert hidden == unknown and hidden[0] is TaskNotFoundError
    assert (await eng.list_tasks(ListTasksRequest(), caller=BOB)).tasks == []
    # its owner, an auditor (read-all) and an open hub (anonymous) see it
    for caller in (ALICE, AUDITOR, ANONYMOUS):
        assert (await eng.get_task(task.id, caller=caller)).id == task.id
        listed = await eng.list_tasks(ListTasksRequest(), caller=caller)
        assert [t.id for t in listed.tasks] == [task.id]
    # the auditor only reads: sending, continuing and canceling need the invoke scope
    for probe in (
        eng.send(req("mine"), caller=AUDITOR),
        eng.send_stream(req("mine"), caller=AUDITOR),
        eng.send(req("pepperoni", task_id=task.id), caller=AUDITOR),
        eng.cancel_task(task.id, caller=AUDITOR),
    ):
        with pytest.raises(PermissionDeniedError):
            await probe
    assert (await eng.get_task(task.id, caller=ALICE)).status.state is TaskState.INPUT_REQUIRED
    # nothing bob did changed it; alice continues it, and it stays hers
    assert (await eng.get_task(task.id)).status.state is TaskState.INPUT_REQUIRED
    done = await eng.send(req("margherita", task_id=task.id), caller=ALICE)
    assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
    assert set(store.saved_with[task.id]) == {"alice"}
    # a finished task is as unknown to bob as ever (not "completed")
    with pytest.raises(TaskNotFoundError):
        await eng.send(req("x", task_id=task.id), caller=BOB)


async def test_a_running_task_is_hidden_too_and_keeps_its_owner() -> None:
    slow = SlowExecutor()
    store = OwnerStore()
    eng = engine(slow, store)
    feed = eng.feed()
    pending = asyncio.ensure_future(eng.send(req("work"), caller=ALICE))
    await asyncio.wait_for(slow.started.wait(), 5)
    task_id = (await feed.next()).task_id  # type: ignore[union-attr]
    feed.close()
    assert eng.live(task_id) is not None
    for probe in (
        eng.get_task(task_id, caller=BOB),
        eng.cancel_task(task_id, caller=BOB),
        eng.subscribe(task_id, caller=BOB),
        eng.send(req("more", task_id=task_id), caller=BOB),
    ):
        with pytest.raises(TaskNotFoundError):
            await probe
    assert slow.canceled_calls == 0 and not pending.done()
    with pytest.raises(UnsupportedOperationError, match="still working"):
        await eng.send(req("more", task_id=task_id), caller=ALICE)
    canceled = await eng.cancel_task(task_id, caller=ALICE)
    assert canceled.status.state is TaskState.CANCELED
    await asyncio.wait_for(pending, 5)
    assert set(store.saved_with[task_id]) == {"alice"}


async def test_a_client_chosen_id_of_someone_elses_task_is_not_taken_over() -> None:
    store = OwnerStore()
    eng = engine(PizzaExecutor(), store)
    await eng.send(req("pizza"), new_task_id="mine", caller=ALICE)
    with pytest.raises(TaskNotFoundError):
        await eng.send(req("pepperoni"), new_task_id="mine", caller=BOB)
    assert store.owners["mine"] == "alice"
    assert (await eng.get_task("mine", caller=ALICE)).status.state is TaskState.INPUT_REQUIRED
