"""When to try again after a failure, and when to give up: exponential backoff with jitter.

One :class:`Backoff` serves every retry loop of the project: the client's resumption of
dropped streams, the LLM providers' retries, the delivery of push notifications.  It only
computes delays; the caller sleeps, counts its failures and (for a horizon) measures time.

Retries are numbered from 1 (the first retry, after the first failure).  The *nominal* wait
before retry *n* is ``initial * factor**(n - 1)`` (or ``steps[n - 1]`` for an explicit
schedule), never more than ``max_delay``; the actual wait multiplies it by a random factor
drawn from the ``jitter`` range.  A policy gives up after ``max_tries`` retries, or when the
next retry would fall later than ``horizon`` seconds after the first failure.

A push-notification schedule (retries 5 s, 30 s, 2 min after the first failure, then
doubling up to an hour apart, for a day) reads::

    Backoff(steps=(5, 30, 120), max_delay=3600, max_tries=None, horizon=86400)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

__all__ = ["Backoff"]


@dataclass(frozen=True)
class Backoff:
    """A retry policy: exponential backoff from ``initial`` with jitter, a cap and a limit.

    * ``initial``: nominal wait before the first retry (unused when ``steps`` is given).
    * ``factor``: each nominal wait is the previous one times this (at least 1).
    * ``max_delay``: cap of the nominal waits (jitter applies after the cap), and of an
      honoured ``Retry-After``.
    * ``jitter``: a fraction ``j`` draws the actual wait from ``[1 - j, 1 + j]`` times the
      nominal one (±20 % by default); a pair ``(low, high)`` gives that range of factors
      directly, e.g. ``(0.5, 1.0)`` for "equal jitter".
    * ``max_tries``: how many retries at most, ``None`` for no limit but the horizon.
    * ``steps``: explicit nominal waits of the first retries; later ones keep multiplying
      the last step by ``factor``.
    * ``horizon``: no retry is planned later than this many seconds after the first failure.
    * ``honour_retry_after``: let a server-provided delay (``Retry-After``) lengthen a wait.
    * ``uniform``: the random source, ``uniform(low, high)``; inject one to make it
      deterministic (``random.Random(seed).uniform``).
    """

    initial: float = 1.0
    factor: float = 2.0
    max_delay: float = 30.0
    jitter: float | tuple[float, float] = 0.2
    max_tries: int | None = 5
    steps: tuple[float, ...] = ()
    horizon: float | None = None
    honour_retry_after: bool = True
    uniform: Callable[[float, float], float] = field(
        default=random.uniform, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        if self.initial < 0 or self.max_delay < 0 or any(s < 0 for s in self.steps):
            raise ValueError("backoff delays must not be negative")
        if self.factor < 1:
            raise ValueError(f"backoff factor must be at least 1, not {self.factor}")
        low, high = self.spread
        if not 0 <= low <= high:
            raise ValueError(f"jitter must give factors 0 <= low <= high, not {self.jitter!r}")
        if self.max_tries is not None and self.max_tries < 0:
            raise ValueError(f"max_tries must not be negative, not {self.max_tries}")
        if self.horizon is not None and self.horizon < 0:
            raise ValueError(f"horizon must not be negative, not {self.horizon}")

    @property
    def spread(self) -> tuple[float, float]:
        """The range ``(low, high)`` of the random factor applied to a nominal wait."""
        if isinstance(self.jitter, tuple):
            return self.jitter
        return 1.0 - self.jitter, 1.0 + self.jitter

    def nominal(self, attempt: int) -> float:
        """The wait before retry ``attempt`` (1-based) without jitter, capped at ``max_delay``."""
        if attempt < 1:
            raise ValueError(f"retries are numbered from 1, not {attempt}")
        if attempt <= len(self.steps):
            return min(self.steps[attempt - 1], self.max_delay)
        if self.steps:
            start, exponent = self.steps[-1], attempt - len(self.steps)
        else:
            start, exponent = self.initial, attempt - 1
        if start == 0:
            return 0.0
        try:
            wait = start * self.factor**exponent
        except OverflowError:
            return self.max_delay
        return min(wait, self.max_delay)

    def offset(self, attempt: int) -> float:
        """When retry ``attempt`` falls, nominally: seconds after the first failure."""
        return sum(self.nominal(n) for n in range(1, attempt + 1))

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``attempt`` (1-based), jittered.

        A ``retry_after`` the server asked for is honoured (unless ``honour_retry_after``
        is off) when it is longer, up to ``max_delay``.
        """
        low, high = self.spread
        wait = self.nominal(attempt) * self.uniform(low, high)
        if retry_after is not None and self.honour_retry_after:
            wait = max(wait, min(retry_after, self.max_delay))
        return wait

    def exhausted(self, attempt: int, elapsed: float | None = None) -> bool:
        """True when retry ``attempt`` (1-based) is not to be made: the policy gives up.

        With a horizon, the retry is made only if it falls within it: ``elapsed`` (seconds
        since the first failure, as the caller measured them) plus its nominal wait, or
        without ``elapsed`` its nominal :meth:`offset`.
        """
        if self.max_tries is not None and attempt > self.max_tries:
            return True
        if self.horizon is None:
            return False
        if elapsed is None:
            elapsed = self.offset(attempt - 1)
        return elapsed + self.nominal(attempt) > self.horizon

    def schedule(self) -> Iterator[float]:
        """The jittered waits before retries 1, 2, … until the policy gives up.

        Endless when there is neither ``max_tries`` nor ``horizon``.
        """
        attempt, elapsed = 1, 0.0
        while not self.exhausted(attempt, elapsed):
            yield self.delay(attempt)
            elapsed += self.nominal(attempt)
            attempt += 1
