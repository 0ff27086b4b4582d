"""Rate limits and running-task caps (``[[limits]]``), enforced with the :mod:`limits` library.

:class:`Limits` is the hub's: the entries of the settings, one limiter (the library's
sliding-window counter) over one storage: the store's Redis when the task store is Redis
(``async+redis``, redis-py, keys under the store's prefix + ``:limits``), so that every
instance sharing the store shares the counters; else the library's in-process memory
(each instance counts its own).  :meth:`Limits.for_agent` gives the
:class:`AgentLimits` of one agent, the :class:`~a2a_hub.engine.gate.Gate` its engine asks
(``engine.gate``); an agent no entry names gets none and pays nothing.

Who a caller is for an entry's ``caller``: its API key's id or its principal (a token's
``sub``), ``anonymous`` for a caller without credentials, ``*`` for everyone (each caller
with a counter of its own).  A ``rate`` of N per period with ``burst`` B is the library's
item of B per (period * B / N) seconds (rounded up to a whole second when B != N): the
average stays N per period, and up to B may come at once.  ``max_running`` is counted per
instance (:class:`~a2a_hub.engine.gate.RunningCount`).

Over a limit the engine raises :class:`~a2a_hub.protocol.errors.RateLimitedError` with the
delay until the window lets the next request through; each binding answers it in its own
shape (429 + ``Retry-After``, ``RESOURCE_EXHAUSTED`` + ``RetryInfo``, a WebSocket ``error``)
and ``a2a_rate_limited_total{agent,method}`` counts it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from limits import RateLimitItem, RateLimitItemPerSecond
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter

from a2a_hub import metrics
from a2a_hub.engine.caller import Caller
from a2a_hub.engine.gate import METHODS
from a2a_hub.protocol.errors import RateLimitedError
from a2a_hub.settings import SettingsError
from a2a_hub.settings.limits import LimitSpec, parse_rate

__all__ = ["AgentLimits", "Limits", "caller_names"]


def caller_names(caller: Caller) -> tuple[str, ...]:
    """The names an entry's ``caller`` may give this caller."""
    if caller.anonymous:
        return ("anonymous",)
    names = [caller.principal or ""]
    if caller.key_id is not None:
        names.append(caller.key_id)
    return tuple(names)


def _identity(caller: Caller) -> str:
    """The counter of a caller: its key id, else its principal, else ``anonymous``."""
    return caller.key_id or caller.principal or "anonymous"


@dataclass(frozen=True)
class _Rule:
    """One entry of the settings, ready: its rate as the library's item."""

    index: int
    spec: LimitSpec
    item: RateLimitItem | None

    def applies(self, names: tuple[str, ...], method: str | None) -> bool:
        caller, wanted = self.spec.caller, self.spec.method
        return (caller == "*" or caller in names) and (
            method is None or wanted == "*" or wanted == method
        )


def _item(spec: LimitSpec) -> RateLimitItem | None:
    if spec.rate is None:
        return None
    count, period = parse_rate(spec.rate)
    burst = spec.burst or count
    window = period if burst == count else period * burst / count
    return RateLimitItemPerSecond(burst, max(1, math.ceil(window)))


class Limits:
    """The hub's ``[[limits]]`` over one storage (see the module's docstring)."""

    def __init__(self, specs: list[LimitSpec], store_url: str) -> None:
        self.rules = [_Rule(i, spec, _item(spec)) for i, spec in enumerate(specs)]
        for rule in self.rules:
            if rule.spec.method != "*" and rule.spec.method not in METHODS:
                raise SettingsError(
                    f"limit method {rule.spec.method!r} is not an A2A method: "
                    f"one of {', '.join(METHODS)} or '*'"
                )
        self.store_url = store_url
        self.shared = store_url.startswith(("redis://", "rediss://"))
        self._storage: Storage | None = None
        self._limiter: SlidingWindowCounterRateLimiter | None = None

    def for_agent(self, agent_id: str) -> AgentLimits | None:
        """The gate of ``agent_id``, or ``None`` when no entry names it."""
        rules = [r for r in self.rules if r.spec.agent in ("*", agent_id)]
        return AgentLimits(self, agent_id, rules) if rules else None

    @property
    def limiter(self) -> SlidingWindowCounterRateLimiter:
        """The library's limiter, made on first use (the memory storage needs a loop)."""
        if self._limiter is None:
            self._storage = self._open_storage()
            self._limiter = SlidingWindowCounterRateLimiter(self._storage)
        return self._limiter

    def _open_storage(self) -> Storage:
        if not self.shared:
            return MemoryStorage()
        from a2a_hub.stores.redis.options import RedisOptions

        options = RedisOptions.from_url(self.store_url)
        return RedisStorage(
            "async+" + options.connect_url,
            implementation="redispy",
            key_prefix=f"{options.prefix}:limits",
        )

    async def close(self) -> None:
        """Stop the memory storage's expiry task, close the Redis connections."""
        storage, self._storage, self._limiter = self._storage, None, None
        if isinstance(storage, MemoryStorage):
            timer = storage.timer
            if timer is not None and not timer.done():
                timer.cancel()
                await asyncio.gather(timer, return_exceptions=True)
        elif storage is not None:  # the redis-py client the library's bridge made
            client: Any = getattr(getattr(storage, "bridge", None), "storage", None)
            if client is not None:
                await client.aclose()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[Limits]:
        """The service of the hub: nothing to start; the storage closed at the end."""
        try:
            yield self
        finally:
            await self.close()


class AgentLimits:
    """The gate of one agent (:class:`~a2a_hub.engine.gate.Gate`): its rules, with the
    rules matching each (caller, method) worked out once and kept."""

    def __init__(self, limits: Limits, agent_id: str, rules: list[_Rule]) -> None:
        self.limits = limits
        self.agent_id = agent_id
        self.rules = rules
        self._rated: dict[tuple[tuple[str, ...], str], tuple[_Rule, ...]] = {}
        self._caps: dict[tuple[str, ...], int | None] = {}

    def _matching(self, names: tuple[str, ...], method: str) -> tuple[_Rule, ...]:
        key = (names, method)
        found = self._rated.get(key)
        if found is None:
            if len(self._rated) > 10_000:
                self._rated.clear()
            found = tuple(r for r in self.rules if r.item is not None and r.applies(names, method))
            self._rated[key] = found
        return found

    async def admit(self, caller: Caller, method: str) -> None:
        """Count the request against each rate that applies; over one: RateLimitedError."""
        rules = self._matching(caller_names(caller), method)
        if not rules:
            return
        limiter = self.limits.limiter
        who = _identity(caller)
        for rule in rules:
            assert rule.item is not None
            ids = (self.agent_id, rule.spec.method, who, str(rule.index))
            if await limiter.hit(rule.item, *ids):
                continue
            stats = await limiter.get_window_stats(rule.item, *ids)
            delay = max(0.05, stats.reset_time - time.time())
            metrics.rate_limited(self.agent_id, method)
            raise RateLimitedError(
                f"Rate limit {rule.spec.rate} reached for {method} on agent "
                f"{self.agent_id!r}; retry in {delay:.1f} s",
                retry_after=delay,
            )

    def max_running(self, caller: Caller) -> int | None:
        """The smallest ``max_running`` of the entries that apply to ``caller``."""
        names = caller_names(caller)
        if names in self._caps:
            return self._caps[names]
        caps = [
            r.spec.max_running
            for r in self.rules
            if r.spec.max_running is not None and r.applies(names, None)
        ]
        cap = min(caps) if caps else None
        if len(self._caps) > 10_000:
            self._caps.clear()
        self._caps[names] = cap
        return cap

    def describe(self, caller: Caller) -> list[dict[str, Any]]:
        """The limits that apply to ``caller`` on this agent (for its extended card)."""
        names = caller_names(caller)
        out: list[dict[str, Any]] = []
        for rule in self.rules:
            if not rule.applies(names, None):
                continue
            entry: dict[str, Any] = {"method": rule.spec.method}
            if rule.spec.rate is not None:
                count, _ = parse_rate(rule.spec.rate)
                entry["rate"] = rule.spec.rate
                entry["burst"] = rule.spec.burst or count
            if rule.spec.max_running is not None:
                entry["maxRunning"] = rule.spec.max_running
            out.append(entry)
        return out
