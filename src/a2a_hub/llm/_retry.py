"""Retries with exponential backoff and jitter for transient LLM provider failures.

An operation signals a failure worth retrying (timeout, connection error, HTTP 429 or 5xx)
by raising :class:`TransientError`; anything else (notably :class:`LLMError` for a 4xx) ends
the attempt at once.  When the tries run out, :class:`LLMError` carries the last failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from a2a_hub._backoff import Backoff
from a2a_hub.llm.base import LLMError

__all__ = ["TransientError", "backoff", "retry"]

T = TypeVar("T")


class TransientError(Exception):
    """A failure that may go away if the same request is sent again.

    ``status`` is the HTTP status when there was one; ``retry_after`` the delay in seconds
    the server asked for (HTTP ``Retry-After``), if any.
    """

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def backoff(tries: int = 3, base_delay: float = 0.5, max_delay: float = 8.0) -> Backoff:
    """The retry policy of an LLM provider: ``tries`` attempts in all (at least 1).

    The wait before attempt *n + 1* is ``base_delay * 2**(n - 1)`` capped at ``max_delay``,
    with "equal jitter" (a random value between half and all of it), or the server's
    ``Retry-After`` when that is longer (also capped at ``max_delay``).
    """
    if tries < 1:
        raise ValueError(f"tries must be at least 1, not {tries}")
    return Backoff(initial=base_delay, max_delay=max_delay, jitter=(0.5, 1.0), max_tries=tries - 1)


def _plural(n: int) -> str:
    return f"{n} try" if n == 1 else f"{n} tries"


async def retry(
    operation: Callable[[], Awaitable[T]],
    *,
    provider: str,
    policy: Backoff,
) -> T:
    """Run ``operation`` until it succeeds, retrying on :class:`TransientError`.

    Raises :class:`LLMError` ("LLM provider <name> failed after N tries: <last failure>")
    when every try failed transiently; other exceptions propagate unchanged at once.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return await operation()
        except TransientError as exc:
            if policy.exhausted(attempt):
                raise LLMError(
                    f"LLM provider {provider} failed after {_plural(attempt)}: {exc}",
                    provider=provider,
                    status=exc.status,
                    tries=attempt,
                ) from exc
            await asyncio.sleep(policy.delay(attempt, exc.retry_after))
