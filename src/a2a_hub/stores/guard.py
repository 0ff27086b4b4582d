"""Store outages: the error for "the store's server cannot be reached" and the decorator
that turns a backend's connection failures into it (and records the store's metrics)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from a2a_hub import metrics
from a2a_hub.protocol.errors import StoreUnavailableError
from a2a_hub.stores import outage

__all__ = ["guarded", "now", "unavailable_error"]


def unavailable_error(url: str, exc: BaseException) -> StoreUnavailableError:
    """The error for "the store's server cannot be reached", naming the (password-free) URL."""
    cause = getattr(exc, "orig", None) or exc
    detail = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    reason = f"{type(cause).__name__}: {detail}" if detail else type(cause).__name__
    return StoreUnavailableError(f"Task store {url} is unavailable ({reason})")


class _Guardable(Protocol):
    def _unavailable(self, exc: BaseException) -> StoreUnavailableError: ...


_S = TypeVar("_S", bound=_Guardable)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def guarded(
    unreachable: Callable[[BaseException], bool],
) -> Callable[
    [Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]]],
    Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]],
]:
    """Decorate a backend's methods: failures ``unreachable`` says mean "cannot reach the
    server" become :class:`StoreUnavailableError` (through the backend's ``_unavailable``)."""

    def decorate(
        method: Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]],
    ) -> Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]]:
        operation = method.__name__

        @functools.wraps(method)
        async def wrapper(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            record = metrics.enabled()
            start = time.perf_counter()
            try:
                result = await method(self, *args, **kwargs)
            except Exception as exc:
                down = unreachable(exc)
                if record:
                    metrics.store_failed(_backend(self), operation, down)
                if down:
                    error = self._unavailable(exc)
                    outage.failed(self, error.message)
                    raise error from exc
                raise
            if record:
                metrics.store_op(_backend(self), operation, time.perf_counter() - start)
            outage.answered(self)
            return result

        return wrapper

    return decorate


def _backend(store: object) -> str:
    """The ``backend`` label of a store's metrics: its SQL dialect, else its class."""
    return getattr(store, "dialect", None) or type(store).__name__


def now() -> float:
    """Wall-clock seconds, the time base of ``updated_at`` in every backend."""
    return time.time()
