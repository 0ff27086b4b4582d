"""A hub on SQLite hosting one framework agent, driven with the official a2a-sdk client.

Shared by the pydantic-ai and OpenAI Agents SDK tests: the same must-show list runs
against each (blocking send, streamed send replayed with ``Last-Event-ID``, multi-turn
across a restart, ``input-required`` and its resumption, cancel, tool parts).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import new_text_message
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
)
from google.protobuf import json_format
from google.protobuf.struct_pb2 import Value

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.llm.served import LLM_PATH, LLM_URL_ENV
from tests.support.hub import TEST_HOSTS, LiveServer
from tests.support.sse import Frame, frames, rpc_body

V10 = {"A2A-Version": "1.0"}


def user(text: str, task: Task | None = None, context_id: str | None = None) -> Message:
    """A user message, continuing ``task`` (its id and context) or a context."""
    return new_text_message(
        text,
        role=Role.ROLE_USER,
        task_id=task.id if task is not None else None,
        context_id=task.context_id if task is not None else context_id,
    )


def data_message(data: dict[str, Any], task: Task) -> Message:
    """A user message holding one data part, continuing ``task``."""
    message = user("", task)
    del message.parts[:]
    value = Value()
    json_format.ParseDict(data, value)
    message.parts.append(Part(data=value))
    return message


def parts_data(message: Message) -> list[dict[str, Any]]:
    """The data parts of a message, as dicts."""
    return [
        json_format.MessageToDict(p.data)
        for p in message.parts
        if p.WhichOneof("content") == "data"
    ]


def text(message: Message) -> str:
    return "".join(p.text for p in message.parts if p.WhichOneof("content") == "text")


@dataclass
class Hosted:
    """A served hub: its URL, the agent's URL and the SDK clients (blocking, streaming)."""

    live: LiveServer
    url: str
    client: Any
    streaming: Any
    http: httpx.AsyncClient

    async def send(self, message: Message, *, immediately: bool = False) -> Task:
        """A blocking send (or with ``immediately``, one that returns at once)."""
        config = SendMessageConfiguration(return_immediately=immediately)
        events = [
            e
            async for e in self.client.send_message(
                SendMessageRequest(message=message, configuration=config)
            )
        ]
        assert len(events) == 1 and events[0].WhichOneof("payload") == "task", events
        task: Task = events[0].task
        return task

    async def stream(self, message: Message) -> list[Any]:
        """A streamed send: every event, in order."""
        return [e async for e in self.streaming.send_message(SendMessageRequest(message=message))]

    async def replay(self, task_id: str, last_event_id: int) -> list[Frame]:
        """The task's events after ``last_event_id`` (SubscribeToTask with Last-Event-ID)."""
        got: list[Frame] = []
        headers = {**V10, "Last-Event-ID": str(last_event_id)}
        body = rpc_body("SubscribeToTask", {"id": task_id})
        async with self.http.stream("POST", self.url, json=body, headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            async for frame in frames(response):
                if not frame.comment:
                    got.append(frame)
        return got

    async def events_of(self, task_id: str) -> list[Frame]:
        """Every event of the task so far (a replay from the start)."""
        return await self.replay(task_id, 0)

    async def wait_for_tool_call(self, task_id: str, tool: str) -> None:
        """Until the task's history shows a call of ``tool`` (the task runs it)."""

        async def poll() -> None:
            while True:
                task = await self.client.get_task(GetTaskRequest(id=task_id))
                if any(d.get("tool_id") == tool for m in task.history for d in parts_data(m)):
                    return
                await asyncio.sleep(0.05)

        await asyncio.wait_for(poll(), 30)  # a hang guard, not a timing check


def settings_for(executor: str, store_url: str, **extra: Any) -> Settings:
    return Settings.from_flat(
        agents=[AgentSpec(id="agent", kind="python", executor=executor)],
        store=store_url,
        trusted_hosts=[*TEST_HOSTS, "localhost", "127.0.0.1"],
        **extra,
    )


@contextlib.asynccontextmanager
async def hosted(
    executor: str, tmp_path: Path, *, port: int = 0, **extra: Any
) -> AsyncIterator[Hosted]:
    """A hub on the SQLite file ``tmp_path/hub.db`` hosting ``executor`` as agent ``agent``,
    served by uvicorn (on ``port``: a second hub on the same port and file is a restart),
    its LLM endpoint backed by the scripted provider unless ``extra`` says otherwise."""
    extra.setdefault("llm_provider", "scripted")
    hub = Hub(settings_for(executor, f"sqlite:///{tmp_path}/hub.db", **extra))
    async with LiveServer(hub, port=port) as live, httpx.AsyncClient(timeout=60) as http:
        # the agents' model: this hub's /llm/v1 (on a free port, which its settings do not say)
        before = os.environ.get(LLM_URL_ENV)
        os.environ[LLM_URL_ENV] = f"{live.url}{LLM_PATH}"
        url = f"{live.url}/a2a/agent"
        card = await A2ACardResolver(http, url).get_agent_card()
        clients = [
            ClientFactory(
                ClientConfig(
                    httpx_client=http, streaming=streaming, supported_protocol_bindings=["JSONRPC"]
                )
            ).create(card)
            for streaming in (False, True)
        ]
        try:
            yield Hosted(live, url, clients[0], clients[1], http)
        finally:
            if before is None:
                os.environ.pop(LLM_URL_ENV, None)
            else:
                os.environ[LLM_URL_ENV] = before
