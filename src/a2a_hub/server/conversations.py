"""Conversations: every message of every context of an agent, kept in order, once.

A :class:`ConversationRecorder` per hosted agent (when the hub has a registry)
follows the agent's feed and appends to the registry, per ``(agent, contextId)``:
the user message that opened a task (the task's first snapshot), each message a
client sends to continue a task, each agent message of a status update, and for
an immediate reply (no task) the user message and the reply.  A message id seen
before in the context is not stored twice.  The owner of a conversation is the
principal of its first message's task.

The user message of an immediate reply is not on the feed (only the reply is):
the recorder's feed picks it from the engine's running request at the moment the
reply is published, synchronously, while the request is still there.

If the recorder falls behind by more than its feed's buffer, the events it
missed are not recorded (a warning says how many).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.pubsub import EventsLostError, Feed, FeedItem
from a2a_hub.protocol.errors import (
    InvalidParamsError,
    ResourceNotFoundError,
    UnsupportedOperationError,
)
from a2a_hub.protocol.types import Message
from a2a_hub.registry import Registry
from a2a_hub.server.errors import JSON, protocol_error, rest_error

__all__ = ["ConversationRecorder", "context_messages"]

_enc = msgspec.json.Encoder()

log = logging.getLogger("a2a_hub.server")


class _RecordingFeed(Feed):
    """A feed that also notes, as events are published, each task's owner and the request
    message of an immediate reply (both known only while the request runs)."""

    __slots__ = ("engine", "owners", "requests")

    def __init__(self, engine: TaskEngine) -> None:
        super().__init__(engine.pubsub, 8192)
        self.engine = engine
        self.owners: dict[str, str | None] = {}
        self.requests: dict[str, Message] = {}

    def push(self, item: FeedItem) -> None:
        payload = item.event.event
        if payload.artifact_update is not None or (
            payload.status_update is not None and payload.status_update.status.message is None
        ):
            return  # no message in it: not worth a slot in the buffer
        run = self.engine.runs.get(item.task_id)
        if run is not None:
            if len(self.owners) > 10_000:
                self.owners.clear()
            self.owners[item.task_id] = run.owner
            if item.event.seq == 0:
                self.requests[item.task_id] = run.ctx.message
        super().push(item)


def _messages(item: FeedItem, feed: _RecordingFeed) -> Iterator[Message]:
    payload = item.event.event
    if payload.message is not None:
        if item.event.seq == 0:
            request = feed.requests.pop(item.task_id, None)
            if request is not None:
                yield request
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
        self.engine = engine
        self._feed = _RecordingFeed(engine)
        engine.pubsub._feeds.append(self._feed)
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        feed = self._feed
        agent_id = self.engine.agent_id
        while True:
            # everything published meanwhile goes in one write (a few statements)
            batch: list[tuple[str, str, str | None, str | None, list[Message]]] = []
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
                log.warning("conversations of %s: %d events not recorded", agent_id, lost.dropped)
            await self._write(batch)

    def _collect(
        self, item: FeedItem, batch: list[tuple[str, str, str | None, str | None, list[Message]]]
    ) -> None:
        context_id = item.context_id
        if context_id is None:
            return
        messages = list(_messages(item, self._feed))
        if messages:
            owner = self._feed.owners.get(item.task_id)
            task_id = None if item.event.seq == 0 else item.task_id
            batch.append((self.engine.agent_id, context_id, owner, task_id, messages))

    async def _write(
        self, batch: list[tuple[str, str, str | None, str | None, list[Message]]]
    ) -> None:
        if not batch:
            return
        try:
            await self.registry.append_batch(batch)
        except Exception:
            log.warning(
                "recording %d messages of %s failed",
                len(batch),
                self.engine.agent_id,
                exc_info=True,
            )

    async def close(self) -> None:
        """Record what was published so far, then stop."""
        self._feed.end()
        try:
            async with asyncio.timeout(5):
                await self._task
        except (TimeoutError, asyncio.CancelledError):
            log.warning(
                "conversations of %s: stopped before recording everything", self.engine.agent_id
            )


async def context_messages(request: Request) -> Response:
    """``GET /contexts/{contextId}/messages?pageSize=&pageToken=``: the conversation's
    messages in order, to its owner (others: not found, as for an unknown context)."""
    from a2a_hub.server.caller import caller_of
    from a2a_hub.server.http import agent_of, hub_of

    try:
        hub = hub_of(request)
        agent = agent_of(request, hub)
        context_id = request.path_params["context_id"]
        size = _int(request, "pageSize", 50)
        after = _int(request, "pageToken", 0)
        if hub.registry is None:
            raise UnsupportedOperationError(
                "this hub keeps no conversations (it has no registry: configure auth)"
            )
        found = await hub.registry.conversation(
            agent.id, context_id, after=after, limit=max(1, min(size, 500))
        )
        if found is None or not caller_of(request).sees(found[0]):
            raise ResourceNotFoundError(f"No conversation {context_id!r}")
        _, page = found
        next_token = str(page[-1][0]) if len(page) == max(1, min(size, 500)) else ""
        body = {"messages": [m for _, m in page], "nextPageToken": next_token}
        return Response(_enc.encode(body), media_type=JSON)
    except Exception as exc:
        return rest_error(protocol_error(exc, f"GET {request.url.path}"))


def _int(request: Request, name: str, default: int) -> int:
    value = request.query_params.get(name)
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidParamsError(f"{name} must be a whole number, not {value!r}") from None
