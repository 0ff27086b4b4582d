"""A multi-turn pizza-ordering agent written against the official a2a-sdk (founding note 002),
hosted unchanged by a2a-hub:

    a2a-hub serve --agent pizza=examples.a2a_sdk_pizza:PizzaExecutor
    a2a-hub chat http://127.0.0.1:8000/a2a/pizza

It uses only the SDK's API (``AgentExecutor``, ``RequestContext``, ``EventQueue``,
``TaskUpdater``) and would run the same under the SDK's own ``DefaultRequestHandler``.  The
conversation lives in the task's history, which the request context hands back each turn:

1. "I want pizza" → the task is created and asks "What kind of pizza? …" (input-required);
2. "hawaiian" → "What size: small, medium or large?" (input-required);
3. "large" → the order is streamed as an artifact in chunks, then the task completes.

"menu" alone is answered with a direct message (no task).  Baking takes ``bake_seconds``
(an option, 0 by default): a task canceled meanwhile ends ``canceled``.
"""

from __future__ import annotations

import asyncio

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message, Role

KINDS = ("margherita", "pepperoni", "hawaiian", "funghi")
SIZES = ("small", "medium", "large")
MENU = "Today: " + ", ".join(KINDS) + "; sizes " + ", ".join(SIZES) + "."


def _said(history: list[Message]) -> str:
    """Everything the user said in this task, lower-cased."""
    words = []
    for message in history:
        if message.role == Role.ROLE_USER:
            words.extend(p.text.lower() for p in message.parts if p.HasField("text"))
    return " ".join(words)


class PizzaExecutor(AgentExecutor):
    """Takes a pizza order over several turns: kind, size, then the order."""

    name = "Pizza shop"

    def __init__(self, bake_seconds: float = 0.0) -> None:
        self.bake_seconds = float(bake_seconds)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        if context.current_task is None and context.get_user_input().strip().lower() == "menu":
            # a direct answer: a Message, no task
            await event_queue.enqueue_event(
                new_text_message(MENU, context_id=context.context_id, role=Role.ROLE_AGENT)
            )
            return
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
            history = [context.message]
        else:
            history = list(task.history)  # ends with this turn's message
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        said = _said(history)
        kind = next((k for k in KINDS if k in said), None)
        size = next((s for s in SIZES if s in said), None)
        if kind is None:
            await updater.requires_input(
                updater.new_agent_message([new_text_part(f"What kind of pizza? {MENU}")])
            )
            return
        if size is None:
            await updater.requires_input(
                updater.new_agent_message([new_text_part("What size: small, medium or large?")])
            )
            return
        await updater.start_work(updater.new_agent_message([new_text_part("Baking…")]))
        await asyncio.sleep(self.bake_seconds)
        lines = [f"1 x {size} {kind}\n", "baked: yes\n", "delivery: 30 minutes"]
        artifact_id = f"order-{task.id}"
        for i, line in enumerate(lines):
            await updater.add_artifact(
                [new_text_part(line)],
                artifact_id=artifact_id,
                name="order",
                append=i > 0,
                last_chunk=i == len(lines) - 1,
            )
        await updater.complete(
            updater.new_agent_message([new_text_part(f"Your {size} {kind} is on its way.")])
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(updater.new_agent_message([new_text_part("Order canceled.")]))
