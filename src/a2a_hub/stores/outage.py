"""Logging a store outage as state changes: one line when it starts, one every
:data:`REPEAT` seconds while it lasts, one when the store answers again.

The backends' guarded methods call :func:`failed` when an operation could not
reach the server and :func:`answered` when one succeeded; no traceback is logged
for an expected outage, and a busy hub does not write a line per failed request.
"""

from __future__ import annotations

import logging
import time

__all__ = ["REPEAT", "Outage", "Repeating", "answered", "failed", "outages"]

log = logging.getLogger("a2a_hub.stores.outage")

#: Seconds between two "still down" lines of one outage.
REPEAT = 30.0


class Outage:
    """One store's outage: when it began, when it was last reported, how many failures."""

    def __init__(self, name: str, reason: str, now: float) -> None:
        self.name = name
        self.began = now
        self.reported = now
        self.failures = 1
        log.error("task store %s is down: %s", name, reason)

    def again(self, reason: str, now: float) -> None:
        """Another failure: log "still down" if :data:`REPEAT` seconds went by since the
        last line."""
        self.failures += 1
        if now - self.reported >= REPEAT:
            self.reported = now
            log.error(
                "task store %s still down after %.0f s (%d failed operations): %s",
                self.name,
                now - self.began,
                self.failures,
                reason,
            )

    def over(self, now: float) -> None:
        """The store answered again."""
        log.warning(
            "task store %s is back after %.1f s (%d failed operations)",
            self.name,
            now - self.began,
            self.failures,
        )


class Repeating:
    """A background loop's failure that repeats while a server is down (the cluster's signal
    channel, push delivery's claims), logged like an :class:`Outage`: one line when it
    starts, one every :data:`REPEAT` seconds while it lasts, one when the loop works again;
    not one per retry (the loops retry every second)."""

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self.log = logger
        self.what = what
        self.began: float | None = None
        self.reported = 0.0
        self.failures = 0

    def failed(self, reason: object) -> None:
        """One more failure (logged when it is the first, or :data:`REPEAT` s went by)."""
        now = time.monotonic()
        self.failures += 1
        if self.began is None:
            self.began = self.reported = now
            self.log.warning("%s failed: %s", self.what, reason)
        elif now - self.reported >= REPEAT:
            self.reported = now
            self.log.warning(
                "%s still failing after %.0f s (%d times): %s",
                self.what,
                now - self.began,
                self.failures,
                reason,
            )

    def worked(self) -> None:
        """The loop worked: ends the failure, if any, with one line."""
        if self.began is not None:
            self.log.warning(
                "%s works again after %.1f s (%d failures)",
                self.what,
                time.monotonic() - self.began,
                self.failures,
            )
            self.began, self.failures = None, 0


#: Outages in progress, by id() of the store object.
_down: dict[int, Outage] = {}


def outages() -> dict[int, Outage]:
    """The outages in progress (by id of the store object)."""
    return _down


def failed(store: object, reason: str) -> None:
    """An operation of ``store`` could not reach its server."""
    now = time.monotonic()
    outage = _down.get(id(store))
    if outage is None:
        _down[id(store)] = Outage(repr(store), reason, now)
    else:
        outage.again(reason, now)


def answered(store: object) -> None:
    """An operation of ``store`` succeeded: ends its outage, if any."""
    if _down:
        outage = _down.pop(id(store), None)
        if outage is not None:
            outage.over(time.monotonic())
