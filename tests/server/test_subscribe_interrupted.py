"""SubscribeToTask on an input-required task stays open until the task ends (A2A 1.0
§3.1.6), over a real socket, on the JSON-RPC 1.0, REST and 0.3 bindings."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.agents import PizzaExecutor
from tests.support.hub import LiveServer, make_hub

MESSAGE = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "pizza please"}]}


def _events(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in lines if line.startswith("data:")]


async def _ask(http: httpx.AsyncClient, url: str) -> str:
    answer = await http.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": MESSAGE}},
        headers={"A2A-Version": "1.0"},
    )
    task = answer.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return str(task["id"])


async def _answer(http: httpx.AsyncClient, url: str, task_id: str) -> None:
    message = {**MESSAGE, "messageId": "m-2", "taskId": task_id, "parts": [{"text": "funghi"}]}
    answer = await http.post(
        url,
        json={"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": message}},
        headers={"A2A-Version": "1.0"},
    )
    assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", ["jsonrpc-1.0", "rest", "jsonrpc-0.3"])
async def test_subscription_to_an_input_required_task_stays_open(binding: str) -> None:
    async with LiveServer(make_hub({"pizza": PizzaExecutor()})) as server:
        url = f"{server.url}/a2a/pizza"
        async with httpx.AsyncClient(timeout=30) as http:
            task_id = await _ask(http, url)
            if binding == "rest":
                opened = http.stream(
                    "GET", f"{url}/tasks/{task_id}:subscribe", headers={"A2A-Version": "1.0"}
                )
            else:
                method, version = (
                    ("SubscribeToTask", "1.0")
                    if binding == "jsonrpc-1.0"
                    else ("tasks/resubscribe", "0.3")
                )
                opened = http.stream(
                    "POST",
                    url,
                    json={"jsonrpc": "2.0", "id": 3, "method": method, "params": {"id": task_id}},
                    headers={"A2A-Version": version, "Accept": "text/event-stream"},
                )
            async with opened as stream:
                lines = stream.aiter_lines()
                seen: list[str] = []
                while not _events(seen):  # the current state comes first
                    seen.append(await anext(lines))
                await _answer(http, url, task_id)  # the stream is still open: continue the task
                async for line in lines:
                    seen.append(line)
            text = json.dumps(_events(seen))
            assert "input" in text.lower()  # the interrupted state was sent first
            final = _events(seen)[-1]
            assert "completed" in json.dumps(final).lower()  # and it ended at the terminal state
