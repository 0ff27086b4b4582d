"""The store contract: the same test bodies against every backend (see ``conftest.py``).

The tests speak only through the :class:`~a2a_hub.stores.Store` interface, so
they describe behaviour that the engine may rely on, whatever the backend.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from a2a_hub.protocol.errors import InvalidParamsError, StoreUnavailableError, TaskNotFoundError
from a2a_hub.protocol.types import (
    Artifact,
    AuthenticationInfo,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a_hub.stores import (
    LogConflictError,
    MemoryStore,
    Store,
    StoredTask,
    TaskEvent,
    TaskQuery,
    open_store,
)
from a2a_hub.stores.base import Delivery, MessageClaim
from tests.support.stores import Backend, StoreHarness

# --- builders --------------------------------------------------------------------------


def make_task(
    task_id: str = "task-1",
    context_id: str = "ctx-1",
    state: TaskState = TaskState.SUBMITTED,
    text: str = "hello",
) -> Task:
    message = Message(
        message_id=f"m-{task_id}",
        role=Role.USER,
        parts=[Part(text=text)],
        context_id=context_id,
        task_id=task_id,
    )
    return Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=state, timestamp="2025-01-01T00:00:00Z"),
        history=[message],
    )


def rich_task() -> Task:
    task = make_task("rich", state=TaskState.COMPLETED, text="héllo wörld ✓")
    task.artifacts = [
        Artifact(
            artifact_id="a1",
            name="result",
            parts=[
                Part(text="answer"),
                Part(raw=b"\x00\x01binary\xff", media_type="application/octet-stream"),
                Part(data={"nested": [1, 2.5, None, {"k": "v"}]}),
                Part(url="https://example.com/f.txt", filename="f.txt"),
            ],
            metadata={"score": 0.9},
        )
    ]
    task.metadata = {"owner": "tester", "tags": ["a", "b"]}
    task.status.message = Message(
        message_id="reply", role=Role.AGENT, parts=[Part(text="done")], context_id="ctx-1"
    )
    return task


def snapshot_event(seq: int, task: Task) -> TaskEvent:
    return TaskEvent(seq=seq, event=StreamResponse(task=task))


def status_event(seq: int, task: Task, state: TaskState) -> TaskEvent:
    update = TaskStatusUpdateEvent(
        task_id=task.id, context_id=task.context_id, status=TaskStatus(state=state)
    )
    return TaskEvent(seq=seq, event=StreamResponse(status_update=update))


def with_state(task: Task, state: TaskState) -> Task:
    return msgspec.structs.replace(task, status=TaskStatus(state=state))


def push_config(
    config_id: str | None, url: str = "https://hooks.example.com/a2a"
) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(
        url=url,
        id=config_id,
        token=f"token-{config_id}",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="secret"),
    )


async def tick() -> None:
    """Let the clock move, so that the next save is strictly newer."""
    await asyncio.sleep(0.002)


async def save_all(store: Store, agent_id: str, tasks: list[Task]) -> None:
    for task in tasks:
        await store.save_task(agent_id, task)
        await tick()


# --- not found -------------------------------------------------------------------------


async def test_missing_things_are_none_or_empty(store: Store, agent_id: str) -> None:
    assert await store.get_task(agent_id, "nope") is None
    assert await store.read_events(agent_id, "nope") == []
    assert await store.last_seq(agent_id, "nope") == 0
    assert await store.get_push_config(agent_id, "nope", "cfg") is None
    assert await store.list_push_configs(agent_id, "nope") == []
    assert await store.delete_push_config(agent_id, "nope", "cfg") is False
    assert await store.delete_task(agent_id, "nope") is False
    page = await store.list_tasks(agent_id, TaskQuery())
    assert page.tasks == []
    assert page.next_page_token == ""
    assert page.total_size == 0


# --- snapshots -------------------------------------------------------------------------


async def test_save_then_get_round_trips(store: Store, agent_id: str) -> None:
    task = rich_task()
    await store.save_task(agent_id, task)
    assert await store.get_task(agent_id, task.id) == task


async def test_save_replaces_the_snapshot(store: Store, agent_id: str) -> None:
    task = make_task()
    await store.save_task(agent_id, task)
    newer = with_state(make_task(text="more"), TaskState.WORKING)
    newer.artifacts = [Artifact(artifact_id="a", parts=[Part(text="out")])]
    await store.save_task(agent_id, newer)
    assert await store.get_task(agent_id, task.id) == newer


async def test_values_are_copies(store: Store, agent_id: str) -> None:
    task = make_task()
    event = snapshot_event(1, make_task())
    config = push_config("c1")
    await store.save_task(agent_id, task, [event])
    await store.set_push_config(agent_id, task.id, config)

    # Mutating what was saved does not change what is stored ...
    task.status.state = TaskState.FAILED
    assert task.history is not None
    task.history.append(task.history[0])
    event.event.task.status.state = TaskState.FAILED  # type: ignore[union-attr]
    config.url = "https://changed.example.com"

    expected = make_task()
    got = await store.get_task(agent_id, task.id)
    assert got == expected
    # ... and neither does mutating what was read.
    assert got is not None
    got.status.state = TaskState.CANCELED
    got.history = None
    assert await store.get_task(agent_id, task.id) == expected

    events = await store.read_events(agent_id, task.id)
    assert events == [snapshot_event(1, expected)]
    events[0].event.task.status.state = TaskState.CANCELED  # type: ignore[union-attr]
    assert await store.read_events(agent_id, task.id) == [snapshot_event(1, expected)]

    listed = (await store.list_tasks(agent_id, TaskQuery())).tasks
    listed[0].status.state = TaskState.CANCELED
    assert (await store.list_tasks(agent_id, TaskQuery())).tasks == [expected]

    stored_config = await store.get_push_config(agent_id, task.id, "c1")
    assert stored_config == push_config("c1")
    assert stored_config is not None
    stored_config.url = "https://changed.example.com"
    assert await store.list_push_configs(agent_id, task.id) == [push_config("c1")]


async def test_tasks_are_namespaced_by_agent(harness: StoreHarness, store: Store) -> None:
    alice, bob = harness.new_agent_id(), harness.new_agent_id()
    task = make_task()
    await store.save_task(alice, task, [snapshot_event(1, task)])
    await store.set_push_config(alice, task.id, push_config("c1"))

    assert await store.get_task(bob, task.id) is None
    assert await store.read_events(bob, task.id) == []
    assert await store.last_seq(bob, task.id) == 0
    assert (await store.list_tasks(bob, TaskQuery())).total_size == 0
    assert await store.get_push_config(bob, task.id, "c1") is None
    assert await store.list_push_configs(bob, task.id) == []
    with pytest.raises(TaskNotFoundError):
        await store.set_push_config(bob, task.id, push_config("c2"))
    assert await store.delete_push_config(bob, task.id, "c1") is False
    assert await store.delete_task(bob, task.id) is False

    # The same task id under another agent is another task.
    other = make_task(task.id, context_id="ctx-bob", state=TaskState.WORKING)
    await store.save_task(bob, other, [snapshot_event(1, other), snapshot_event(2, other)])
    assert await store.get_task(alice, task.id) == task
    assert await store.get_task(bob, task.id) == other
    assert await store.last_seq(alice, task.id) == 1
    assert await store.last_seq(bob, task.id) == 2
    assert await store.delete_task(bob, task.id) is True
    assert await store.get_task(alice, task.id) == task
    assert await store.list_push_configs(alice, task.id) == [push_config("c1")]


# --- event log -------------------------------------------------------------------------


async def test_events_append_and_read_after_seq(store: Store, agent_id: str) -> None:
    task = make_task()
    working = with_state(task, TaskState.WORKING)
    artifact = TaskArtifactUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        artifact=Artifact(artifact_id="a", parts=[Part(text="chunk")]),
        append=True,
        last_chunk=False,
    )
    first = [snapshot_event(1, task), status_event(2, task, TaskState.WORKING)]
    second = [
        TaskEvent(seq=3, event=StreamResponse(artifact_update=artifact)),
        TaskEvent(seq=4, event=StreamResponse(message=make_task(text="again").history[0])),  # type: ignore[index]
        status_event(5, task, TaskState.COMPLETED),
    ]
    await store.save_task(agent_id, task, first)
    assert await store.read_events(agent_id, task.id) == first
    await store.save_task(agent_id, working, second)
    await store.save_task(agent_id, working)  # no events: the log is untouched

    everything = first + second
    assert await store.read_events(agent_id, task.id) == everything
    assert await store.read_events(agent_id, task.id, after=2) == everything[2:]
    assert await store.read_events(agent_id, task.id, after=2, limit=2) == everything[2:4]
    assert await store.read_events(agent_id, task.id, limit=1) == everything[:1]
    assert await store.read_events(agent_id, task.id, after=4, limit=10) == everything[4:]
    assert await store.read_events(agent_id, task.id, after=5) == []
    assert await store.read_events(agent_id, task.id, after=99) == []


async def test_last_seq_follows_the_log(store: Store, agent_id: str) -> None:
    task = make_task()
    await store.save_task(agent_id, task)
    assert await store.last_seq(agent_id, task.id) == 0
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    assert await store.last_seq(agent_id, task.id) == 1
    events = [status_event(seq, task, TaskState.WORKING) for seq in range(2, 12)]
    await store.save_task(agent_id, task, events)
    assert await store.last_seq(agent_id, task.id) == 11


async def test_events_must_continue_the_log(backend: Backend, store: Store, agent_id: str) -> None:
    task = make_task()
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    await store.save_task(agent_id, task, [status_event(2, task, TaskState.WORKING)])
    failed = with_state(task, TaskState.FAILED)
    bad_batches = [
        [status_event(2, task, TaskState.FAILED)],  # duplicate
        [status_event(4, task, TaskState.FAILED)],  # gap
        [status_event(1, task, TaskState.FAILED)],  # going back
        # a gap among the events themselves
        [status_event(3, task, TaskState.WORKING), status_event(5, task, TaskState.FAILED)],
        [status_event(0, task, TaskState.FAILED)],  # not a sequence number
    ]
    for bad in bad_batches:
        if backend.enforces_seq:
            with pytest.raises(LogConflictError):
                await store.save_task(agent_id, failed, bad)
            # Atomic: a rejected save changes neither the log nor the snapshot.
            assert await store.get_task(agent_id, task.id) == task
            assert await store.last_seq(agent_id, task.id) == 2
        else:
            with contextlib.suppress(ValueError):
                await store.save_task(agent_id, failed, bad)
    seqs = [ev.seq for ev in await store.read_events(agent_id, task.id)]
    assert seqs[:2] == [1, 2]
    assert seqs == sorted(seqs)


async def test_a_new_task_log_starts_at_one(backend: Backend, store: Store, agent_id: str) -> None:
    if not backend.enforces_seq:
        pytest.skip(f"{backend.name} does not check sequence numbers")
    task = make_task()
    with pytest.raises(LogConflictError):
        await store.save_task(agent_id, task, [snapshot_event(3, task)])
    assert await store.get_task(agent_id, task.id) is None
    assert await store.read_events(agent_id, task.id) == []


async def test_concurrent_writers_of_one_seq_conflict_alone(
    backend: Backend, harness: StoreHarness, store: Store, agent_id: str
) -> None:
    """Saves racing for the same seq: one wins, every other fails with LogConflictError
    and changes nothing, and saves of other tasks made at the same moment all succeed
    (a backend that writes concurrent saves together must keep each save's outcome)."""
    # Two store objects stand for two instances when the backend shares data between them.
    stores = [store, await harness.open()] if backend.durable else [store]
    task = make_task(state=TaskState.WORKING)
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    racers = [with_state(make_task(text=f"racer {i}"), TaskState.COMPLETED) for i in range(6)]
    others = [make_task(f"other-{i}") for i in range(6)]
    attempts = []
    for i, racer in enumerate(racers):
        writer = stores[i % len(stores)]
        attempts.append(
            writer.save_task(agent_id, racer, [status_event(2, racer, TaskState.COMPLETED)])
        )
        other = others[i]
        attempts.append(writer.save_task(agent_id, other, [snapshot_event(1, other)]))
    results = await asyncio.gather(*attempts, return_exceptions=True)
    raced, unrelated = results[0::2], results[1::2]
    assert unrelated == [None] * len(others)
    assert sum(r is None for r in raced) == 1
    assert all(isinstance(r, LogConflictError) for r in raced if r is not None), raced
    winner = racers[raced.index(None)]
    assert await store.get_task_at(agent_id, task.id) == (winner, 2)
    assert [e.seq for e in await store.read_events(agent_id, task.id)] == [1, 2]
    for other in others:
        assert await store.get_task_at(agent_id, other.id) == (other, 1)


async def test_snapshot_and_events_appear_together(store: Store, agent_id: str) -> None:
    """A reader never sees a snapshot ahead of the log it is the fold of."""
    task = make_task()
    rounds = 30

    async def writer() -> None:
        for seq in range(1, rounds + 1):
            snapshot = msgspec.structs.replace(task, metadata={"seq": seq})
            await store.save_task(agent_id, snapshot, [status_event(seq, task, TaskState.WORKING)])

    async def reader() -> list[tuple[int, int]]:
        seen: list[tuple[int, int]] = []
        while not seen or seen[-1][0] < rounds:
            snapshot = await store.get_task(agent_id, task.id)
            if snapshot is not None:
                assert snapshot.metadata is not None
                seen.append((snapshot.metadata["seq"], await store.last_seq(agent_id, task.id)))
            await asyncio.sleep(0)
        return seen

    _, seen = await asyncio.wait_for(asyncio.gather(writer(), reader()), timeout=30)
    for snapshot_seq, log_seq in seen:
        assert log_seq >= snapshot_seq
    assert await store.last_seq(agent_id, task.id) == rounds


# --- listing ---------------------------------------------------------------------------


async def test_list_is_newest_first(store: Store, agent_id: str) -> None:
    tasks = [make_task(f"t{i}") for i in range(3)]
    await save_all(store, agent_id, tasks)
    page = await store.list_tasks(agent_id, TaskQuery())
    assert [t.id for t in page.tasks] == ["t2", "t1", "t0"]
    assert page.tasks[0] == tasks[2]
    assert page.next_page_token == ""
    assert page.total_size == 3

    await store.save_task(agent_id, with_state(tasks[0], TaskState.WORKING))
    page = await store.list_tasks(agent_id, TaskQuery())
    assert [t.id for t in page.tasks] == ["t0", "t2", "t1"]
    assert page.tasks[0].status.state is TaskState.WORKING


async def test_list_filters_by_context_and_state(store: Store, agent_id: str) -> None:
    await save_all(
        store,
        agent_id,
        [
            make_task("a1", "ctx-a", TaskState.WORKING),
            make_task("b1", "ctx-b", TaskState.WORKING),
            make_task("a2", "ctx-a", TaskState.COMPLETED),
            make_task("a3", "ctx-a", TaskState.WORKING),
            make_task("b2", "ctx-b", TaskState.INPUT_REQUIRED),
        ],
    )

    async def ids(query: TaskQuery) -> tuple[list[str], int]:
        page = await store.list_tasks(agent_id, query)
        return [t.id for t in page.tasks], page.total_size

    assert await ids(TaskQuery(context_id="ctx-a")) == (["a3", "a2", "a1"], 3)
    assert await ids(TaskQuery(state=TaskState.WORKING)) == (["a3", "b1", "a1"], 3)
    assert await ids(TaskQuery(context_id="ctx-a", state=TaskState.WORKING)) == (["a3", "a1"], 2)
    assert await ids(TaskQuery(context_id="ctx-b", state=TaskState.COMPLETED)) == ([], 0)
    assert await ids(TaskQuery(context_id="nowhere")) == ([], 0)


async def test_list_filters_by_updated_after(store: Store, agent_id: str) -> None:
    await save_all(store, agent_id, [make_task("old1"), make_task("old2")])
    await asyncio.sleep(0.02)
    cutoff = time.time()
    await asyncio.sleep(0.02)
    await save_all(store, agent_id, [make_task("new1"), make_task("new2")])
    page = await store.list_tasks(agent_id, TaskQuery(updated_after=cutoff))
    assert [t.id for t in page.tasks] == ["new2", "new1"]
    assert page.total_size == 2
    later = await store.list_tasks(agent_id, TaskQuery(updated_after=time.time() + 60))
    assert (later.tasks, later.total_size) == ([], 0)


@pytest.mark.parametrize(("count", "page_size"), [(7, 3), (6, 3), (5, 1), (5, 5), (5, 50)])
async def test_paging_yields_every_task_once_in_order(
    store: Store, agent_id: str, count: int, page_size: int
) -> None:
    tasks = [make_task(f"t{i:02d}") for i in range(count)]
    await save_all(store, agent_id, tasks)
    expected = [t.id for t in reversed(tasks)]

    collected: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page = await store.list_tasks(agent_id, TaskQuery(page_size=page_size, page_token=token))
        pages += 1
        assert page.total_size == count
        assert len(page.tasks) <= page_size
        collected += [t.id for t in page.tasks]
        if not page.next_page_token:
            break
        assert len(page.tasks) == page_size
        token = page.next_page_token
        assert pages <= count, "paging does not end"
    assert collected == expected
    assert page.next_page_token == ""
    assert pages == -(-count // page_size)


async def test_paging_with_a_filter(store: Store, agent_id: str) -> None:
    tasks = [make_task(f"t{i}", context_id=f"ctx-{i % 2}") for i in range(9)]
    await save_all(store, agent_id, tasks)
    query = TaskQuery(context_id="ctx-0", page_size=2)
    collected: list[str] = []
    while True:
        page = await store.list_tasks(agent_id, query)
        assert page.total_size == 5
        collected += [t.id for t in page.tasks]
        if not page.next_page_token:
            break
        query = TaskQuery(context_id="ctx-0", page_size=2, page_token=page.next_page_token)
    assert collected == ["t8", "t6", "t4", "t2", "t0"]


async def test_paging_survives_updates_of_listed_tasks(store: Store, agent_id: str) -> None:
    """A task updated after its page was read moves to the front, not onto later pages."""
    tasks = [make_task(f"t{i}") for i in range(6)]
    await save_all(store, agent_id, tasks)
    first = await store.list_tasks(agent_id, TaskQuery(page_size=3))
    assert [t.id for t in first.tasks] == ["t5", "t4", "t3"]
    await store.save_task(agent_id, with_state(tasks[4], TaskState.WORKING))
    rest = await store.list_tasks(
        agent_id, TaskQuery(page_size=3, page_token=first.next_page_token)
    )
    assert [t.id for t in rest.tasks] == ["t2", "t1", "t0"]
    assert rest.next_page_token == ""


@pytest.mark.parametrize(
    "token",
    [
        "not a token",
        "%%%",
        base64.urlsafe_b64encode(b"garbage").decode(),
        base64.urlsafe_b64encode(b'{"updated": 1}').decode(),
        base64.urlsafe_b64encode(b'["x", 1]').decode(),
    ],
)
async def test_bad_page_token_is_invalid_params(store: Store, agent_id: str, token: str) -> None:
    await store.save_task(agent_id, make_task())
    with pytest.raises(InvalidParamsError):
        await store.list_tasks(agent_id, TaskQuery(page_token=token))


# --- owner -----------------------------------------------------------------------------


async def test_owner_is_recorded_at_creation_and_never_changes(store: Store, agent_id: str) -> None:
    task = make_task("owned")
    await store.save_task(agent_id, task, [snapshot_event(1, task)], owner="alice")
    assert await store.get_task_record(agent_id, task.id) == StoredTask(task, 1, "alice")
    # Later saves, whoever makes them and whether or not they append events, keep it.
    working = with_state(task, TaskState.WORKING)
    await store.save_task(
        agent_id, working, [status_event(2, task, TaskState.WORKING)], owner="mallory"
    )
    await store.save_task(agent_id, working, owner="mallory")
    await store.save_task(agent_id, working)
    assert await store.get_task_record(agent_id, task.id) == StoredTask(working, 2, "alice")
    assert await store.get_task_at(agent_id, task.id) == (working, 2)

    # Created by a save without events: recorded just the same.
    quiet = make_task("quiet")
    await store.save_task(agent_id, quiet, owner="dave")
    await store.save_task(agent_id, quiet, [snapshot_event(1, quiet)], owner="mallory")
    assert await store.get_task_record(agent_id, quiet.id) == StoredTask(quiet, 1, "dave")

    # Created anonymously: nobody claims it later.
    anonymous = make_task("anonymous")
    await store.save_task(agent_id, anonymous)
    await store.save_task(agent_id, anonymous, [snapshot_event(1, anonymous)], owner="bob")
    assert await store.get_task_record(agent_id, anonymous.id) == StoredTask(anonymous, 1, None)

    # A rejected save does not record an owner either.
    refused = make_task("refused")
    with pytest.raises(LogConflictError):
        await store.save_task(agent_id, refused, [snapshot_event(2, refused)], owner="eve")
    assert await store.get_task_record(agent_id, refused.id) is None

    # The id of a deleted task, used again, is a new task with the new creator.
    assert await store.delete_task(agent_id, task.id) is True
    await store.save_task(agent_id, task, [snapshot_event(1, task)], owner="carol")
    assert await store.get_task_record(agent_id, task.id) == StoredTask(task, 1, "carol")


async def test_list_filters_by_owner(store: Store, agent_id: str) -> None:
    created = [
        ("a1", "ctx-a", TaskState.WORKING, "alice"),
        ("b1", "ctx-a", TaskState.WORKING, "bob"),
        ("a2", "ctx-b", TaskState.COMPLETED, "alice"),
        ("n1", "ctx-a", TaskState.COMPLETED, None),
        ("a3", "ctx-a", TaskState.COMPLETED, "alice"),
    ]
    for task_id, context_id, state, owner in created:
        await store.save_task(agent_id, make_task(task_id, context_id, state), owner=owner)
        await tick()

    async def ids(query: TaskQuery) -> tuple[list[str], int]:
        page = await store.list_tasks(agent_id, query)
        return [t.id for t in page.tasks], page.total_size

    assert await ids(TaskQuery()) == (["a3", "n1", "a2", "b1", "a1"], 5)
    assert await ids(TaskQuery(owner="alice")) == (["a3", "a2", "a1"], 3)
    assert await ids(TaskQuery(owner="bob")) == (["b1"], 1)
    assert await ids(TaskQuery(owner="nobody")) == ([], 0)
    assert await ids(TaskQuery(owner="alice", context_id="ctx-a")) == (["a3", "a1"], 2)
    completed = TaskState.COMPLETED
    assert await ids(TaskQuery(owner="alice", state=completed)) == (["a3", "a2"], 2)
    assert await ids(TaskQuery(owner="alice", context_id="ctx-a", state=completed)) == (
        ["a3"],
        1,
    )
    assert await ids(TaskQuery(owner="bob", state=completed)) == ([], 0)

    # A save by someone else moves the task to the front of its creator's list only.
    await store.save_task(agent_id, make_task("a1", "ctx-a", TaskState.WORKING), owner="bob")
    assert await ids(TaskQuery(owner="alice")) == (["a1", "a3", "a2"], 3)
    assert await ids(TaskQuery(owner="bob")) == (["b1"], 1)

    # Paging through one owner's tasks yields each once, in order.
    collected: list[str] = []
    query = TaskQuery(owner="alice", page_size=1)
    while True:
        page = await store.list_tasks(agent_id, query)
        assert page.total_size == 3
        collected += [t.id for t in page.tasks]
        if not page.next_page_token:
            break
        assert len(collected) < 3, "paging does not end"
        query = TaskQuery(owner="alice", page_size=1, page_token=page.next_page_token)
    assert collected == ["a1", "a3", "a2"]

    # Deleted tasks leave their owner's list.
    assert await store.delete_task(agent_id, "a3") is True
    assert await ids(TaskQuery(owner="alice")) == (["a1", "a2"], 2)


# --- delete ----------------------------------------------------------------------------


async def test_delete_removes_task_events_and_push_configs(store: Store, agent_id: str) -> None:
    task, keep = make_task("gone"), make_task("kept")
    for t in (task, keep):
        await store.save_task(
            agent_id, t, [snapshot_event(1, t), status_event(2, t, TaskState.WORKING)]
        )
        await store.set_push_config(agent_id, t.id, push_config("c1"))

    assert await store.delete_task(agent_id, task.id) is True
    assert await store.get_task(agent_id, task.id) is None
    assert await store.read_events(agent_id, task.id) == []
    assert await store.last_seq(agent_id, task.id) == 0
    assert await store.list_push_configs(agent_id, task.id) == []
    assert await store.get_push_config(agent_id, task.id, "c1") is None
    assert [t.id for t in (await store.list_tasks(agent_id, TaskQuery())).tasks] == ["kept"]
    assert await store.delete_task(agent_id, task.id) is False

    # The id can be used again, with a fresh log and no configs.
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    assert await store.read_events(agent_id, task.id) == [snapshot_event(1, task)]
    assert await store.list_push_configs(agent_id, task.id) == []
    # The other task is untouched.
    assert await store.last_seq(agent_id, keep.id) == 2
    assert await store.list_push_configs(agent_id, keep.id) == [push_config("c1")]


# --- push configs ----------------------------------------------------------------------


async def test_push_config_set_get_list_delete(store: Store, agent_id: str) -> None:
    task = make_task()
    await store.save_task(agent_id, task)
    for config_id in ("c2", "c1", "c3"):
        await store.set_push_config(agent_id, task.id, push_config(config_id))

    assert await store.get_push_config(agent_id, task.id, "c1") == push_config("c1")
    assert await store.get_push_config(agent_id, task.id, "missing") is None
    listed = await store.list_push_configs(agent_id, task.id)
    assert [c.id for c in listed] == ["c2", "c1", "c3"]  # creation order

    replaced = push_config("c1", url="https://other.example.com/hook")
    await store.set_push_config(agent_id, task.id, replaced)
    assert await store.get_push_config(agent_id, task.id, "c1") == replaced
    listed = await store.list_push_configs(agent_id, task.id)
    assert listed == [push_config("c2"), replaced, push_config("c3")]

    assert await store.delete_push_config(agent_id, task.id, "c1") is True
    assert await store.delete_push_config(agent_id, task.id, "c1") is False
    assert await store.get_push_config(agent_id, task.id, "c1") is None
    assert [c.id for c in await store.list_push_configs(agent_id, task.id)] == ["c2", "c3"]


async def test_push_config_without_id_is_keyed_by_task_id(store: Store, agent_id: str) -> None:
    task = make_task()
    await store.save_task(agent_id, task)
    config = push_config(None)
    await store.set_push_config(agent_id, task.id, config)
    assert await store.get_push_config(agent_id, task.id, task.id) == config
    assert await store.list_push_configs(agent_id, task.id) == [config]


async def test_push_config_on_missing_task_is_task_not_found(store: Store, agent_id: str) -> None:
    with pytest.raises(TaskNotFoundError):
        await store.set_push_config(agent_id, "nope", push_config("c1"))
    assert await store.list_push_configs(agent_id, "nope") == []
    # Nor on a task deleted (SQL stores check this themselves: no foreign key since v10).
    task = make_task("gone")
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    assert await store.delete_task(agent_id, task.id)
    with pytest.raises(TaskNotFoundError):
        await store.set_push_config(agent_id, task.id, push_config("c1"))
    assert await store.list_push_configs(agent_id, task.id) == []


async def test_push_configs_saved_with_the_task(store: Store, agent_id: str) -> None:
    """A config given with the message that creates a task is written in the task's
    first save, with the deliveries of that save's events; a save that does not continue
    the log writes no config either; a later save replaces a config by id, keeping its
    place in the list."""
    task = make_task("with-config")
    working = with_state(task, TaskState.WORKING)
    status = status_event(2, task, TaskState.WORKING)
    await store.save_task(
        agent_id,
        working,
        [snapshot_event(1, task), status],
        deliveries=[delivery(agent_id, task.id, "c1", 2)],
        push_configs=[push_config("c1")],
    )
    assert await store.list_push_configs(agent_id, task.id) == [push_config("c1")]
    assert await store.get_push_config(agent_id, task.id, "c1") == push_config("c1")
    claimed = await claim_mine(store, agent_id, time.time())
    assert [(d.config_id, d.seq) for d in claimed] == [("c1", 2)]
    assert await store.delivery_sources(claimed) == [(push_config("c1"), status.event)]

    with pytest.raises(LogConflictError):  # seq 2 again: nothing of this save is written
        await store.save_task(agent_id, working, [status], push_configs=[push_config("c2")])
    assert await store.get_push_config(agent_id, task.id, "c2") is None

    await store.set_push_config(agent_id, task.id, push_config("c3"))
    moved = push_config("c1", url="https://moved.example.com/hook")
    done = with_state(task, TaskState.COMPLETED)
    await store.save_task(
        agent_id, done, [status_event(3, task, TaskState.COMPLETED)], push_configs=[moved]
    )
    assert await store.list_push_configs(agent_id, task.id) == [moved, push_config("c3")]
    await store.save_task(agent_id, done, push_configs=[push_config(None)])  # no events
    assert await store.get_push_config(agent_id, task.id, task.id) == push_config(None)
    assert (await store.get_task(agent_id, task.id)) == done


# --- durability ------------------------------------------------------------------------


async def test_data_survives_close_and_reopen(
    backend: Backend, harness: StoreHarness, store: Store, agent_id: str
) -> None:
    if not backend.durable:
        pytest.skip(f"{backend.name} keeps nothing once closed")
    task = rich_task()
    events = [snapshot_event(1, task), status_event(2, task, TaskState.COMPLETED)]
    await store.save_task(agent_id, task, events, owner="tester")
    await store.set_push_config(agent_id, task.id, push_config("c1"))
    await store.close()

    reopened = await harness.open()
    assert await reopened.get_task(agent_id, task.id) == task
    assert await reopened.get_task_record(agent_id, task.id) == StoredTask(task, 2, "tester")
    assert (await reopened.list_tasks(agent_id, TaskQuery(owner="tester"))).tasks == [task]
    assert await reopened.read_events(agent_id, task.id) == events
    assert await reopened.last_seq(agent_id, task.id) == 2
    assert await reopened.list_push_configs(agent_id, task.id) == [push_config("c1")]
    page = await reopened.list_tasks(agent_id, TaskQuery())
    assert page.tasks == [task]
    # The log continues where it stopped.
    await reopened.save_task(agent_id, task, [status_event(3, task, TaskState.COMPLETED)])
    assert await reopened.last_seq(agent_id, task.id) == 3


# --- choosing a backend by URL (not per backend) ---------------------------------------


def test_open_store_picks_the_backend_by_url(tmp_path: Path) -> None:
    from a2a_hub.stores.sql import SqlStore

    assert isinstance(open_store("memory://"), MemoryStore)
    assert isinstance(open_store(f"sqlite:///{tmp_path}/x.db"), SqlStore)
    pytest.importorskip("asyncpg")
    assert isinstance(open_store("postgresql://u@localhost/db"), SqlStore)
    assert isinstance(open_store("postgres://u@localhost/db"), SqlStore)


def test_open_store_explains_unsupported_urls() -> None:
    with pytest.raises(ValueError, match=r"memory://.*sqlite:///.*postgresql://") as info:
        open_store("mysql://root:hunter2@localhost/db")
    assert "hunter2" not in str(info.value)
    with pytest.raises(ValueError):
        open_store("just-a-path.db")


async def test_in_memory_sqlite_works() -> None:
    agent_id = "agent-memory-sqlite"
    store = open_store("sqlite:///:memory:")
    await store.open()
    try:
        task = make_task()
        await asyncio.gather(
            *(
                store.save_task(agent_id, make_task(f"t{i}"), [snapshot_event(1, task)])
                for i in range(5)
            )
        )
        assert (await store.list_tasks(agent_id, TaskQuery())).total_size == 5
    finally:
        await store.close()


async def test_unreachable_database_is_store_unavailable() -> None:
    pytest.importorskip("asyncpg")
    store = open_store("postgresql://hub:s3cret-pw@127.0.0.1:9/hub")
    with pytest.raises(StoreUnavailableError) as info:
        await store.open()
    assert "127.0.0.1:9" in info.value.message
    assert "s3cret-pw" not in info.value.message


async def test_get_task_at_reads_snapshot_and_seq_together(store: Store, agent_id: str) -> None:
    assert await store.get_task_at(agent_id, "missing") is None
    task = make_task()
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    assert await store.get_task_at(agent_id, task.id) == (task, 1)
    working = with_state(task, TaskState.WORKING)
    await store.save_task(agent_id, working, [status_event(2, task, TaskState.WORKING)])
    assert await store.get_task_at(agent_id, task.id) == (working, 2)


# --- push outbox ---------------------------------------------------------------------------


def delivery(agent_id: str, task_id: str, config_id: str, seq: int, snap: bool = False) -> Delivery:
    return Delivery(agent_id=agent_id, task_id=task_id, config_id=config_id, seq=seq, snapshot=snap)


async def claim_mine(
    store: Store, agent_id: str, now: float, lease: float = 30.0
) -> list[Delivery]:
    """Claim what is due, keeping this test's (a shared server holds other tests' too)."""
    got = await store.claim_deliveries(10_000, lease, now=now)
    return sorted((d for d in got if d.agent_id == agent_id), key=lambda d: (d.config_id, d.order))


async def test_outbox_deliveries_enter_with_their_events_and_go_out_in_order(
    store: Store, agent_id: str
) -> None:
    task = make_task("t-out")
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    working = with_state(task, TaskState.WORKING)
    await store.save_task(
        agent_id,
        working,
        [status_event(2, task, TaskState.WORKING)],
        deliveries=[delivery(agent_id, task.id, c, 2) for c in ("a", "b")],
    )
    done = with_state(task, TaskState.COMPLETED)
    await store.save_task(
        agent_id,
        done,
        [status_event(3, task, TaskState.COMPLETED)],
        deliveries=[delivery(agent_id, task.id, c, 3) for c in ("a", "b")],
    )
    now = time.time()
    first = await claim_mine(store, agent_id, now)
    # only the first pending delivery of each config
    assert [(d.config_id, d.seq) for d in first] == [("a", 2), ("b", 2)]
    assert first[0].id == delivery(agent_id, task.id, "a", 2).id
    assert await claim_mine(store, agent_id, now) == []  # claimed: nobody else gets them
    await store.finish_delivery(first[0])
    again = await claim_mine(store, agent_id, now)
    assert [(d.config_id, d.seq) for d in again] == [("a", 3)]  # b is still held by its claim


async def test_outbox_a_refused_save_queues_nothing(store: Store, agent_id: str) -> None:
    task = make_task("t-conflict")
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    with pytest.raises(LogConflictError):
        await store.save_task(
            agent_id,
            task,
            [status_event(5, task, TaskState.WORKING)],
            deliveries=[delivery(agent_id, task.id, "a", 5)],
        )
    assert await claim_mine(store, agent_id, time.time()) == []


async def test_outbox_lease_expiry_hands_a_claim_over(store: Store, agent_id: str) -> None:
    task = make_task("t-lease")
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    await store.add_deliveries([delivery(agent_id, task.id, "a", 1, snap=True)])
    await store.add_deliveries([delivery(agent_id, task.id, "a", 1, snap=True)])  # no double
    now = time.time()
    (mine,) = await claim_mine(store, agent_id, now, lease=10)
    assert mine.snapshot and await claim_mine(store, agent_id, now + 5) == []
    (taken,) = await claim_mine(store, agent_id, now + 11, lease=10)
    assert taken.id == mine.id


async def test_outbox_retry_dead_and_requeue(store: Store, agent_id: str) -> None:
    task = make_task("t-dead")
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    pending, dead_before = await store.outbox_size()  # a shared store may hold others' too
    await store.add_deliveries(
        [delivery(agent_id, task.id, "a", 2), delivery(agent_id, task.id, "a", 3)]
    )
    assert await store.outbox_size() == (pending + 2, dead_before)
    now = time.time()
    (head,) = await claim_mine(store, agent_id, now)
    head.attempts, head.due, head.first_failure, head.last_error = 1, now + 60, now, "HTTP 500"
    await store.update_delivery(head)
    assert await claim_mine(store, agent_id, now) == []  # the retry holds its config back
    (retried,) = await claim_mine(store, agent_id, now + 61)
    assert retried.attempts == 1 and retried.last_error == "HTTP 500"
    retried.dead = True
    await store.update_delivery(retried)
    (next_one,) = await claim_mine(store, agent_id, now + 61)  # dead: no longer holds it back
    assert next_one.seq == 3
    assert await store.outbox_size() == (pending + 1, dead_before + 1)
    dead = [d for d in await store.dead_deliveries() if d.agent_id == agent_id]
    assert [(d.seq, d.attempts, d.last_error) for d in dead] == [(2, 1, "HTTP 500")]
    assert await store.requeue_deliveries([dead[0].id]) == 1
    assert [d for d in await store.dead_deliveries() if d.agent_id == agent_id] == []
    await store.finish_delivery(next_one)
    assert await store.outbox_size() == (pending + 1, dead_before)
    (requeued,) = await claim_mine(store, agent_id, time.time() + 1)
    assert requeued.seq == 2 and requeued.attempts == 0


async def test_outbox_task_deliveries(store: Store, agent_id: str) -> None:
    """A task's deliveries still in the outbox, pending and dead, with their last error;
    another task's are not among them, and a sent one is gone."""
    task, other = make_task("t-mine"), make_task("t-other")
    for t in (task, other):
        await store.save_task(agent_id, t, [snapshot_event(1, t)])
    assert await store.task_deliveries(agent_id, task.id) == []
    await store.add_deliveries(
        [
            delivery(agent_id, task.id, "b", 2),
            delivery(agent_id, task.id, "a", 3),
            delivery(agent_id, task.id, "a", 2),
            delivery(agent_id, other.id, "a", 2),
        ]
    )
    found = await store.task_deliveries(agent_id, task.id)
    assert [(d.config_id, d.seq, d.dead) for d in found] == [
        ("a", 2, False),
        ("a", 3, False),
        ("b", 2, False),
    ]
    now = time.time()
    claimed = [d for d in await claim_mine(store, agent_id, now) if d.task_id == task.id]
    head = next(d for d in claimed if d.config_id == "a")
    head.attempts, head.last_error, head.dead = 3, "HTTP 500", True
    await store.update_delivery(head)
    sent = next(d for d in claimed if d.config_id == "b")
    await store.finish_delivery(sent)
    found = await store.task_deliveries(agent_id, task.id)
    assert [(d.config_id, d.seq, d.dead, d.last_error) for d in found] == [
        ("a", 2, True, "HTTP 500"),
        ("a", 3, False, ""),
    ]


async def test_outbox_concurrent_claims_never_share(harness: StoreHarness, agent_id: str) -> None:
    store = harness.store
    other = await harness.open() if harness.backend.durable else store
    task = make_task("t-race")
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    await store.add_deliveries([delivery(agent_id, task.id, f"c{i}", 1) for i in range(20)])
    now = time.time()
    a, b = await asyncio.gather(claim_mine(store, agent_id, now), claim_mine(other, agent_id, now))
    ids_a, ids_b = {d.id for d in a}, {d.id for d in b}
    assert not ids_a & ids_b and len(ids_a | ids_b) == 20


async def test_outbox_a_round_reads_its_sources_and_settles_at_once(
    store: Store, agent_id: str
) -> None:
    task = make_task("t-round")
    other = make_task("t-round-2")
    await store.save_task(agent_id, task, [snapshot_event(1, task)])
    await store.save_task(agent_id, other, [snapshot_event(1, other)])
    await store.set_push_config(agent_id, task.id, push_config("a"))
    await store.set_push_config(agent_id, other.id, push_config("b", url="https://b.example/h"))
    working = with_state(task, TaskState.WORKING)
    status = status_event(2, task, TaskState.WORKING)
    await store.save_task(
        agent_id, working, [status], deliveries=[delivery(agent_id, task.id, "a", 2)]
    )
    await store.add_deliveries(
        [
            delivery(agent_id, other.id, "b", 1, snap=True),
            delivery(agent_id, other.id, "gone", 1),  # no such config
            delivery(agent_id, task.id, "a", 9),  # no such event
        ]
    )
    now = time.time()
    claimed = await claim_mine(store, agent_id, now)
    assert len(claimed) == 3  # (a, 2) holds back (a, 9)
    sources = await store.delivery_sources(claimed)
    by_id = {d.config_id: s for d, s in zip(claimed, sources, strict=True)}
    assert by_id["a"].config == push_config("a") and by_id["a"].event == status.event
    assert by_id["b"].config is not None and by_id["b"].config.url == "https://b.example/h"
    assert by_id["b"].event is None  # a snapshot delivery has no event
    assert by_id["gone"] == (None, None)
    # one call: the sent one leaves, the failed one is rescheduled, the dead one kept
    sent = next(d for d in claimed if d.config_id == "a")
    retry = next(d for d in claimed if d.config_id == "b")
    dead = next(d for d in claimed if d.config_id == "gone")
    retry.attempts, retry.due, retry.last_error = 1, now + 60, "HTTP 503"
    dead.dead, dead.last_error = True, "unsafe"
    await store.settle_deliveries([sent], [retry, dead])
    (nine,) = await claim_mine(store, agent_id, now, lease=100)  # (a, 2) went: (a, 9) next
    assert nine.seq == 9
    assert (await store.delivery_sources([nine]))[0] == (push_config("a"), None)
    (later,) = await claim_mine(store, agent_id, now + 61)
    assert later.config_id == "b" and later.attempts == 1 and later.last_error == "HTTP 503"
    assert [d.last_error for d in await store.dead_deliveries() if d.agent_id == agent_id] == [
        "unsafe"
    ]
    await store.settle_deliveries()  # nothing to do is fine


async def test_meta_compare_and_swap(harness: StoreHarness) -> None:
    store = harness.store
    name = f"test-{time.time_ns()}"
    assert await store.get_meta(name) is None
    assert await store.swap_meta(name, None, b"one")
    assert not await store.swap_meta(name, None, b"again")  # already there
    assert not await store.swap_meta(name, b"other", b"two")  # not what it holds
    assert await store.swap_meta(name, b"one", b"two\x00\xff")
    assert await store.get_meta(name) == b"two\x00\xff"
    if harness.backend.durable:
        other = await harness.open()
        assert await other.get_meta(name) == b"two\x00\xff"


# --- retention -------------------------------------------------------------------------


async def test_purge_expired_removes_old_terminal_tasks_only(store: Store, agent_id: str) -> None:
    done = make_task("done", state=TaskState.COMPLETED)
    failed = make_task("failed", state=TaskState.FAILED)
    running = make_task("running", state=TaskState.WORKING)
    waiting = make_task("waiting", state=TaskState.INPUT_REQUIRED)
    for t in (done, failed, running, waiting):
        await store.save_task(agent_id, t, [snapshot_event(1, t)])
    await store.set_push_config(agent_id, done.id, push_config("c1"))

    # nothing is older than an hour ago
    assert await store.purge_expired(agent_id, time.time() - 3600) == 0
    # everything is older than a second from now: only the terminal tasks go, in batches
    later = time.time() + 1
    assert sorted(await store.expired_tasks(agent_id, later, 10)) == ["done", "failed"]
    assert await store.purge_expired(agent_id, later, limit=1) == 1
    assert await store.purge_expired(agent_id, later, limit=10) == 1
    assert await store.purge_expired(agent_id, later, limit=10) == 0
    for gone in (done, failed):
        assert await store.get_task(agent_id, gone.id) is None
        assert await store.read_events(agent_id, gone.id) == []
    assert await store.list_push_configs(agent_id, done.id) == []
    left = await store.list_tasks(agent_id, TaskQuery())
    assert sorted(t.id for t in left.tasks) == ["running", "waiting"]
    assert await store.last_seq(agent_id, running.id) == 1


async def test_total_size_follows_inserts_state_changes_and_retention(
    store: Store, agent_id: str
) -> None:
    """totalSize of a first page that is not the whole result (page size 1), by owner
    and by state, after tasks are created, change state and are removed."""

    async def total(**filters: Any) -> int:
        page = await store.list_tasks(agent_id, TaskQuery(page_size=1, **filters))
        if page.next_page_token:  # later pages repeat it
            later = TaskQuery(page_size=1, page_token=page.next_page_token, **filters)
            assert (await store.list_tasks(agent_id, later)).total_size == page.total_size
        return page.total_size

    submitted, working, done = TaskState.SUBMITTED, TaskState.WORKING, TaskState.COMPLETED
    owners = {"a1": "alice", "a2": "alice", "a3": "alice", "b1": "bob", "b2": "bob", "n1": None}
    await asyncio.gather(  # saved together: one batch where the store groups writes
        *(
            store.save_task(agent_id, make_task(t), [snapshot_event(1, make_task(t))], owner=o)
            for t, o in owners.items()
        ),
        store.save_task(f"{agent_id}-other", make_task("x1"), []),  # another agent's
    )
    assert await total() == 6
    assert await total(owner="alice") == 3
    assert await total(owner="bob", state=submitted) == 2
    assert await total(state=submitted) == 6
    assert await total(state=done) == 0

    # state changes: with events, and a snapshot written without events
    for task_id, state in (("a1", done), ("a2", done), ("b1", done)):
        task = with_state(make_task(task_id), state)
        await store.save_task(agent_id, task, [status_event(2, task, state)])
    await store.save_task(agent_id, with_state(make_task("a3"), working))
    await store.save_task(agent_id, with_state(make_task("a3"), working))  # no change
    assert await total() == 6
    assert await total(state=submitted) == 2
    assert await total(state=done) == 3
    assert await total(state=working) == 1
    assert await total(owner="alice", state=done) == 2
    assert await total(owner="bob") == 2
    # a snapshot stored without events, then replaced by the task's first events
    await store.save_task(agent_id, make_task("s1"), owner="bob")
    assert await total(owner="bob", state=submitted) == 2
    started = with_state(make_task("s1"), working)
    await store.save_task(agent_id, started, [snapshot_event(1, started)], owner="bob")
    assert await total(owner="bob", state=submitted) == 1
    assert await total(state=working) == 2
    assert await store.delete_task(agent_id, "s1")

    # retention removes the ended tasks; a removed task is no longer counted
    assert await store.purge_expired(agent_id, time.time() + 1, limit=10) == 3
    assert await total() == 3
    assert await total(state=done) == 0
    assert await total(owner="alice") == 1
    assert await total(owner="bob", state=submitted) == 1
    assert await store.delete_task(agent_id, "n1")
    assert not await store.delete_task(agent_id, "n1")
    assert await total() == 2
    assert await total(state=submitted) == 1
    assert (await store.list_tasks(f"{agent_id}-other", TaskQuery(page_size=1))).total_size == 1


# --- message claims (idempotent sends) ---------------------------------------------------


def reply_message(text: str) -> Message:
    return Message(message_id=f"r-{text}", role=Role.AGENT, parts=[Part(text=text)])


async def test_claim_message_records_once_and_returns_the_first(
    store: Store, agent_id: str
) -> None:
    first = MessageClaim(task_id="t-1", seq=0, instance="a", created=time.time())
    assert await store.claim_message(agent_id, "alice", "m-1", first) is None
    again = MessageClaim(task_id="t-2", seq=3, instance="b", created=time.time())
    assert await store.claim_message(agent_id, "alice", "m-1", again) == first
    # the key is (agent, owner, message id): anything else is another message
    assert await store.claim_message(agent_id, "bob", "m-1", again) is None
    assert await store.claim_message(agent_id, None, "m-1", again) is None
    assert await store.claim_message(agent_id, "alice", "m-2", again) is None
    other_agent = agent_id + "-other"
    assert await store.claim_message(other_agent, "alice", "m-1", again) is None
    assert await store.claim_message(agent_id, None, "m-1", first) == again
    await store.purge_claims(other_agent, time.time() + 60, 100)


async def test_claim_message_reply_completes_only_its_own_claim(
    store: Store, agent_id: str
) -> None:
    claim = MessageClaim(task_id="t-1", instance="a", created=time.time())
    assert await store.claim_message(agent_id, "alice", "m-1", claim) is None
    # a reply for another task changes nothing
    foreign = msgspec.structs.replace(claim, task_id="t-9", reply=reply_message("no"))
    assert await store.claim_message(agent_id, "alice", "m-1", foreign) == claim
    answered = msgspec.structs.replace(claim, reply=reply_message("yes"))
    assert await store.claim_message(agent_id, "alice", "m-1", answered) is None
    fresh = MessageClaim(task_id="t-2", created=time.time())
    found = await store.claim_message(agent_id, "alice", "m-1", fresh)
    assert found == answered and found is not None and found.reply == reply_message("yes")
    # the first reply stays
    later = msgspec.structs.replace(claim, reply=reply_message("later"))
    assert await store.claim_message(agent_id, "alice", "m-1", later) == answered


async def test_claim_message_keeps_the_digest_of_its_request(store: Store, agent_id: str) -> None:
    """The digest of the request that claimed a key comes back with the claim, and stays when
    the reply completes it; a claim written without one (an older version) has ``""``."""
    claim = MessageClaim(task_id="t-1", instance="a", created=time.time(), digest="d" * 32)
    assert await store.claim_message(agent_id, "alice", "m-1", claim) is None
    other = MessageClaim(task_id="t-2", created=time.time(), digest="e" * 32)
    found = await store.claim_message(agent_id, "alice", "m-1", other)
    assert found == claim and found is not None and found.digest == "d" * 32
    answered = msgspec.structs.replace(claim, reply=reply_message("yes"))
    assert await store.claim_message(agent_id, "alice", "m-1", answered) is None
    found = await store.claim_message(agent_id, "alice", "m-1", other)
    assert found is not None and found.digest == "d" * 32 and found.reply == reply_message("yes")
    old = MessageClaim(task_id="t-3", created=time.time())
    assert b"digest" not in msgspec.json.encode(old)  # as versions before digests wrote it
    assert await store.claim_message(agent_id, "alice", "m-old", old) is None
    found = await store.claim_message(agent_id, "alice", "m-old", other)
    assert found == old and found is not None and found.digest == ""


async def test_concurrent_claims_of_one_message_have_one_winner(
    harness: StoreHarness, agent_id: str
) -> None:
    store = harness.store
    other = await harness.open() if harness.backend.durable else store
    claims = [MessageClaim(task_id=f"t-{i}", created=time.time()) for i in range(50)]
    results = await asyncio.gather(
        *(
            (store if i % 2 else other).claim_message(agent_id, "alice", "m-race", c)
            for i, c in enumerate(claims)
        )
    )
    winners = [c for c, r in zip(claims, results, strict=True) if r is None]
    assert len(winners) == 1
    assert all(r == winners[0] for r in results if r is not None)


async def test_purge_claims_removes_old_claims_only(store: Store, agent_id: str) -> None:
    old = time.time() - 7200
    for i in range(3):
        claim = MessageClaim(task_id=f"old-{i}", created=old)
        assert await store.claim_message(agent_id, "alice", f"old-{i}", claim) is None
    new = MessageClaim(task_id="new", created=time.time())
    assert await store.claim_message(agent_id, "alice", "new", new) is None
    removed = await store.purge_claims(agent_id, time.time() - 3600, limit=2)
    removed += await store.purge_claims(agent_id, time.time() - 3600, limit=2)
    if removed == 0:  # a backend whose claims expire by themselves (Redis: key TTLs)
        assert await store.purge_claims(agent_id, time.time() - 3600) == 0
        return
    assert removed == 3
    assert await store.purge_claims(agent_id, time.time() - 3600) == 0
    again = MessageClaim(task_id="again", created=time.time())
    assert await store.claim_message(agent_id, "alice", "old-0", again) is None
    assert await store.claim_message(agent_id, "alice", "new", again) == new


async def test_claims_and_saves_written_together_each_get_their_own_outcome(
    store: Store, agent_id: str
) -> None:
    taken = MessageClaim(task_id="t-taken", created=time.time())
    assert await store.claim_message(agent_id, "alice", "taken", taken) is None
    old = make_task("t-old")
    await store.save_task(agent_id, old, [snapshot_event(1, old)])
    tasks = [make_task(f"t-{i}") for i in range(10)]
    claims = [MessageClaim(task_id=f"t-{i}", created=time.time()) for i in range(10)]
    results = await asyncio.gather(
        *(store.save_task(agent_id, t, [snapshot_event(1, t)]) for t in tasks),
        *(store.claim_message(agent_id, "alice", f"m-{i}", c) for i, c in enumerate(claims)),
        store.claim_message(agent_id, "alice", "taken", claims[0]),
        store.save_task(agent_id, old, [snapshot_event(1, old)]),  # a conflict, alone
        return_exceptions=True,
    )
    assert results[:20] == [None] * 20
    assert results[20] == taken
    assert isinstance(results[21], LogConflictError)
    for t in tasks:
        assert await store.get_task(agent_id, t.id) == t
    for i, c in enumerate(claims):
        assert await store.claim_message(agent_id, "alice", f"m-{i}", claims[-1 - i]) == c
