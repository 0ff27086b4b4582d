"""What every client transport shares: the :class:`Transport` interface and stream items.

A transport speaks one binding and version on the wire and exposes the same canonical
operations (the 1.0 types of :mod:`a2a_hub.protocol.types`); errors the peer returns are
raised as the typed errors of :mod:`a2a_hub.protocol.errors`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import NamedTuple

import httpx
import msgspec

from a2a_hub.client.sse import SseFrame, read_sse
from a2a_hub.protocol.errors import InvalidAgentResponseError, UnsupportedOperationError
from a2a_hub.protocol.types import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
)

__all__ = ["StreamItem", "Transport"]

encoder = msgspec.json.Encoder()


class StreamItem(NamedTuple):
    """One streamed event: the SSE ``id:`` (the task's event number, if the server sends one)."""

    id: int | None
    response: StreamResponse


class PushList(msgspec.Struct, rename="camel"):
    """The answer to ``ListTaskPushNotificationConfigs`` (both 1.0 bindings)."""

    configs: list[TaskPushNotificationConfig] = msgspec.field(default_factory=list)


def sse_id(value: str | None) -> int | None:
    """The event number an SSE ``id:`` carries, if it is one."""
    return int(value) if value is not None and value.isdigit() else None


def bad_response(url: str, what: str) -> InvalidAgentResponseError:
    """The error for an answer from ``url`` that makes no sense."""
    return InvalidAgentResponseError(f"unexpected answer from {url}: {what}")


class Transport(ABC):
    """One binding + version to one URL."""

    binding: str = ""
    version: str = ""

    def __init__(self, http: httpx.AsyncClient, url: str, headers: dict[str, str] | None = None):
        self.http = http
        self.url = url.rstrip("/") if self.binding == "HTTP+JSON" else url
        self.headers = dict(headers or {})

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.binding} {self.version} {self.url}>"

    @abstractmethod
    async def send(self, request: SendMessageRequest) -> Task | Message:
        """Send a message and wait (unless ``returnImmediately``) for the answer."""

    @abstractmethod
    def stream(self, request: SendMessageRequest) -> AsyncIterator[StreamItem]:
        """Send a message and stream the events of the turn it starts."""

    @abstractmethod
    def subscribe(
        self, task_id: str, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        """Follow a task: a replay after ``last_event_id`` (or a snapshot), then live events."""

    @abstractmethod
    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        """One task."""

    @abstractmethod
    async def list_tasks(self, request: ListTasksRequest) -> ListTasksResponse:
        """A page of tasks."""

    @abstractmethod
    async def cancel_task(self, task_id: str) -> Task:
        """Cancel a task."""

    async def aclose(self) -> None:
        """Release what the transport holds of its own (a socket); the HTTP client stays."""
        return None

    async def create_push_config(
        self, config: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        """Register a webhook for a task."""
        raise self._unsupported("push notification configs")

    async def get_push_config(self, task_id: str, config_id: str) -> TaskPushNotificationConfig:
        """One webhook config."""
        raise self._unsupported("push notification configs")

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        """Every webhook config of a task."""
        raise self._unsupported("listing push notification configs")

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        """Remove a webhook config."""
        raise self._unsupported("deleting push notification configs")

    async def _sse(self, request: httpx.Request) -> AsyncIterator[SseFrame]:
        """The frames of the event stream ``request`` opens; a refusal (an error status, or
        an answer that is no event stream) raises what :meth:`_refusal` makes of it."""
        response = await self.http.send(request, stream=True)
        try:
            ctype = response.headers.get("content-type", "")
            if response.status_code >= 400 or not ctype.startswith("text/event-stream"):
                raise self._refusal(await response.aread(), response.status_code)
            async for frame in read_sse(response):
                yield frame
        finally:
            await response.aclose()

    @abstractmethod
    def _refusal(self, body: bytes, status: int) -> Exception:
        """The error for an answer that is not the event stream asked for."""

    def _unsupported(self, what: str) -> UnsupportedOperationError:
        return UnsupportedOperationError(f"A2A {self.version} ({self.binding}) has no {what}")
