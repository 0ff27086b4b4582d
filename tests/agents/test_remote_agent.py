"""The ``remote`` kind in front of another hub running in its own process."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from a2a_hub.agents.remote import MEMO
from a2a_hub.client import A2AClient, Conversation
from a2a_hub.engine.executor import text_of
from a2a_hub.protocol.types import (
    Role,
    SendMessageConfiguration,
    Task,
    TaskState,
)
from tests.support.hub import LiveServer, make_hub
from tests.support.processes import hub_process


@pytest.fixture(scope="module")
def remote_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("remote")


@pytest.fixture(scope="module")
def remote(remote_dir: Path) -> Iterator[str]:
    """Another hub, in its own process: an interviewer, a slow agent and a failing one."""
    marker = remote_dir / "marks"
    marker.mkdir()
    with hub_process(
        "interview=tests.support.peers:Interviewer",
        f"slow=tests.support.peers:Marker?marker={marker}",
        "failing=tests.support.peers:Failing",
        "chatty=tests.support.agents:ChattyExecutor?chunks=20&pause_every=1",
        cwd=remote_dir,
    ) as url:
        yield url


@pytest.fixture
async def front(remote: str, request: pytest.FixtureRequest) -> AsyncIterator[LiveServer]:
    transport, streaming = request.param
    options = f"transport={transport}&streaming={streaming}&timeout=60"
    hub = make_hub(
        {
            "front": f"remote?url={remote}/a2a/interview&{options}",
            "slowfront": f"remote?url={remote}/a2a/slow&{options}",
            "failfront": f"remote?url={remote}/a2a/failing&{options}",
            "chattyfront": f"remote?url={remote}/a2a/chatty&{options}",
        }
    )
    async with LiveServer(hub) as live:
        yield live


MODES = [
    ("jsonrpc-1.0", "true"),
    ("jsonrpc-1.0", "false"),
    ("jsonrpc-0.3", "true"),
    ("jsonrpc-0.3", "false"),
]
IDS = ["1.0-streaming", "1.0-polling", "0.3-streaming", "0.3-polling"]


async def say(conversation: Conversation, text: str, *, stream: bool) -> Task:
    """One turn as the local client sees it (streamed or not), then the whole task."""
    if not stream:
        reply = await conversation.send(text)
        assert isinstance(reply, Task)
        return reply
    task_id = None
    async for item in conversation.stream(text):
        event = item.response
        for part in (event.task, event.status_update, event.artifact_update):
            if part is not None:
                task_id = getattr(part, "id", None) or getattr(part, "task_id", None)
    assert task_id is not None
    return await conversation.client.get_task(task_id)


def status_text(task: Task) -> str:
    assert task.status.message is not None
    return text_of(task.status.message.parts)


def memo(task: Task) -> dict[str, Any]:
    assert task.status.message is not None and task.status.message.metadata is not None
    value = task.status.message.metadata[MEMO]
    assert isinstance(value, dict)
    return value


def where(text: str) -> tuple[str, str]:
    found = re.search(r"\[task=(\S+) context=(\S+)\]", text)
    assert found is not None, text
    return found.group(1), found.group(2)


@pytest.mark.parametrize("front", MODES, ids=IDS, indirect=True)
async def test_remote_interruptions_reach_the_client_and_answers_reach_the_remote(
    front: LiveServer, remote: str
) -> None:
    stream = "true" in str(front.hub.agents["front"].spec.options.get("streaming"))
    async with (
        await A2AClient.connect(f"{front.url}/a2a/front") as local,
        await A2AClient.connect(f"{remote}/a2a/interview") as direct,
    ):
        conversation = Conversation(local)
        first = await say(conversation, "hello", stream=stream)
        assert first.status.state is TaskState.INPUT_REQUIRED
        assert status_text(first).startswith("What is your name?")
        remote_task, remote_context = where(status_text(first))
        assert memo(first) == {
            "url": f"{remote}/a2a/interview",
            "contextId": remote_context,
            "taskId": remote_task,
        }

        second = await say(conversation, "Arthur", stream=stream)
        assert second.id == first.id
        assert second.status.state is TaskState.INPUT_REQUIRED
        assert status_text(second).startswith("What is your quest?")
        assert where(status_text(second)) == (remote_task, remote_context)
        if stream:  # the remote's progress passed through as a working message
            assert any(text_of(m.parts) == "noted the name Arthur" for m in second.history or [])

        third = await say(conversation, "the grail", stream=stream)
        assert third.id == first.id
        assert third.status.state is TaskState.COMPLETED
        assert status_text(third).startswith("Thank you, Arthur.")
        assert [text_of(a.parts) for a in third.artifacts or []] == ["name=Arthur quest=the grail"]
        assert memo(third) == {"url": f"{remote}/a2a/interview", "contextId": remote_context}

        # the remote task got exactly the three messages, and is over
        done = await direct.get_task(remote_task)
        assert done.status.state is TaskState.COMPLETED
        said = [text_of(m.parts) for m in done.history or [] if m.role is Role.USER]
        assert said == ["hello", "Arthur", "the grail"]

        # next message: a new local task, a new remote task, the same remote context
        again = await say(conversation, "hello again", stream=stream)
        assert again.id != first.id and again.context_id == first.context_id
        assert again.status.state is TaskState.INPUT_REQUIRED
        new_task, same_context = where(status_text(again))
        assert new_task != remote_task and same_context == remote_context
        untouched = await direct.get_task(remote_task)
        assert len(untouched.history or []) == len(done.history or [])


async def wait_for(check: Any, what: str, seconds: float = 20) -> Any:
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        value = await check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"waited {seconds} s for {what}")
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("front", MODES, ids=IDS, indirect=True)
async def test_cancel_of_the_local_task_cancels_the_remote_one(
    front: LiveServer, remote: str, remote_dir: Path
) -> None:
    async with (
        await A2AClient.connect(f"{front.url}/a2a/slowfront") as local,
        await A2AClient.connect(f"{remote}/a2a/slow") as direct,
    ):
        started = await local.send(
            "take your time", configuration=SendMessageConfiguration(return_immediately=True)
        )
        assert isinstance(started, Task)

        async def remote_working() -> Task | None:
            page = await direct.list_tasks(page_size=100)
            for task in page.tasks:
                if task.status.state is TaskState.WORKING and any(
                    text_of(m.parts) == "take your time" for m in task.history or []
                ):
                    return task
            return None

        remote_task = await wait_for(remote_working, "the remote task to work")
        canceled = await local.cancel_task(started.id)
        assert canceled.status.state is TaskState.CANCELED

        async def remote_canceled() -> bool:
            task = await direct.get_task(remote_task.id)
            return task.status.state is TaskState.CANCELED

        await wait_for(remote_canceled, "the remote task to be canceled")
        assert (remote_dir / "marks" / f"{remote_task.id}.canceled").exists()


@pytest.mark.parametrize("front", [MODES[0], MODES[2]], ids=[IDS[0], IDS[2]], indirect=True)
async def test_remote_chunks_pass_through_as_they_come(front: LiveServer) -> None:
    async with await A2AClient.connect(f"{front.url}/a2a/chattyfront") as local:
        chunks = []
        async for item in local.stream("talk"):
            update = item.response.artifact_update
            if update is not None:
                chunks.append((text_of(update.artifact.parts), update.append, update.last_chunk))
            status = item.response.status_update
            if status is not None and status.status.state.terminal:
                task_id = status.task_id
        assert len(chunks) == 20
        assert [c[1] for c in chunks] == [False] + [True] * 19
        assert [c[2] for c in chunks] == [False] * 19 + [True]
        task = await local.get_task(task_id)
        [artifact] = task.artifacts or []
        assert text_of(artifact.parts).replace("\n", "") == "".join(c[0] for c in chunks)


@pytest.mark.parametrize("front", MODES[:2], ids=IDS[:2], indirect=True)
async def test_a_remote_failure_fails_the_local_task_with_its_message(front: LiveServer) -> None:
    async with await A2AClient.connect(f"{front.url}/a2a/failfront") as local:
        task = await local.send("the impossible")
        assert isinstance(task, Task)
        assert task.status.state is TaskState.FAILED
        assert "failed: cannot handle 'the impossible'" in status_text(task)


async def test_an_unreachable_remote_fails_the_task_saying_where() -> None:
    hub = make_hub({"front": "remote?url=http://127.0.0.1:9/a2a/nobody&connect_timeout=2"})
    async with LiveServer(hub) as live, await A2AClient.connect(f"{live.url}/a2a/front") as c:
        task = await c.send("anyone?")
        assert isinstance(task, Task)
        assert task.status.state is TaskState.FAILED
        assert "cannot reach the agent at http://127.0.0.1:9/a2a/nobody" in status_text(task)


def test_remote_needs_a_url() -> None:
    from a2a_hub.agents.loader import build_executor
    from a2a_hub.settings import AgentSpec, SettingsError

    with pytest.raises(SettingsError, match="needs url"):
        build_executor(AgentSpec(id="r", kind="remote"))
    with pytest.raises(SettingsError, match="http"):
        build_executor(AgentSpec(id="r", kind="remote", options={"url": "ftp://x"}))


def _started(server: Any) -> Any:
    async def check() -> bool:
        return bool(server.started)

    return check


async def test_headers_and_api_key_from_hub_toml_reach_the_remote(tmp_path: Path) -> None:
    import socket

    import uvicorn

    from a2a_hub import Hub, create_app
    from a2a_hub.settings import load_settings
    from a2a_hub.stores.memory import MemoryStore

    seen: list[dict[str, str]] = []
    target = create_app(make_hub({"echo": "echo"}))

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await target(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(recording, log_level="warning", lifespan="on"))
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        await wait_for(_started(server), "the recording server to start")
        config = tmp_path / "hub.toml"
        config.write_text(
            f"""
[[agents]]
id = "front"
kind = "remote"
options = {{ url = "{url}/a2a/echo", api_key = "k-123", headers = {{ x-team = "blue" }} }}
"""
        )
        hub = Hub(load_settings(config, env={}), store=MemoryStore())
        async with LiveServer(hub) as live, await A2AClient.connect(f"{live.url}/a2a/front") as c:
            task = await c.send("hi")
            assert isinstance(task, Task) and status_text(task) == "echo: hi"
    finally:
        server.should_exit = True
        await serving
        sock.close()
    assert seen and all(h.get("x-api-key") == "k-123" for h in seen)
    assert all(h.get("x-team") == "blue" for h in seen)


@pytest.mark.parametrize("front", MODES, ids=IDS, indirect=True)
async def test_cancel_while_waiting_for_input_cancels_the_waiting_remote_task(
    front: LiveServer, remote: str
) -> None:
    """No turn runs while both tasks wait for input: the cancel still reaches the remote."""
    stream = "true" in str(front.hub.agents["front"].spec.options.get("streaming"))
    async with (
        await A2AClient.connect(f"{front.url}/a2a/front") as local,
        await A2AClient.connect(f"{remote}/a2a/interview") as direct,
    ):
        first = await say(Conversation(local), "hello", stream=stream)
        assert first.status.state is TaskState.INPUT_REQUIRED
        remote_task, _ = where(status_text(first))
        assert (await direct.get_task(remote_task)).status.state is TaskState.INPUT_REQUIRED

        canceled = await local.cancel_task(first.id)
        assert canceled.status.state is TaskState.CANCELED
        remote_now = await direct.get_task(remote_task)
        assert remote_now.status.state is TaskState.CANCELED
