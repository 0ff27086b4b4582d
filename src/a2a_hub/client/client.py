"""The A2A client: one async API for any A2A agent, whatever version it speaks."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx
import msgspec

from a2a_hub._backoff import Backoff
from a2a_hub.client.card import fetch_card
from a2a_hub.client.card_signature import CardCheck
from a2a_hub.client.transports import (
    JsonRpc01Transport,
    JsonRpc03Transport,
    JsonRpc10Transport,
    RestTransport,
    StreamItem,
    Transport,
    WebSocketTransport,
)
from a2a_hub.protocol.errors import A2AError, UnsupportedOperationError
from a2a_hub.protocol.types import (
    AgentCard,
    AgentInterface,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
)

__all__ = ["TRANSPORTS", "A2AClient", "RetryPolicy", "StreamLostError", "ends", "user_message"]

#: Transport names, in the order they are preferred.
TRANSPORTS: dict[str, tuple[str, str, type[Transport]]] = {
    "jsonrpc-1.0": ("JSONRPC", "1.0", JsonRpc10Transport),
    "rest-1.0": ("HTTP+JSON", "1.0", RestTransport),
    "jsonrpc-0.3": ("JSONRPC", "0.3", JsonRpc03Transport),
    "jsonrpc-0.1": ("JSONRPC", "0.1", JsonRpc01Transport),
    # only when asked for: a2a-hub serves it at <the JSON-RPC 1.0 URL>/ws (preview)
    "ws": ("WEBSOCKET", "1.0", WebSocketTransport),
}


class StreamLostError(A2AError):
    """A stream could not be resumed after the configured number of tries."""


RetryPolicy = Backoff
"""Reconnection of dropped streams: by default 1 s at first, doubling, ±20 % jitter, at most
30 s between tries, 5 tries (see :class:`~a2a_hub._backoff.Backoff`)."""


def user_message(
    content: str | Sequence[Part] | Message,
    *,
    context_id: str | None = None,
    task_id: str | None = None,
) -> Message:
    """A user message (a fresh ``messageId``) from text, parts, or a message to re-address."""
    if isinstance(content, Message):
        message = content
    else:
        parts = [Part(text=content)] if isinstance(content, str) else list(content)
        message = Message(message_id=str(uuid.uuid4()), role=Role.USER, parts=parts)
    if context_id is not None or task_id is not None:
        message = msgspec.structs.replace(
            message,
            context_id=context_id if context_id is not None else message.context_id,
            task_id=task_id if task_id is not None else message.task_id,
        )
    return message


def ends(event: StreamResponse) -> bool:
    """True for the last event of a turn (see :attr:`StreamResponse.ends_turn`)."""
    return event.ends_turn


def _task_id(event: StreamResponse) -> str | None:
    if event.task is not None:
        return event.task.id
    if event.status_update is not None:
        return event.status_update.task_id
    if event.artifact_update is not None:
        return event.artifact_update.task_id
    return None


class A2AClient:
    """Talks to one agent.  Build it with :meth:`connect` (resolves the card).

    ``transport`` picks the interface: ``"jsonrpc-1.0"``, ``"rest-1.0"``,
    ``"jsonrpc-0.3"`` or ``"jsonrpc-0.1"``; by default the best one the card
    offers, in that order.  ``"ws"`` (only when asked for) is A2A over WebSocket, a preview
    of proposal #1864, at the card's JSON-RPC 1.0 URL plus ``/ws``.
    """

    def __init__(
        self,
        card: AgentCard,
        transport: Transport,
        *,
        http: httpx.AsyncClient,
        owns_http: bool = False,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.card = card
        self.transport = transport
        self.http = http
        self.retry = retry or RetryPolicy()
        self._owns_http = owns_http
        self._sleep = sleep
        #: Called before each try to resume a dropped stream, with (try, most tries,
        #: reason) (the CLI prints "reconnecting (n/5)…"); None: silent.
        self.on_retry: Callable[[int, int | None, str], None] | None = None

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        transport: str | None = None,
        http: httpx.AsyncClient | None = None,
        headers: dict[str, str] | None = None,
        api_key: str | None = None,
        bearer: str | None = None,
        http_timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        card_check: CardCheck | None = None,
    ) -> A2AClient:
        """Fetch the agent card at ``url`` (its signature checked by ``card_check``) and
        pick the interface to use."""
        all_headers = cls.auth_headers(headers, api_key=api_key, bearer=bearer)
        owns = http is None
        client = http or httpx.AsyncClient(timeout=httpx.Timeout(http_timeout, read=None))
        try:
            card, _ = await fetch_card(client, url, all_headers, card_check)
            chosen = _choose(card, transport)
            kind = TRANSPORTS[chosen[0]][2]
            return cls(
                card,
                kind(client, chosen[1].url, all_headers),
                http=client,
                owns_http=owns,
                retry=retry,
            )
        except BaseException:
            if owns:
                await client.aclose()
            raise

    @staticmethod
    def auth_headers(
        headers: dict[str, str] | None = None,
        *,
        api_key: str | None = None,
        bearer: str | None = None,
    ) -> dict[str, str]:
        """``headers`` plus ``x-api-key`` and ``Authorization: Bearer`` when given."""
        all_headers = dict(headers or {})
        if api_key:
            all_headers["x-api-key"] = api_key
        if bearer:
            all_headers["Authorization"] = f"Bearer {bearer}"
        return all_headers

    async def close(self) -> None:
        """Close the transport's socket, and the HTTP client if this object created it."""
        await self.transport.aclose()
        if self._owns_http:
            await self.http.aclose()

    async def __aenter__(self) -> A2AClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def streaming(self) -> bool:
        """Whether the card says the agent streams."""
        return bool(self.card.capabilities.streaming)

    # --- operations ---------------------------------------------------------------------

    def _request(
        self,
        message: str | Sequence[Part] | Message,
        context_id: str | None,
        task_id: str | None,
        configuration: SendMessageConfiguration | None,
        metadata: dict[str, Any] | None,
    ) -> SendMessageRequest:
        return SendMessageRequest(
            message=user_message(message, context_id=context_id, task_id=task_id),
            configuration=configuration,
            metadata=metadata,
        )

    async def send(
        self,
        message: str | Sequence[Part] | Message,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        configuration: SendMessageConfiguration | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Task | Message:
        """Send a message; the agent answers with a Message or a Task (settled unless
        ``configuration.return_immediately``)."""
        request = self._request(message, context_id, task_id, configuration, metadata)
        return await self.transport.send(request)

    def stream(
        self,
        message: str | Sequence[Part] | Message,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        configuration: SendMessageConfiguration | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> AsyncIterator[StreamItem]:
        """Send a message and stream the turn; a dropped connection is resumed (see
        :class:`RetryPolicy`) so every event is seen exactly once."""
        request = self._request(message, context_id, task_id, configuration, metadata)
        return self._resilient(lambda: self.transport.stream(request), task_id)

    def subscribe(
        self, task_id: str, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        """Follow a task (resumed on drops like :meth:`stream`)."""
        return self._resilient(
            lambda: self.transport.subscribe(task_id, last_event_id), task_id, last_event_id
        )

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        """One task."""
        return await self.transport.get_task(task_id, history_length)

    async def list_tasks(
        self, request: ListTasksRequest | None = None, **filters: Any
    ) -> ListTasksResponse:
        """A page of tasks (``context_id``, ``status``, ``page_size``, ``page_token`` …)."""
        return await self.transport.list_tasks(request or ListTasksRequest(**filters))

    async def cancel_task(self, task_id: str) -> Task:
        """Cancel a task; returns it in its new state."""
        return await self.transport.cancel_task(task_id)

    async def create_push_config(
        self, config: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        """Register a webhook for a task."""
        return await self.transport.create_push_config(config)

    async def get_push_config(self, task_id: str, config_id: str) -> TaskPushNotificationConfig:
        """One webhook config."""
        return await self.transport.get_push_config(task_id, config_id)

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        """The webhook configs of a task."""
        return await self.transport.list_push_configs(task_id)

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        """Remove a webhook config."""
        await self.transport.delete_push_config(task_id, config_id)

    # --- resilience ---------------------------------------------------------------------

    async def _resilient(
        self,
        open_first: Callable[[], AsyncIterator[StreamItem]],
        task_id: str | None,
        last_id: int | None = None,
    ) -> AsyncIterator[StreamItem]:
        source = open_first()
        try:
            failures = 0
            resumed = False
            while True:
                try:
                    async for item in source:
                        failures = 0
                        task_id = task_id or _task_id(item.response)
                        if item.id is not None:
                            if last_id is not None and item.id <= last_id:
                                continue
                            last_id = item.id
                        yield item
                        if ends(item.response):
                            return
                    reason = "the server closed the stream before the task settled"
                except httpx.TransportError as exc:
                    reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                except UnsupportedOperationError:
                    # a server without replay refuses to follow a task that ended meanwhile
                    if not resumed or task_id is None:
                        raise
                    task = await self.transport.get_task(task_id)
                    if not task.status.state.terminal:
                        raise
                    yield StreamItem(None, StreamResponse(task=task))
                    return
                if task_id is None:
                    raise StreamLostError(f"stream lost before any task was created ({reason})")
                failures += 1
                if self.retry.exhausted(failures):
                    raise StreamLostError(
                        f"stream of task {task_id} lost and not resumed after "
                        f"{failures - 1} tries ({reason})",
                        data={"taskId": task_id, "lastEventId": last_id},
                    )
                if self.on_retry is not None:
                    self.on_retry(failures, self.retry.max_tries, reason)
                await self._sleep(self.retry.delay(failures))
                source = self.transport.subscribe(task_id, last_id)
                resumed = True
        finally:  # a consumer leaving early closes the transport's stream at once
            close = getattr(source, "aclose", None)
            if close is not None:
                await close()


def _choose(card: AgentCard, wanted: str | None) -> tuple[str, AgentInterface]:
    offered: dict[str, AgentInterface] = {}
    for iface in card.supported_interfaces:
        version = ".".join(iface.protocol_version.split(".")[:2])
        if version.startswith("1."):
            version = "1.0"
        elif version in ("0.2", "0.3"):
            version = "0.3"
        for name, (binding, v, _) in TRANSPORTS.items():
            if iface.protocol_binding == binding and version == v:
                offered.setdefault(name, iface)
    if wanted == "ws" and "ws" not in offered and "jsonrpc-1.0" in offered:
        return wanted, offered["jsonrpc-1.0"]  # a2a-hub: <its JSON-RPC URL>/ws
    if wanted == "jsonrpc-0.1" and wanted not in offered:
        # 0.1 cards name no interfaces, so newer cards never list one; a server that still
        # speaks the 0.1 methods (a2a-hub does) serves them at its JSON-RPC URL
        for fallback in ("jsonrpc-0.3", "jsonrpc-1.0"):
            if fallback in offered:
                return wanted, offered[fallback]
    if wanted is not None:
        if wanted not in TRANSPORTS:
            raise ValueError(f"unknown transport {wanted!r}; choose from {', '.join(TRANSPORTS)}")
        if wanted not in offered:
            raise A2AError(
                f"the agent card offers no {wanted} interface "
                f"(it offers: {', '.join(offered) or 'nothing usable'})"
            )
        return wanted, offered[wanted]
    for name in TRANSPORTS:
        if name in offered:
            return name, offered[name]
    raise A2AError(
        "the agent card offers no interface this client speaks "
        "(JSON-RPC 1.0/0.3/0.1 or HTTP+JSON 1.0)"
    )
