"""Following a task: the replay of what a subscriber missed, then the live events.

Every change to a task is an event with a per-task sequence number.  A stream
starts at a position — "after seq N" (a reconnect with ``Last-Event-ID: N``) or
"a snapshot now" — and yields every later event exactly once, in order:

1. it registers its :class:`Subscription` on the task's topic *first*, so that
   nothing published from then on is missed;
2. it reads the backlog from the :class:`TaskLog`: events after N (from the
   store, which holds every event ever published), or the snapshot as last
   written, with its seq;
3. it yields the live events, skipping any it already yielded (``seq`` ≤ last).

A subscriber that falls behind by more than its buffer is never allowed to grow
memory: its buffer is dropped and it catches up from the backlog again.  A
stream ends after a terminal or interrupted state (or an immediate message).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from a2a_hub import metrics
from a2a_hub.engine.log import LogTrimmedError, TaskLog
from a2a_hub.engine.pubsub import DEFAULT_BUFFER, PubSub, Subscription
from a2a_hub.protocol.errors import InvalidParamsError
from a2a_hub.protocol.types import Message, Role, StreamResponse
from a2a_hub.stores.base import TaskEvent

__all__ = [
    "LogTrimmedError",
    "Subscription",
    "TaskStream",
    "check_position",
    "ends_stream",
    "ends_task",
    "is_internal",
]


_USER = Role.USER  # read once: an enum member costs a metaclass lookup per read (3.11)


def is_internal(event: StreamResponse) -> bool:
    """A client message appended to history: logged, but not something streams send."""
    return event.message is not None and event.message.role is _USER


def ends_task(event: StreamResponse) -> bool:
    """True for an event after which a task changes no more: a terminal status or snapshot."""
    if event.status_update is not None:
        return event.status_update.status.state.terminal
    if event.task is not None:
        return event.task.status.state.terminal
    return False


def ends_stream(event: StreamResponse) -> bool:
    """True for the last event a stream sends (see :attr:`StreamResponse.ends_turn`)."""
    return event.ends_turn


class TaskStream:
    """An async iterator of a task's events from a position; see the module docstring.

    Create it with ``TaskEngine.subscribe`` or ``TaskEngine.send_stream``,
    which validate eagerly (so errors come before any byte is streamed).
    ``next(idle)`` returns ``None`` when nothing happened for ``idle``
    seconds, so that the transport can send a heartbeat.
    """

    __slots__ = (
        "_catching_up",
        "_closed",
        "_done",
        "_pending",
        "after",
        "finite",
        "last",
        "log",
        "pubsub",
        "sub",
        "task_id",
        "until_terminal",
    )

    def __init__(
        self,
        log: TaskLog,
        pubsub: PubSub,
        task_id: str,
        *,
        after: int | None,
        buffer: int = DEFAULT_BUFFER,
    ) -> None:
        self.log = log
        self.pubsub = pubsub
        self.task_id = task_id
        self.after = after
        self.last = after if after is not None else -1
        self.sub = Subscription(buffer)
        self._pending: list[TaskEvent] = []
        self._done = False
        self._closed = False
        #: True while the stream reads the log page by page (a replay, or after falling behind).
        self._catching_up = False
        #: Set when nothing more can come (the task is not running): end once drained.
        self.finite = False
        #: A subscription (``SubscribeToTask``) ends at a terminal state only; a send's
        #: stream ends with its turn (an interrupted state included).
        self.until_terminal = False
        pubsub.topic(task_id).add(self.sub)

    def reply(self, message: Message) -> TaskStream:
        """Make this stream yield the agent's direct reply ``message``, then end."""
        self._pending.append(TaskEvent(0, StreamResponse(message=message)))
        return self

    async def start(self, *, fresh: bool = False, written: int | None = None) -> TaskStream:
        """Read the backlog (unless ``fresh``: a new task has none); raise protocol errors.

        ``written`` is the seq of the task's last event known to be in the store: a
        replay after an earlier seq that finds nothing there is a gap
        (:class:`LogTrimmedError`), never a silent partial replay.
        """
        try:
            if fresh:
                pass
            elif self.after is None:
                self._pending.append(await self.log.snapshot(self.task_id))
            else:
                page = await self.log.read(
                    self.task_id, self.after, self.sub.limit, written=written
                )
                self._pending.extend(page)
                self._catching_up = True
                metrics.stream_replayed(len(page))
        except BaseException:
            self.close()
            raise
        return self

    async def _backlog(self, after: int | None) -> list[TaskEvent]:
        """The snapshot (``after`` None), or one page of the events after ``after``."""
        if after is None:
            return [await self.log.snapshot(self.task_id)]
        return await self.log.read(self.task_id, after, self.sub.limit)

    async def next(self, idle: float | None = None, *, wait: bool = True) -> TaskEvent | None:
        """The next event; ``None`` after ``idle`` quiet seconds, or at once with ``wait``
        false when it would wait for the task's next event here (see :meth:`listen`);
        StopAsyncIteration at the end."""
        while True:
            if self._done:
                raise StopAsyncIteration
            if self._pending:
                event = self._pending.pop(0)
            elif self._catching_up:
                page = await self._backlog(max(self.last, 0))
                self._pending.extend(e for e in page if e.seq > self.last)
                self._catching_up = bool(self._pending)
                metrics.stream_replayed(len(self._pending))
                continue
            elif self.finite and not self.sub.buffer:
                self._done = True
                self.close()
                raise StopAsyncIteration
            elif self.sub.overflowed:
                metrics.stream_cut_loose()
                self.sub.overflowed = False
                self._catching_up = True
                continue
            elif self.sub.buffer:
                event = self.sub.buffer.pop(0)
            elif self.log.shared and self.log.live(self.task_id) is None:
                # the task runs in another instance (or nowhere): follow the shared log
                if await self._follow_remote(idle):
                    continue
                return None
            elif not wait:
                return None
            else:
                # the mailbox's future, awaited here (no coroutine of its own); its idle
                # timeout is a slot in a timer wheel shared by every stream of the loop
                sub = self.sub
                waiter = sub.waiter(idle)
                try:
                    await waiter
                finally:
                    sub.waited()
                if idle is not None and not (sub.buffer or sub.overflowed or self._done):
                    return None  # quiet for ``idle`` seconds
                continue
            if event.seq and event.seq <= self.last:
                continue  # already delivered by the backlog
            if event.seq:
                self.last = event.seq
            if ends_task(event.event) if self.until_terminal else event.event.ends_turn:
                self._done = True
                self.close()
            return event

    async def _follow_remote(self, idle: float | None) -> bool:
        """Wait for events written by another instance; False after ``idle`` quiet seconds."""
        loop = asyncio.get_running_loop()
        deadline = None if idle is None else loop.time() + idle
        while True:
            wait = 1.0 if deadline is None else min(1.0, deadline - loop.time())
            if wait <= 0:
                return False
            await self.log.wait(self.task_id, self.last, wait)
            if self.sub.buffer or self.sub.overflowed or self.log.live(self.task_id):
                return True  # a run started here meanwhile
            page = await self._backlog(max(self.last, 0))
            fresh = [e for e in page if e.seq > self.last]
            if fresh:
                self._pending.extend(fresh)
                return True

    def listen(self, listener: Callable[[], object] | None) -> None:
        """After ``next(wait=False)`` returned ``None``: ``listener`` is called once, when
        an event (or the end) comes; then call :meth:`next` again.  A follower that waits
        this way is a callback, not a suspended coroutine (and no task).  The listener is
        called by the publisher: it must not publish, nor close a stream."""
        if not self._closed:
            self.sub.listen(listener)

    @property
    def ready(self) -> bool:
        """True when :meth:`next` has an event (or the end) without waiting."""
        return self._done or bool(self._pending) or bool(self.sub.buffer)

    def __aiter__(self) -> TaskStream:
        return self

    async def __anext__(self) -> TaskEvent:
        event = await self.next()
        assert event is not None
        return event

    def close(self) -> None:
        """Leave the topic (idempotent)."""
        if not self._closed:
            self._closed = True
            self.pubsub.leave(self.task_id, self.sub)
            self.sub.close()


def check_position(value: str | int | None) -> int | None:
    """Parse a ``Last-Event-ID``: ``None`` or a non-negative integer, else a clear error."""
    if value is None or value == "":
        return None
    text = value.strip() if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif text is not None and text.isascii() and text.isdigit() and len(text) <= 19:
        number = int(text)
    else:
        shown = repr(value)
        if len(shown) > 40:
            shown = f"{shown[:40]}… ({len(shown)} characters)"
        raise InvalidParamsError(
            f"Last-Event-ID {shown} is not an event number; use the id: of the last event "
            "you received (a non-negative integer)"
        )
    if number < 0:
        raise InvalidParamsError("Last-Event-ID must be 0 or more")
    if number > _MAX_SEQ:
        raise InvalidParamsError(f"Last-Event-ID must be at most {_MAX_SEQ}")
    return number


#: The largest event number a store holds (a signed 64-bit integer).
_MAX_SEQ = 2**63 - 1
