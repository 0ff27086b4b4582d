"""A task followed by a WebSocket of the event channel (:mod:`a2a_hub.server.ws`).

A socket follows each task it started, continued or synced with one :class:`Follower`:
the task's :class:`~a2a_hub.engine.stream.TaskStream` and the :class:`TaskView` of what
the socket was sent of it.  While the task is quiet the follower is a callback on the
stream's subscription (:meth:`TaskStream.listen`), not a suspended coroutine in a task of
its own: an event (or the end) starts a task that sends what waits, and that task ends
when the stream is quiet again.  Ten thousand idle sockets following waiting tasks so
cost no task, coroutine or future each (issue 29); a stream that cannot be woken by its
subscription (a task running in another instance: the shared log is polled) keeps its task.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Protocol

from a2a_hub.engine.stream import TaskStream
from a2a_hub.protocol.types import Role
from a2a_hub.stores.base import TaskEvent

if TYPE_CHECKING:
    from a2a_hub.server.ws_events import TaskView

__all__ = ["Follower", "FollowerOwner"]


class FollowerOwner(Protocol):
    """What a follower needs of its connection."""

    followers: dict[str, Follower]

    @property
    def closed(self) -> bool: ...

    async def deliver(self, view: TaskView, event: TaskEvent, *, snapshot: bool = False) -> None:
        """Send the socket's events of one task event (those it was not sent yet)."""

    async def report(
        self, exc: Exception, where: str, task_id: str | None, message_id: str | None
    ) -> None:
        """Tell the client that following the task failed with ``exc``."""


class Follower:
    """One followed task of a connection (see the module docstring).

    The stream's first event is the task's snapshot when ``snapshot_first``; with
    ``silent`` that snapshot only updates the view (a continued task: the new turn's own
    statuses follow).  The follower leaves ``owner.followers`` when the stream ends."""

    __slots__ = ("_ended", "_running", "first", "owner", "silent", "stream", "view")

    def __init__(
        self,
        owner: FollowerOwner,
        stream: TaskStream,
        view: TaskView,
        snapshot_first: bool,
        silent: bool,
    ) -> None:
        self.owner = owner
        self.stream = stream
        self.view = view
        self.first = snapshot_first
        self.silent = silent
        #: The task sending what waits (``None`` while the stream is quiet).
        self._running: asyncio.Task[None] | None = None
        #: Completed when the follower ends (created by :meth:`ended` only).
        self._ended: asyncio.Future[None] | None = None
        self._wake()

    @property
    def running(self) -> bool:
        """Whether a task is sending this follower's events now."""
        return self._running is not None

    def _wake(self) -> None:
        """The stream has an event (or ended): send it from a task of its own."""
        if self._running is None:
            self._running = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        stream, view, owner = self.stream, self.view, self.owner
        try:
            while True:
                try:
                    event = await stream.next(wait=False)
                except StopAsyncIteration:
                    break
                if event is None:  # quiet: a callback until the next event
                    if owner.closed:
                        break
                    self._running = None
                    stream.listen(self._wake)
                    return
                if owner.closed:
                    break
                snapshot, self.first = self.first, False
                if snapshot and self.silent:
                    if view.fresh(event):
                        view.events(event, snapshot=True)
                        view.message_id = _last_user_message_id(event) or view.message_id
                    continue
                await owner.deliver(view, event, snapshot=snapshot)
        except asyncio.CancelledError:
            self._running = None
            self._end()
            raise
        except Exception as exc:
            where = f"WebSocket stream of task {stream.task_id}"
            await owner.report(exc, where, stream.task_id, view.message_id)
        self._running = None
        self._end()

    def _end(self) -> None:
        """The stream is over: leave the topic and the connection's followers."""
        self.stream.close()
        followers = self.owner.followers
        if followers.get(self.stream.task_id) is self:
            del followers[self.stream.task_id]
        ended = self._ended
        if ended is not None and not ended.done():
            ended.set_result(None)

    def ended(self) -> asyncio.Future[None]:
        """A future completed when the follower has ended (its last events sent)."""
        if self._ended is None:
            self._ended = asyncio.get_running_loop().create_future()
            if self.owner.followers.get(self.stream.task_id) is not self:
                self._ended.set_result(None)
        return self._ended

    def cancel(self) -> None:
        """Stop following now (a sending task is cancelled: :meth:`stop` waits for it)."""
        running = self._running
        if running is not None:
            running.cancel()
        self._end()

    async def stop(self) -> None:
        """Stop following and wait until a sending task has ended."""
        running = self._running
        self.cancel()
        if running is not None:
            with contextlib.suppress(BaseException):
                await running


def _last_user_message_id(event: TaskEvent) -> str | None:
    task = event.event.task
    if task is None:
        return None
    users = [m.message_id for m in task.history or [] if m.role is Role.USER]
    return users[-1] if users else None
