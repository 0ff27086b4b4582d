"""A2A 1.0 over HTTP+JSON (REST): ``POST {url}/message:send``, ``GET {url}/tasks/{id}`` …"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, TypeVar

import httpx
import msgspec

from a2a_hub import tracing
from a2a_hub.client.transports.base import (
    PushList,
    StreamItem,
    Transport,
    bad_response,
    encoder,
    sse_id,
)
from a2a_hub.protocol.errors import A2AError, error_from_reason
from a2a_hub.protocol.types import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
)

__all__ = ["RestTransport"]

T = TypeVar("T")


class _RestErrorInfo(msgspec.Struct):
    reason: str = ""


class _RestErrorBody(msgspec.Struct):
    message: str = ""
    code: int = 0
    details: list[_RestErrorInfo] = msgspec.field(default_factory=list)


class _RestError(msgspec.Struct):
    error: _RestErrorBody


class RestTransport(Transport):
    """A2A 1.0 over HTTP+JSON: ``POST {url}/message:send``, ``GET {url}/tasks/{id}`` …"""

    binding = "HTTP+JSON"
    version = "1.0"

    def _build(
        self,
        method: str,
        path: str,
        *,
        accept: str = "application/json",
        body: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Request:
        """The request for ``method path`` (``body`` JSON-encoded when given)."""
        all_headers = {"A2A-Version": "1.0", "Accept": accept, **self.headers, **(headers or {})}
        content = None
        if body is not None:
            content = encoder.encode(body)
            all_headers["Content-Type"] = "application/json"
        tracing.inject_headers(all_headers)
        return self.http.build_request(
            method, self.url + path, content=content, headers=all_headers, params=params
        )

    async def _request(
        self,
        method: str,
        path: str,
        kind: type[T],
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
    ) -> T:
        response = await self.http.send(self._build(method, path, body=body, params=params))
        return self._decode(response.content, response.status_code, kind)

    def _decode(self, body: bytes, status: int, kind: type[T]) -> T:
        if status >= 400:
            raise self._error(body, status)
        if kind is type(None):
            return None  # type: ignore[return-value,unused-ignore]
        try:
            return msgspec.json.decode(body, type=kind)
        except msgspec.DecodeError as exc:
            raise bad_response(self.url, f"HTTP {status}: {exc}") from None

    def _refusal(self, body: bytes, status: int) -> Exception:
        return self._error(body, status)

    def _error(self, body: bytes, status: int) -> A2AError:
        try:
            err = msgspec.json.decode(body, type=_RestError).error
        except msgspec.DecodeError:
            text = body[:200].decode(errors="replace")
            return error_from_reason("", f"HTTP {status} from {self.url}: {text}", status)
        reason = err.details[0].reason if err.details else ""
        return error_from_reason(reason, err.message or f"HTTP {status}", status)

    async def send(self, request: SendMessageRequest) -> Task | Message:
        answer = await self._request("POST", "/message:send", SendMessageResponse, body=request)
        result = answer.task or answer.message
        if result is None:
            raise bad_response(self.url, "message:send answered neither a task nor a message")
        return result

    def stream(self, request: SendMessageRequest) -> AsyncIterator[StreamItem]:
        return self._events("POST", "/message:stream", body=request)

    def subscribe(
        self, task_id: str, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        return self._events("GET", f"/tasks/{task_id}:subscribe", headers=headers)

    async def _events(
        self, method: str, path: str, *, body: Any = None, headers: dict[str, str] | None = None
    ) -> AsyncIterator[StreamItem]:
        request = self._build(method, path, accept="text/event-stream", body=body, headers=headers)
        async for frame in self._sse(request):
            if frame.event == "error":
                raise self._error(frame.data.encode(), 500)
            event = msgspec.json.decode(frame.data, type=StreamResponse)
            yield StreamItem(sse_id(frame.id), event)

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        params = {} if history_length is None else {"historyLength": history_length}
        return await self._request("GET", f"/tasks/{task_id}", Task, params=params)

    async def list_tasks(self, request: ListTasksRequest) -> ListTasksResponse:
        params = {k: v for k, v in msgspec.to_builtins(request).items() if v is not None}
        for key, value in params.items():
            if isinstance(value, bool):
                params[key] = "true" if value else "false"
        return await self._request("GET", "/tasks", ListTasksResponse, params=params)

    async def cancel_task(self, task_id: str) -> Task:
        return await self._request("POST", f"/tasks/{task_id}:cancel", Task, body={})

    async def create_push_config(
        self, config: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        return await self._request(
            "POST",
            f"/tasks/{config.task_id}/pushNotificationConfigs",
            TaskPushNotificationConfig,
            body=config,
        )

    async def get_push_config(self, task_id: str, config_id: str) -> TaskPushNotificationConfig:
        return await self._request(
            "GET",
            f"/tasks/{task_id}/pushNotificationConfigs/{config_id}",
            TaskPushNotificationConfig,
        )

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        answer = await self._request("GET", f"/tasks/{task_id}/pushNotificationConfigs", PushList)
        return answer.configs

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        await self._request(
            "DELETE", f"/tasks/{task_id}/pushNotificationConfigs/{config_id}", type(None)
        )
