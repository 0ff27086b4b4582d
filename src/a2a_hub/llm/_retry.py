"""Retries with exponential backoff and jitter for transient LLM provider failures.

An operation signals a failure worth retrying (timeout, connection error, HTTP 429 or 5xx)
by raising :class:`TransientError`; anything else (notably :class:`LLMError` for a 4xx) ends
the attempt at once.  When the tries run out, :class:`LLMError` carries the last failure.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import msgspec

from a2a_hub.llm.base import LLMError

__all__ = ["RetryPolicy", "TransientError", "retry"]

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


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How often and how patiently to retry: ``tries`` attempts in all (at least 1).

    The wait before attempt *n + 1* is ``base_delay * 2**(n - 1)`` capped at ``max_delay``,
    with "equal jitter" (a random value between half and all of it), or the server's
    ``Retry-After`` when that is longer (also capped at ``max_delay``).
    """

    tries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0

    def __post_init__(self) -> None:
        if self.tries < 1:
            raise ValueError(f"tries must be at least 1, not {self.tries}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("retry delays must not be negative")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        wait = backoff / 2 + random.uniform(0, backoff / 2)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay))
        return wait


def _plural(n: int) -> str:
    return f"{n} try" if n == 1 else f"{n} tries"


async def retry(
    operation: Callable[[], Awaitable[T]],
    *,
    provider: str,
    policy: RetryPolicy,
) -> T:
    """Run ``operation`` until it succeeds, retrying on :class:`TransientError`.

    Raises :class:`LLMError` ("LLM provider <name> failed after N tries: <last failure>")
    when every try failed transiently; other exceptions propagate unchanged at once.
    """
    for attempt in range(1, policy.tries + 1):
        try:
            return await operation()
        except TransientError as exc:
            if attempt >= policy.tries:
                raise LLMError(
                    f"LLM provider {provider} failed after {_plural(attempt)}: {exc}",
                    provider=provider,
                    status=exc.status,
                    tries=attempt,
                ) from exc
            await asyncio.sleep(policy.delay(attempt, exc.retry_after))
    raise AssertionError("unreachable")  # pragma: no cover
