"""Where a task's events go the moment they happen: per-task topics and the agent-wide feed.

Every event of every task of one agent is handed to :meth:`PubSub.publish`, in
each task's sequence order, synchronously and without ever blocking:

* a **topic** per task holds the :class:`Subscription` of every stream following
  that task (SSE, gRPC streams, WebSocket and AG-UI follows);
* the **feed** is every event of every task of the agent, as :class:`FeedItem`
  ``(task_id, event, owner, request)``, for consumers that watch the whole agent
  (the conversation recorder today, through :meth:`TaskEngine.feed`); a feed opened for a
  caller gets only the events of the tasks that caller may see, and a feed may keep
  only the items it wants (``keep``).  Immediate message replies (no task) are
  published too, with ``seq`` 0: their message carries the context id, the
  ``task_id`` is the id the task would have had (no such task exists), and the item
  carries the request message it answers.

Both kinds of subscriber have a bounded buffer.  One that falls behind never
makes memory grow: a :class:`Subscription` is flagged ``overflowed`` and its
stream catches up from the log; a :class:`Feed` drops what it buffered, keeps
buffering what comes next, and raises :class:`EventsLostError` once, before the
first event after the gap, so that its consumer resyncs from the log (see
:class:`a2a_hub.engine.log.TaskLog`) and skips the events it then sees twice
(``seq`` ≤ the last it knows).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import NamedTuple, Protocol

from a2a_hub.engine.caller import ANONYMOUS, Caller
from a2a_hub.protocol.types import Message
from a2a_hub.stores.base import TaskEvent

__all__ = [
    "DEFAULT_BUFFER",
    "DEFAULT_FEED_BUFFER",
    "EventsLostError",
    "Feed",
    "FeedItem",
    "PubSub",
    "Subscription",
    "Timed",
    "Wheel",
    "wheel",
]

#: Events a task's subscriber may have waiting before it falls behind.
DEFAULT_BUFFER = 256
#: Events a feed may have waiting before it falls behind (it carries every task).
DEFAULT_FEED_BUFFER = 4096


class Subscription:
    """A bounded mailbox of one subscriber on one task's topic.

    Kept small (lists, one waiter future only while waiting, the idle timeout an entry in
    the loop's shared :class:`Wheel`): ten thousand idle subscribers should cost little
    memory.
    """

    __slots__ = (
        "_waiter",
        "buffer",
        "due",
        "limit",
        "listener",
        "overflowed",
        "overflows",
        "slot",
    )

    def __init__(self, limit: int = DEFAULT_BUFFER) -> None:
        self.buffer: list[TaskEvent] = []
        self.limit = limit
        self.overflowed = False
        #: How many times this subscriber fell behind and had to catch up from the log.
        self.overflows = 0
        self._waiter: asyncio.Future[None] | None = None
        #: Loop time at which the current wait ends quietly; its place in the wheel.
        self.due = math.inf
        self.slot: tuple[float, int] | None = None
        #: Called once (then forgotten) at the next push or wake: a subscriber that is a
        #: callback while idle, not a waiting coroutine (see :meth:`listen`).
        self.listener: Callable[[], object] | None = None

    def push(self, event: TaskEvent) -> None:
        """Called by the publisher; never blocks, never grows past ``limit``."""
        if not self.overflowed:
            if len(self.buffer) >= self.limit:
                self.overflowed = True
                self.overflows += 1
                self.buffer.clear()
            else:
                self.buffer.append(event)
        waiter = self._waiter  # wake the subscriber if it waits (as wake() does)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        listener = self.listener
        if listener is not None:
            self.listener = None
            listener()

    def wake(self) -> None:
        """Wake the subscriber if it waits."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        listener = self.listener
        if listener is not None:
            self.listener = None
            listener()

    def listen(self, listener: Callable[[], object] | None) -> None:
        """Call ``listener`` once, at the next push or wake (``None``: not any more)."""
        self.listener = listener

    expire = wake  # the wheel's call when ``due`` has come

    def waiter(self, idle: float | None = None) -> asyncio.Future[None]:
        """The future to await until something is pushed, or ``idle`` seconds pass
        (then it just completes: look at the buffer); call :meth:`waited` after.  Awaited
        by the caller itself (no coroutine of its own); its timeout is an entry in the
        loop's shared :class:`Wheel`, not a timer of its own."""
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        if idle is None:
            self.due = math.inf
        else:
            wheel().arm(self, idle)
        return waiter

    def waited(self) -> None:
        """The wait is over (the waiter completed or was cancelled)."""
        self._waiter = None

    def close(self) -> None:
        """Leave the wheel (the subscriber is gone)."""
        self.listener = None
        if self.slot is not None:
            with contextlib.suppress(RuntimeError):  # no running loop: the entry just expires
                wheel().disarm(self)

    async def wait(self) -> None:
        """Until something is pushed (returns at once if something is there)."""
        if self.buffer or self.overflowed:
            return
        waiter = self.waiter()
        try:
            await waiter
        finally:
            self._waiter = None


class Timed(Protocol):
    """What the :class:`Wheel` keeps: when it is due, its slot, what to call then."""

    due: float
    slot: tuple[float, int] | None

    def expire(self) -> None: ...


class Wheel:
    """The timeouts of one loop's idle streams and sockets: one loop timer per tick,
    shared by every entry due in that tick, instead of a timer per wait.

    A tick is 1 s for timeouts of 8 s or more (an entry expires at most 1 s late), an
    eighth of the timeout for shorter ones.  Each entry is in one slot at most: arming it
    again later (a new wait, a frame received) only moves ``due``, and when its slot
    comes the entry either expires (``due`` has come) or moves to the slot of its new
    ``due`` (a busy stream costs one entry, not one per wait).  ``due = inf`` disarms.
    """

    __slots__ = ("loop", "slots")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.slots: dict[tuple[float, int], _Slot] = {}

    def arm(self, item: Timed, after: float) -> None:
        """``item.expire()`` in ``after`` seconds (replacing any earlier arming)."""
        if after == math.inf:
            self.disarm(item)
            return
        due = self.loop.time() + after
        slot = item.slot
        if slot is not None and due < slot[0] * slot[1] - 1e-6:
            self.disarm(item)  # due before its slot: into an earlier one
            slot = None
        item.due = due
        if slot is None:
            self._put(item, after)

    def disarm(self, item: Timed) -> None:
        """Take ``item`` out of the wheel."""
        item.due = math.inf
        slot = item.slot
        if slot is not None:
            item.slot = None
            entries = self.slots.get(slot)
            if entries is not None:
                entries.discard(item)

    def _put(self, item: Timed, after: float) -> None:
        tick = 1.0 if after >= 8 else max(after / 8, 0.001)
        key = (tick, math.ceil(item.due / tick))
        entries = self.slots.get(key)
        if entries is None:
            entries = self.slots[key] = _Slot(key)
            self.loop.call_at(key[0] * key[1], self._fire, key)
        entries.add(item)
        item.slot = entries.key  # the slot's own key: one tuple per slot, not per entry

    def _fire(self, key: tuple[float, int]) -> None:
        ends = key[0] * key[1] + 1e-6
        for item in self.slots.pop(key, ()):
            item.slot = None
            if item.due <= ends:
                item.due = math.inf
                item.expire()
            elif item.due != math.inf:
                self._put(item, item.due - self.loop.time())


class _Slot(set[Timed]):
    """The entries of one tick of the :class:`Wheel`, and the tick's key."""

    __slots__ = ("key",)

    def __init__(self, key: tuple[float, int]) -> None:
        super().__init__()
        self.key = key


_local = threading.local()


def wheel() -> Wheel:
    """The running loop's wheel (one per thread, replaced when the thread's loop changes)."""
    loop = asyncio.get_running_loop()
    found: Wheel | None = getattr(_local, "wheel", None)
    if found is None or found.loop is not loop:
        found = _local.wheel = Wheel(loop)
    return found


class FeedItem(NamedTuple):
    """One event of the agent-wide feed: the task it belongs to, the event itself, the
    task's owner (``None``: anonymous) and, for an immediate reply (``seq`` 0), the
    request message it answers (``None`` otherwise)."""

    task_id: str
    event: TaskEvent
    owner: str | None = None
    request: Message | None = None

    @property
    def context_id(self) -> str | None:
        """The context (conversation) of the event."""
        payload = self.event.event
        if payload.task is not None:
            return payload.task.context_id
        if payload.status_update is not None:
            return payload.status_update.context_id
        if payload.artifact_update is not None:
            return payload.artifact_update.context_id
        return None if payload.message is None else payload.message.context_id


class EventsLostError(Exception):
    """A feed fell behind and dropped ``dropped`` events before the next one it yields.

    The feed stays open: iterate it again, after reading what you need from the log.
    """

    def __init__(self, dropped: int) -> None:
        super().__init__(
            f"the feed fell behind and dropped {dropped} events; resync from the task log"
        )
        self.dropped = dropped


class Feed:
    """Every event of every task of one agent, in each task's order (see module docstring).

    Iterate it with ``async for item in feed`` (or :meth:`next`, which can time out);
    it ends when closed, by :meth:`close` (what is buffered is dropped) or because
    the engine closes (what is buffered is delivered first).  Use it as an async
    context manager to close it on the way out.
    """

    __slots__ = (
        "_buffer",
        "_closed",
        "_dropped",
        "_pubsub",
        "_waiter",
        "keep",
        "limit",
        "overflows",
        "viewer",
    )

    def __init__(
        self,
        pubsub: PubSub,
        limit: int = DEFAULT_FEED_BUFFER,
        viewer: Caller = ANONYMOUS,
        keep: Callable[[FeedItem], bool] | None = None,
    ) -> None:
        self._pubsub = pubsub
        #: Whose feed this is: it gets the events of the tasks this caller may see.
        self.viewer = viewer
        #: Which items the feed takes (``None``: all): the others never use a slot.
        self.keep = keep
        self._buffer: deque[FeedItem] = deque()
        self.limit = limit
        #: How many times this feed fell behind.
        self.overflows = 0
        self._dropped = 0
        self._closed = False
        self._waiter: asyncio.Future[None] | None = None

    def push(self, item: FeedItem) -> None:
        """Called by the publisher; never blocks, never grows past ``limit``."""
        keep = self.keep
        if keep is not None and not keep(item):
            return
        buffer = self._buffer
        if len(buffer) >= self.limit:
            self.overflows += 1
            self._dropped += len(buffer)
            buffer.clear()
        buffer.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next(self, idle: float | None = None) -> FeedItem | None:
        """The next item; ``None`` after ``idle`` quiet seconds; StopAsyncIteration once
        closed; :class:`EventsLostError` (once) after falling behind."""
        while True:
            if self._dropped:
                dropped, self._dropped = self._dropped, 0
                raise EventsLostError(dropped)
            if self._buffer:
                return self._buffer.popleft()
            if self._closed:
                raise StopAsyncIteration
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            timer = (
                None
                if idle is None
                else asyncio.get_running_loop().call_later(idle, _resolve, waiter)
            )
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
            if idle is not None and not (self._buffer or self._dropped or self._closed):
                return None

    def __aiter__(self) -> Feed:
        return self

    async def __anext__(self) -> FeedItem:
        item = await self.next()
        assert item is not None
        return item

    def close(self) -> None:
        """Unsubscribe and drop what is buffered (idempotent)."""
        self._buffer.clear()
        self._dropped = 0
        self.end()

    def end(self) -> None:
        """Unsubscribe, keeping what is buffered: iteration stops once it is drained."""
        if not self._closed:
            self._closed = True
            self._pubsub.unsubscribe(self)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    @property
    def pending(self) -> int:
        """How many items wait to be read (never more than ``limit``)."""
        return len(self._buffer)

    @property
    def closed(self) -> bool:
        """True once the feed receives nothing more."""
        return self._closed

    async def __aenter__(self) -> Feed:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class PubSub:
    """The topics of one agent's tasks and its feeds (see the module docstring)."""

    __slots__ = ("_feeds", "topics")

    def __init__(self) -> None:
        #: Task id -> the subscriptions of the streams following it (only non-empty sets).
        self.topics: dict[str, set[Subscription]] = {}
        self._feeds: list[Feed] = []

    def topic(self, task_id: str) -> set[Subscription]:
        """The subscribers of a task (created on first use)."""
        subs = self.topics.get(task_id)
        if subs is None:
            subs = self.topics[task_id] = set()
        return subs

    def leave(self, task_id: str, sub: Subscription) -> None:
        """Remove a subscriber; drop the topic when it is empty."""
        subs = self.topics.get(task_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self.topics[task_id]

    def listened(self, task_id: str) -> bool:
        """Whether anybody follows the task's events now: a subscriber or a feed."""
        return bool(self._feeds) or task_id in self.topics

    def publish(
        self,
        task_id: str,
        event: TaskEvent,
        owner: str | None = None,
        request: Message | None = None,
    ) -> None:
        """Hand an event of a task created by ``owner`` to the task's subscribers and to
        every feed whose viewer sees that task (never blocks); ``request`` is the message
        an immediate reply answers."""
        subs = self.topics.get(task_id)
        if subs:
            for sub in subs:
                sub.push(event)
        if self._feeds:
            item = FeedItem(task_id, event, owner, request)
            for feed in self._feeds:
                if feed.viewer.sees(owner):
                    feed.push(item)

    def feed(
        self,
        limit: int = DEFAULT_FEED_BUFFER,
        *,
        viewer: Caller = ANONYMOUS,
        keep: Callable[[FeedItem], bool] | None = None,
    ) -> Feed:
        """Subscribe to every event, from now on, of every task ``viewer`` may see, or to
        those of them ``keep`` accepts (close the feed when done)."""
        feed = Feed(self, limit, viewer, keep)
        self._feeds.append(feed)
        return feed

    @property
    def feeds(self) -> int:
        """How many feeds are subscribed."""
        return len(self._feeds)

    def unsubscribe(self, feed: Feed) -> None:
        """Remove a feed (called by :meth:`Feed.end`)."""
        with contextlib.suppress(ValueError):
            self._feeds.remove(feed)

    def close(self) -> None:
        """End every feed (each delivers what it buffered, then stops)."""
        for feed in list(self._feeds):
            feed.end()
