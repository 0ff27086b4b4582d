"""A multi-turn conversation (seed 002): the client keeps ``contextId`` and ``taskId``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from a2a_hub.client.client import A2AClient
from a2a_hub.client.transports import StreamItem
from a2a_hub.protocol.types import Message, Part, StreamResponse, Task, TaskState

__all__ = ["Conversation"]


class Conversation:
    """Sends each message with the ids of the previous reply.

    After every reply it keeps the ``contextId``, and the ``taskId`` while the
    task waits for input; once the task is terminal the ``taskId`` is dropped
    (the ``contextId`` kept), so the next message starts a new task in the same
    conversation.
    """

    def __init__(self, client: A2AClient, *, context_id: str | None = None) -> None:
        self.client = client
        self.context_id = context_id
        self.task_id: str | None = None
        self.state: TaskState | None = None

    def reset(self) -> None:
        """Start a new conversation (new context) with the next message."""
        self.context_id = None
        self.task_id = None
        self.state = None

    def _note_task(self, task_id: str, context_id: str, state: TaskState | None) -> None:
        self.context_id = context_id or self.context_id
        if state is not None:
            self.state = state
            self.task_id = None if state.terminal else task_id
        else:
            self.task_id = task_id

    def observe(self, event: StreamResponse | Task | Message) -> None:
        """Update the ids from a reply or a streamed event."""
        if isinstance(event, Task):
            self._note_task(event.id, event.context_id, event.status.state)
        elif isinstance(event, Message):
            self.context_id = event.context_id or self.context_id
        elif event.task is not None:
            self.observe(event.task)
        elif event.message is not None:
            self.observe(event.message)
        elif event.status_update is not None:
            su = event.status_update
            self._note_task(su.task_id, su.context_id, su.status.state)
        elif event.artifact_update is not None:
            au = event.artifact_update
            self._note_task(au.task_id, au.context_id, None)

    async def send(self, content: str | Sequence[Part] | Message) -> Task | Message:
        """Send the next message and wait for the reply."""
        reply = await self.client.send(content, context_id=self.context_id, task_id=self.task_id)
        self.observe(reply)
        return reply

    async def stream(self, content: str | Sequence[Part] | Message) -> AsyncIterator[StreamItem]:
        """Send the next message and stream the turn."""
        async for item in self.client.stream(
            content, context_id=self.context_id, task_id=self.task_id
        ):
            self.observe(item.response)
            yield item
