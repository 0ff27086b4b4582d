"""The composite kinds: sequential, parallel and loop, over hosted and remote children."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from a2a_hub import Hub
from a2a_hub.agents.composite import MEMO
from a2a_hub.client import A2AClient, Conversation
from a2a_hub.engine.executor import text_of
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
from a2a_hub.settings import AgentSpec, SettingsError
from tests.support.hub import LiveServer, make_hub
from tests.support.peers import Failing, Finisher, Interviewer, Marker
from tests.support.processes import hub_process


def req(
    text: str, *, task_id: str | None = None, context_id: str | None = None, wait: bool = True
) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=uuid.uuid4().hex,
            role=Role.USER,
            parts=[Part(text=text)],
            task_id=task_id,
            context_id=context_id,
        ),
        configuration=None if wait else SendMessageConfiguration(return_immediately=True),
    )


async def send(hub: Hub, agent: str, text: str, **kw: Any) -> Task:
    reply = await hub.agents[agent].engine.send(req(text, **kw))
    assert isinstance(reply, Task)
    return reply


async def tasks_of(hub: Hub, agent: str) -> list[Task]:
    page = await hub.agents[agent].engine.list_tasks(ListTasksRequest(page_size=100))
    return page.tasks


def status_text(task: Task) -> str:
    assert task.status.message is not None
    return text_of(task.status.message.parts)


def artifacts(task: Task) -> dict[str, str]:
    return {a.name or "": text_of(a.parts) for a in task.artifacts or []}


def progress(task: Task) -> list[tuple[str, str]]:
    """(child, text) of the working messages that name a child."""
    return [
        (m.metadata["child"], text_of(m.parts))
        for m in task.history or []
        if m.role is Role.AGENT and m.metadata and "child" in m.metadata
    ]


@pytest.fixture
async def hub() -> AsyncIterator[Hub]:
    h = make_hub(
        {
            "echo": "echo",
            "interview": Interviewer(),
            "finisher": Finisher(),
            "failing": Failing(),
            "slow1": Marker(),
            "slow2": Marker(),
            "quick": Marker(after=0.05),
            "chain": "sequential?children=echo,interview,finisher",
            "fanout": "parallel?children=echo,finisher,failing&on_failure=report",
            "failfast": "parallel?children=failing,slow1&on_failure=fail",
            "both": "parallel?children=slow1,slow2",
            "slowchain": "sequential?children=echo,slow1,finisher",
            "refine": "loop?children=finisher",
            "refine2": "loop?children=finisher&max_iterations=2",
            "lost": "sequential?children=echo,nobody",
            "askers": "parallel?children=echo,interview,failing&on_failure=report",
            "asksfast": "parallel?children=interview,failing&on_failure=fail",
            "interview2": Interviewer(),
            "twoask": "parallel?children=interview,interview2",
        }
    )
    await h.start()
    yield h
    await h.close()


async def test_sequential_chain_pauses_on_a_question_and_resumes_where_it_stopped(
    hub: Hub,
) -> None:
    first = await send(hub, "chain", "hello")
    assert first.status.state is TaskState.INPUT_REQUIRED
    assert status_text(first).startswith("What is your name?")
    assert first.status.message is not None and first.status.message.metadata is not None
    assert first.status.message.metadata["child"] == "interview"
    # the echo child ran, its output went to the interviewer
    assert artifacts(first) == {"echo": "echo: hello"}
    interview = (await tasks_of(hub, "interview"))[0]
    assert text_of((interview.history or [])[0].parts) == "echo: hello"
    assert ("echo", "echo is working") in progress(first)
    assert ("interview", "interview is working") in progress(first)

    second = await send(hub, "chain", "Arthur", task_id=first.id)
    assert second.status.state is TaskState.INPUT_REQUIRED
    assert status_text(second).startswith("What is your quest?")
    # the answer went to the same interviewer task; echo did not run again
    assert [t.id for t in await tasks_of(hub, "interview")] == [interview.id]
    assert len(await tasks_of(hub, "echo")) == 1

    third = await send(hub, "chain", "the grail", task_id=first.id)
    assert third.status.state is TaskState.COMPLETED
    assert artifacts(third) == {
        "echo": "echo: hello",
        "interview": "name=Arthur quest=the grail",
        "finisher": "name=Arthur quest=the grail +1",
    }
    assert status_text(third) == "name=Arthur quest=the grail +1"
    done = await hub.agents["interview"].engine.get_task(interview.id)
    assert done.status.state is TaskState.COMPLETED
    # the interviewer's progress passed through, naming the child
    assert ("interview", "noted the name Arthur") in progress(third)

    # each child got the shared state beside the previous output
    finisher = (await tasks_of(hub, "finisher"))[0]
    sent = (finisher.history or [])[0].parts
    assert sent[-1].data == {
        "state": {
            "input": "hello",
            "outputs": {"echo": "echo: hello", "interview": "name=Arthur quest=the grail"},
        }
    }

    # the next turn of the same conversation reuses each child's context
    again = await send(hub, "chain", "hi again", context_id=first.context_id)
    assert again.id != first.id
    echoes = await tasks_of(hub, "echo")
    assert len(echoes) == 2 and echoes[0].context_id == echoes[1].context_id
    assert again.status.message is not None and again.status.message.metadata is not None
    contexts = again.status.message.metadata[MEMO]["contexts"]
    assert set(contexts) == {"echo", "interview", "finisher"}
    assert contexts["echo"] == echoes[0].context_id


async def test_parallel_gives_one_artifact_per_child_and_reports_failures(hub: Hub) -> None:
    task = await send(hub, "fanout", "go")
    assert task.status.state is TaskState.COMPLETED
    assert artifacts(task) == {
        "echo": "echo: go",
        "finisher": "go +1",
        "failing": "failing failed: cannot handle 'go'",
    }
    failed = next(a for a in task.artifacts or [] if a.name == "failing")
    assert failed.metadata == {"child": "failing", "state": "failed"}
    assert status_text(task).startswith("2 of 3 children answered")


async def test_parallel_fail_fast_cancels_the_other_children(hub: Hub) -> None:
    task = await send(hub, "failfast", "go")
    assert task.status.state is TaskState.FAILED
    assert status_text(task) == "failing failed: cannot handle 'go'"
    slow = await tasks_of(hub, "slow1")
    assert [t.status.state for t in slow] == [TaskState.CANCELED]


async def wait_for(check: Any, what: str, seconds: float = 20) -> Any:
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        value = await check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"waited {seconds} s for {what}")
        await asyncio.sleep(0.02)


async def test_cancel_during_a_parallel_run_reaches_every_child(hub: Hub) -> None:
    started = await send(hub, "both", "work", wait=False)

    async def children_working() -> bool:
        found = [*(await tasks_of(hub, "slow1")), *(await tasks_of(hub, "slow2"))]
        return len(found) == 2 and all(t.status.state is TaskState.WORKING for t in found)

    await wait_for(children_working, "both children to work")
    canceled = await hub.agents["both"].engine.cancel_task(started.id)
    assert canceled.status.state is TaskState.CANCELED
    for child in ("slow1", "slow2"):
        [task] = await tasks_of(hub, child)
        assert task.status.state is TaskState.CANCELED


async def test_cancel_during_a_sequential_run_reaches_the_running_child(hub: Hub) -> None:
    started = await send(hub, "slowchain", "work", wait=False)

    async def child_working() -> bool:
        found = await tasks_of(hub, "slow1")
        return len(found) == 1 and found[0].status.state is TaskState.WORKING

    await wait_for(child_working, "the slow child to work")
    canceled = await hub.agents["slowchain"].engine.cancel_task(started.id)
    assert canceled.status.state is TaskState.CANCELED
    [task] = await tasks_of(hub, "slow1")
    assert task.status.state is TaskState.CANCELED
    assert await tasks_of(hub, "finisher") == []  # the chain stopped there


async def test_cancel_of_a_chain_paused_on_a_question_cancels_the_waiting_child(
    hub: Hub,
) -> None:
    first = await send(hub, "chain", "hello")
    assert first.status.state is TaskState.INPUT_REQUIRED
    [waiting] = await tasks_of(hub, "interview")
    assert waiting.status.state is TaskState.INPUT_REQUIRED
    canceled = await hub.agents["chain"].engine.cancel_task(first.id)
    assert canceled.status.state is TaskState.CANCELED
    [child] = await tasks_of(hub, "interview")
    assert child.id == waiting.id and child.status.state is TaskState.CANCELED


async def test_parallel_relays_a_childs_question_instead_of_failing(hub: Hub) -> None:
    first = await send(hub, "askers", "hello")
    assert first.status.state is TaskState.INPUT_REQUIRED
    assert status_text(first).startswith("interview asks: What is your name?")
    assert first.status.message is not None and first.status.message.metadata is not None
    assert first.status.message.metadata["child"] == "interview"
    # the others are done: echo answered, the failing child is reported
    assert artifacts(first)["echo"] == "echo: hello"
    assert "failing" in artifacts(first)
    [waiting] = await tasks_of(hub, "interview")
    assert waiting.status.state is TaskState.INPUT_REQUIRED

    second = await send(hub, "askers", "Arthur", task_id=first.id)
    assert second.status.state is TaskState.INPUT_REQUIRED
    assert status_text(second).startswith("interview asks: What is your quest?")
    third = await send(hub, "askers", "the grail", task_id=first.id)
    assert third.status.state is TaskState.COMPLETED
    assert artifacts(third)["interview"] == "name=Arthur quest=the grail"
    assert status_text(third).startswith("2 of 3 children answered")
    [same] = await tasks_of(hub, "interview")
    assert same.id == waiting.id and same.status.state is TaskState.COMPLETED


async def test_parallel_asks_several_waiting_children_one_after_the_other(hub: Hub) -> None:
    task = await send(hub, "twoask", "hi")
    asked = []
    for answer in ("Ann", "peace", "Bob", "war"):
        assert task.status.state is TaskState.INPUT_REQUIRED
        assert task.status.message is not None and task.status.message.metadata is not None
        asked.append(task.status.message.metadata["child"])
        task = await send(hub, "twoask", answer, task_id=task.id)
    assert task.status.state is TaskState.COMPLETED
    assert asked == ["interview", "interview", "interview2", "interview2"]
    assert artifacts(task) == {
        "interview": "name=Ann quest=peace",
        "interview2": "name=Bob quest=war",
    }


async def test_parallel_fail_fast_ends_a_waiting_childs_task(hub: Hub) -> None:
    task = await send(hub, "asksfast", "hello")
    assert task.status.state is TaskState.FAILED
    for waiting in await tasks_of(hub, "interview"):
        assert waiting.status.state is TaskState.CANCELED


async def test_cancel_of_a_parallel_waiting_on_children_cancels_them(hub: Hub) -> None:
    task = await send(hub, "twoask", "hi")
    assert task.status.state is TaskState.INPUT_REQUIRED
    canceled = await hub.agents["twoask"].engine.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    for child in ("interview", "interview2"):
        [waiting] = await tasks_of(hub, child)
        assert waiting.status.state is TaskState.CANCELED


async def test_loop_runs_until_max_iterations(hub: Hub) -> None:
    task = await send(hub, "refine", "draft")
    assert task.status.state is TaskState.COMPLETED
    assert status_text(task) == "draft +1 +1 +1"
    assert len(await tasks_of(hub, "finisher")) == 3
    steps = [m.metadata for m in task.history or [] if m.metadata and "iteration" in m.metadata]
    assert [s["iteration"] for s in steps] == [1, 2, 3]
    short = await send(hub, "refine2", "draft")
    assert status_text(short) == "draft +1 +1"


async def test_loop_stops_when_a_child_says_done(hub: Hub) -> None:
    task = await send(hub, "refine", "ready now")
    assert task.status.state is TaskState.COMPLETED
    assert status_text(task) == "ready now (done)"
    assert len(await tasks_of(hub, "finisher")) == 1
    assert task.status.message is not None and task.status.message.metadata is not None
    assert task.status.message.metadata["stopped"] == "finisher said done"


async def test_loop_stops_when_an_llm_child_calls_exit() -> None:
    h = make_hub(
        {
            "thinker": "llm?provider=scripted&exit_tool=true",
            "think": "loop?children=thinker&max_iterations=5",
        }
    )
    await h.start()
    try:
        task = await send(h, "think", "nothing left to do: exit")
        assert task.status.state is TaskState.COMPLETED
        [child] = await tasks_of(h, "thinker")
        calls = [
            p.data
            for m in child.history or []
            for p in m.parts
            if isinstance(p.data, dict) and "kind" in p.data
        ]
        assert calls[0]["kind"] == "tool_call" and calls[0]["tool_id"] == "exit"
        assert task.status.message is not None and task.status.message.metadata is not None
        assert task.status.message.metadata["stopped"] == "thinker said done"
    finally:
        await h.close()


async def test_an_unknown_child_fails_the_task_naming_the_agents(hub: Hub) -> None:
    task = await send(hub, "lost", "hi")
    assert task.status.state is TaskState.FAILED
    assert "no hosted agent 'nobody'" in status_text(task)
    assert "echo" in status_text(task)


async def test_a_composite_added_while_serving_reaches_children_added_after_it() -> None:
    hub = make_hub({"echo": "echo"})
    await hub.start()
    try:
        hub.add(AgentSpec(id="pipe", kind="sequential", options={"children": "echo,later"}))
        early = await send(hub, "pipe", "hi")
        assert early.status.state is TaskState.FAILED
        assert "no hosted agent 'later'" in status_text(early)
        hub.add(AgentSpec(id="later", kind="echo"))
        task = await send(hub, "pipe", "hi")
        assert task.status.state is TaskState.COMPLETED
        assert artifacts(task) == {"echo": "echo: hi", "later": "echo: echo: hi"}
    finally:
        await hub.close()


def test_bad_composite_options_are_refused_clearly() -> None:
    from a2a_hub.agents.loader import build_executor

    with pytest.raises(SettingsError, match="children must list"):
        build_executor(AgentSpec(id="c", kind="sequential"))
    with pytest.raises(SettingsError, match="on_failure"):
        build_executor(
            AgentSpec(id="c", kind="parallel", options={"children": "a", "on_failure": "x"})
        )
    with pytest.raises(SettingsError, match="max_iterations"):
        build_executor(
            AgentSpec(id="c", kind="loop", options={"children": "a", "max_iterations": 0})
        )
    with pytest.raises(SettingsError, match="exactly one of"):
        build_executor(AgentSpec(id="c", kind="sequential", options={"children": [{"name": "x"}]}))
    with pytest.raises(SettingsError) as caught:
        build_executor(
            AgentSpec(id="c", kind="loop", options={"children": "a", "max_iteration": 2})
        )
    assert "unknown option 'max_iteration' for LoopExecutor; valid options: max_iterations, " in (
        str(caught.value)
    )
    assert "children, share_state, timeout" in str(caught.value)
    assert "links" not in str(caught.value)
    with pytest.raises(SettingsError, match="unknown option 'links' for kind 'sequential'"):
        build_executor(AgentSpec(id="c", kind="sequential", options={"children": "a", "links": 1}))


# --------------------------------------------------------------------------- remote children


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with hub_process(
        "interview=tests.support.peers:Interviewer", cwd=tmp_path_factory.mktemp("r")
    ) as url:
        yield url


async def test_a_sequential_chain_with_a_remote_child_over_http(remote: str) -> None:
    hub = make_hub({"echo": "echo", "mixed": f"sequential?children=echo,{remote}/a2a/interview"})
    async with LiveServer(hub) as live, await A2AClient.connect(f"{live.url}/a2a/mixed") as c:
        conversation = Conversation(c)
        items = [i.response async for i in conversation.stream("hello")]
        final = items[-1].status_update
        assert final is not None and final.status.state is TaskState.INPUT_REQUIRED
        assert final.status.message is not None
        assert text_of(final.status.message.parts).startswith("What is your name?")
        children = [
            su.status.message.metadata["child"]
            for su in (i.status_update for i in items)
            if su is not None
            and su.status.message
            and su.status.message.metadata
            and "child" in su.status.message.metadata
        ]
        assert children == ["echo", "interview", "interview"]  # progress, then the question
        second = await conversation.send("Lancelot")
        assert isinstance(second, Task) and second.status.state is TaskState.INPUT_REQUIRED
        third = await conversation.send("the grail")
        assert isinstance(third, Task) and third.status.state is TaskState.COMPLETED
        assert artifacts(third)["interview"] == "name=Lancelot quest=the grail"


async def test_cancel_of_a_paused_chain_reaches_its_waiting_remote_child(remote: str) -> None:
    hub = make_hub({"echo": "echo", "mixed": f"sequential?children=echo,{remote}/a2a/interview"})
    async with (
        LiveServer(hub) as live,
        await A2AClient.connect(f"{live.url}/a2a/mixed") as c,
        await A2AClient.connect(f"{remote}/a2a/interview") as direct,
    ):
        first = await Conversation(c).send("hello")
        assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
        found = re.search(r"\[task=(\S+) ", status_text(first))
        assert found is not None
        remote_task = found.group(1)
        assert (await direct.get_task(remote_task)).status.state is TaskState.INPUT_REQUIRED
        canceled = await c.cancel_task(first.id)
        assert canceled.status.state is TaskState.CANCELED
        assert (await direct.get_task(remote_task)).status.state is TaskState.CANCELED
