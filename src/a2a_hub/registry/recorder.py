"""Conversations: every message of every context of an agent, kept in order, once.

A :class:`ConversationRecorder` per hosted agent (when the hub has a registry)
follows the agent's public feed (:meth:`~a2a_hub.engine.engine.TaskEngine.feed`)
and appends to the registry, per ``(agent, context id)``: the user message that
opened a task (the task's first snapshot), each message a client sends to continue
a task, each agent message of a status update, and for an immediate reply (no
task) the user message and the reply.  A message id seen before in the conversation
is not stored twice.  The owner of a conversation is the owner of its first
message's task, as the feed item carries it; the user message of an immediate
reply is the item's ``request``.

If the recorder falls behind by more than its feed's buffer, the events it
missed are not recorded (a warning says how many).

:class:`ConversationRecorders` is the service that keeps one recorder per hosted
agent while the hub runs, and stops them after the agents' engines have closed, so
that what they published last is recorded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from types import TracebackType

from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.pubsub import EventsLostError, FeedItem
from a2a_hub.protocol.types import Message
from a2a_hub.registry import Registry

__all__ = ["ConversationRecorder", "ConversationRecorders"]

log = logging.getLogger("a2a_hub.registry")

#: One conversation's new messages: (agent id, context id, owner, task id, messages).
_Entry = tuple[str, str, str | None, str | None, list[Message]]

#: Calls a hook with every engine hosted now and from now on; returns the way to stop.
Watch = Callable[[Callable[[TaskEngine], None]], Callable[[], None]]


def _has_message(item: FeedItem) -> bool:
    """Whether an item may hold a message (the others are not worth a slot in the buffer)."""
    payload = item.event.event
    return payload.artifact_update is None and (
        payload.status_update is None or payload.status_update.status.message is not None
    )


def _messages(item: FeedItem) -> Iterator[Message]:
    payload = item.event.event
    if payload.message is not None:
        if item.request is not None:
            yield item.request
        yield payload.message
    elif payload.task is not None:
        yield from payload.task.history or []
        if payload.task.status.message is not None:
            yield payload.task.status.message
    elif payload.status_update is not None and payload.status_update.status.message is not None:
        yield payload.status_update.status.message


class ConversationRecorder:
    """Records the conversations of one agent's engine into the registry."""

    #: How long the recorder waits after a first new event before writing (batching).
    GATHER_SECONDS = 0.05

    def __init__(self, registry: Registry, engine: TaskEngine) -> None:
        self.registry = registry
        self.agent_id = engine.agent_id
        self._feed = engine.feed(8192, keep=_has_message)
        self._task = asyncio.ensure_future(self._run())

    @property
    def done(self) -> bool:
        """True once the recorder stopped (its engine closed and everything was written)."""
        return self._task.done()

    async def _run(self) -> None:
        feed = self._feed
        while True:
            # everything published meanwhile goes in one write (a few statements)
            batch: list[_Entry] = []
            try:
                item = await feed.next()
                # let a busy agent publish more first: fewer, larger writes
                await asyncio.sleep(self.GATHER_SECONDS)
                while True:
                    if item is not None:
                        self._collect(item, batch)
                    if not feed.pending or len(batch) >= 2000:
                        break
                    item = await feed.next()
            except StopAsyncIteration:
                await self._write(batch)
                return
            except EventsLostError as lost:
                log.warning(
                    "conversations of %s: %d events not recorded", self.agent_id, lost.dropped
                )
            await self._write(batch)

    def _collect(self, item: FeedItem, batch: list[_Entry]) -> None:
        context_id = item.context_id
        if context_id is None:
            return
        messages = list(_messages(item))
        if messages:
            task_id = None if item.event.seq == 0 else item.task_id
            batch.append((self.agent_id, context_id, item.owner, task_id, messages))

    async def _write(self, batch: list[_Entry]) -> None:
        if not batch:
            return
        try:
            await self.registry.append_batch(batch)
        except Exception:
            log.warning(
                "recording %d messages of %s failed", len(batch), self.agent_id, exc_info=True
            )

    async def close(self) -> None:
        """Record what was published so far, then stop."""
        self._feed.end()
        try:
            async with asyncio.timeout(5):
                await self._task
        except (TimeoutError, asyncio.CancelledError):
            log.warning("conversations of %s: stopped before recording everything", self.agent_id)


class ConversationRecorders:
    """The service recording every hosted agent's conversations (``async with``).

    On entry it starts a recorder for every engine ``watch`` reports, the hosted ones
    and those hosted later (a replaced agent's old recorder ends with its old engine);
    on exit it stops watching and closes every recorder, each first recording what its
    engine published.
    """

    def __init__(self, registry: Registry, watch: Watch) -> None:
        self.registry = registry
        self._watch = watch
        self._unwatch: Callable[[], None] | None = None
        self.recorders: list[ConversationRecorder] = []

    def _record(self, engine: TaskEngine) -> None:
        self.recorders = [r for r in self.recorders if not r.done]
        self.recorders.append(ConversationRecorder(self.registry, engine))

    async def __aenter__(self) -> ConversationRecorders:
        self._unwatch = self._watch(self._record)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        recorders, self.recorders = self.recorders, []
        for recorder in recorders:
            await recorder.close()
