"""``examples/pydantic_ai_agent.py`` and ``examples/openai_agents_agent.py`` served as the README
says (``a2a-hub serve --agent shop=examples.…:agent --llm-provider scripted``), in a real
process, driven with the official a2a-sdk client: a tool call, and a refund approved."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import SendMessageRequest, Task, TaskState

from tests.frameworks._hosted import parts_data, text, user
from tests.support.processes import hub_process

pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")


@pytest.mark.timeout(300)  # a real process importing the framework, then four model runs
@pytest.mark.parametrize("example", ["pydantic_ai_agent", "openai_agents_agent"])
async def test_the_example_runs_as_the_readme_says(example: str, tmp_path: Path) -> None:
    agent = f"shop=examples.{example}:agent"
    options = ("--llm-provider", "scripted")
    with hub_process(
        agent, cwd=tmp_path, store=f"sqlite:///{tmp_path}/hub.db", options=options
    ) as base:
        async with httpx.AsyncClient(timeout=60) as http:
            card = await A2ACardResolver(http, f"{base}/a2a/shop").get_agent_card()
            assert card.name == "Shop assistant"
            assert {"order_status", "refund"} <= {s.id for s in card.skills}
            client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)

            async def send(message: object) -> Task:
                [event] = [
                    e async for e in client.send_message(SendMessageRequest(message=message))
                ]
                task: Task = event.task
                return task

            status = await send(user('order_status {"order_id": 42}'))
            assert status.status.state == TaskState.TASK_STATE_COMPLETED
            assert "order_status → shipped on Monday" in text(status.status.message)
            history = [d["kind"] for m in status.history for d in parts_data(m)]
            assert history == ["tool_call", "tool_response"]

            asked = await send(user('refund {"order_id": 42}', context_id=status.context_id))
            assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert "refund(order_id=42)" in text(asked.status.message)
            done = await send(user("yes", asked))
            assert done.status.state == TaskState.TASK_STATE_COMPLETED
            assert "refund → order 42 refunded" in text(done.status.message)
