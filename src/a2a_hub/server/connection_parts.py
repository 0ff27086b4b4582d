"""What one HTTP connection of :mod:`a2a_hub.server.http_protocol` keeps besides uvicorn's
protocol: its timers (issue 29).

* :class:`HeadersDue`: the header deadline (an entry of the loop's timer wheel) and the
  keep-alive timer, one attribute of the protocol (a 30th attribute would turn the
  protocol's 300-byte shared-key ``__dict__`` into a 1,600-byte one);
* :class:`MovingTimer`: uvicorn's keep-alive timeout as one loop timer per connection that
  moves to the latest deadline, instead of a timer scheduled at each response and
  cancelled at the next request;
* :func:`slim_event`: an ``asyncio.Event`` of a connection made smaller.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

__all__ = ["HeadersDue", "MovingTimer", "slim_event"]


class HeadersDue:
    """A connection's header deadline, its entry in the loop's timer wheel (``due`` is
    ``inf`` while no headers are awaited), and its keep-alive timer (here rather than
    attributes of the protocol: a 30th attribute would turn its 300-byte shared-key
    ``__dict__`` into a 1,600-byte one)."""

    __slots__ = ("due", "idle", "protocol", "slot")

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol
        self.due = math.inf
        self.slot: tuple[float, int] | None = None
        #: uvicorn's keep-alive timeout between requests (made at the first response).
        self.idle: MovingTimer | None = None

    def expire(self) -> None:
        """The wheel's call: headers were awaited past their deadline."""
        self.protocol._headers_late()


class MovingTimer:
    """uvicorn's keep-alive timer of one connection, as a ``TimerHandle`` to uvicorn: one
    loop timer that moves to the latest deadline when it fires, instead of one scheduled at
    each response and cancelled at the next request (2 % of a ``SendMessage``'s samples)."""

    __slots__ = ("callback", "deadline", "loop", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
        self.loop = loop
        self.callback = callback
        self.deadline: float | None = None
        self.timer: asyncio.TimerHandle | None = None

    def arm(self, delay: float) -> MovingTimer:
        self.deadline = due = self.loop.time() + delay
        if self.timer is None:
            self.timer = self.loop.call_at(due, self._fire)
        return self

    def cancel(self) -> None:
        """As ``TimerHandle.cancel``: the callback is not called (the loop timer stays,
        to move to the next deadline)."""
        self.deadline = None

    def stop(self) -> None:
        """Cancel the loop timer too and let go of the callback (the connection is gone)."""
        self.deadline = None
        self.callback = _nothing
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _fire(self) -> None:
        self.timer = None
        deadline = self.deadline
        if deadline is None:
            return
        if self.loop.time() < deadline:
            self.timer = self.loop.call_at(deadline, self._fire)
            return
        self.deadline = None
        self.callback()


def _nothing() -> None:
    pass


def slim_event(event: asyncio.Event) -> None:
    """An ``asyncio.Event`` whose waiters are a list (it only appends, removes and
    iterates them) rather than a ``deque`` (an empty deque is 600 bytes)."""
    if not getattr(event, "_waiters", None):
        event._waiters = []  # type: ignore[assignment]
