"""The task engine without HTTP: flows, state machine, history, cancel, list."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sample_agents import CrashExecutor, LazyExecutor, PizzaExecutor, RuleBreaker, SlowExecutor

from a2a_hub.agents.echo import EchoExecutor
from a2a_hub.engine import TaskEngine
from a2a_hub.protocol.errors import (
    InvalidParamsError,
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
from a2a_hub.stores.memory import MemoryStore


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
    SlowExecutor.started = asyncio.Event()
    SlowExecutor.canceled_calls = 0
    eng = engine(SlowExecutor())
    pending = asyncio.ensure_future(eng.send(req("work")))
    await asyncio.wait_for(SlowExecutor.started.wait(), 5)
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
    assert SlowExecutor.canceled_calls == 1
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
