"""Client transports: A2A 1.0 JSON-RPC, 1.0 HTTP+JSON (REST), 0.3 JSON-RPC and 0.1 JSON-RPC.

Each speaks one binding and version on the wire and exposes the same canonical
operations (the 1.0 types of :mod:`a2a_hub.protocol.types`); errors the peer
returns are raised as the typed errors of :mod:`a2a_hub.protocol.errors`.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any, Generic, NamedTuple, TypeVar

import httpx
import msgspec

from a2a_hub.client.sse import SseFrame, read_sse
from a2a_hub.protocol import v01, v03
from a2a_hub.protocol.errors import (
    A2AError,
    InvalidAgentResponseError,
    UnsupportedOperationError,
    error_from_code,
    error_from_reason,
)
from a2a_hub.protocol.types import (
    Artifact,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
)

__all__ = [
    "JsonRpc01Transport",
    "JsonRpc03Transport",
    "JsonRpc10Transport",
    "RestTransport",
    "StreamItem",
    "Transport",
]

T = TypeVar("T")
_enc = msgspec.json.Encoder()
_ids = itertools.count(1)


class StreamItem(NamedTuple):
    """One streamed event: the SSE ``id:`` (the task's event number, if the server sends one)."""

    id: int | None
    response: StreamResponse


class _RpcError(msgspec.Struct):
    code: int
    message: str
    data: Any = None


class _RpcResponse(msgspec.Struct, Generic[T]):
    result: T | None = None
    error: _RpcError | None = None


class _RestErrorInfo(msgspec.Struct):
    reason: str = ""


class _RestErrorBody(msgspec.Struct):
    message: str = ""
    code: int = 0
    details: list[_RestErrorInfo] = msgspec.field(default_factory=list)


class _RestError(msgspec.Struct):
    error: _RestErrorBody


class _PushList(msgspec.Struct, rename="camel"):
    configs: list[TaskPushNotificationConfig] = msgspec.field(default_factory=list)


def _sse_id(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _bad_response(url: str, what: str) -> InvalidAgentResponseError:
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


# --- JSON-RPC ------------------------------------------------------------------------


class _JsonRpc(Transport):
    binding = "JSONRPC"

    def _envelope(self, method: str, params: Any) -> bytes:
        return _enc.encode({"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params})

    def _headers(self, accept: str = "application/json") -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": accept, **self.headers}
        if self.version in ("1.0", "0.3"):
            headers.setdefault("A2A-Version", self.version)
        return headers

    async def _call(self, method: str, params: Any, kind: type[T]) -> T:
        response = await self.http.post(
            self.url, content=self._envelope(method, params), headers=self._headers()
        )
        return self._result(response.content, response.status_code, kind)

    def _result(self, body: bytes, status: int, kind: type[T]) -> T:
        try:
            answer = msgspec.json.decode(body, type=_RpcResponse[kind])  # type: ignore[valid-type]
        except msgspec.DecodeError as exc:
            raise _bad_response(self.url, f"HTTP {status}, {body[:200]!r} ({exc})") from None
        if answer.error is not None:
            raise error_from_code(answer.error.code, answer.error.message, answer.error.data)
        if answer.result is None and kind is not type(None):
            raise _bad_response(self.url, "a JSON-RPC response with neither result nor error")
        return answer.result  # type: ignore[return-value]

    def _refusal(self, body: bytes, status: int) -> Exception:
        self._result(body, status, object)  # raises the peer's error, if it sent one
        return _bad_response(self.url, f"no event stream (HTTP {status})")

    async def _events(
        self, method: str, params: Any, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        extra = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        request = self.http.build_request(
            "POST",
            self.url,
            content=self._envelope(method, params),
            headers={**self._headers("text/event-stream"), **extra},
        )
        async for frame in self._sse(request):
            event = self._decode_frame(frame.data.encode())
            if event is not None:
                yield StreamItem(_sse_id(frame.id), event)

    def _decode_frame(self, data: bytes) -> StreamResponse | None:
        return self._decode_event(self._result(data, 200, Any))

    def _decode_event(self, result: Any) -> StreamResponse | None:
        return msgspec.convert(result, StreamResponse)

    def _subscribe_params(self, task_id: str, last_event_id: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {"id": task_id}
        if last_event_id is not None:
            params["metadata"] = {"lastEventId": last_event_id}
        return params


class JsonRpc10Transport(_JsonRpc):
    """A2A 1.0 over JSON-RPC (``SendMessage``, ``GetTask`` …)."""

    version = "1.0"

    async def send(self, request: SendMessageRequest) -> Task | Message:
        answer = await self._call("SendMessage", request, SendMessageResponse)
        result = answer.task or answer.message
        if result is None:
            raise _bad_response(self.url, "SendMessage answered neither a task nor a message")
        return result

    def stream(self, request: SendMessageRequest) -> AsyncIterator[StreamItem]:
        return self._events("SendStreamingMessage", request)

    def subscribe(
        self, task_id: str, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        params = self._subscribe_params(task_id, last_event_id)
        return self._events("SubscribeToTask", params, last_event_id)

    def _decode_frame(self, data: bytes) -> StreamResponse | None:
        return self._result(data, 200, StreamResponse)

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        params: dict[str, Any] = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return await self._call("GetTask", params, Task)

    async def list_tasks(self, request: ListTasksRequest) -> ListTasksResponse:
        return await self._call("ListTasks", request, ListTasksResponse)

    async def cancel_task(self, task_id: str) -> Task:
        return await self._call("CancelTask", {"id": task_id}, Task)

    async def create_push_config(
        self, config: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        return await self._call(
            "CreateTaskPushNotificationConfig", config, TaskPushNotificationConfig
        )

    async def get_push_config(self, task_id: str, config_id: str) -> TaskPushNotificationConfig:
        return await self._call(
            "GetTaskPushNotificationConfig",
            {"taskId": task_id, "id": config_id},
            TaskPushNotificationConfig,
        )

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        answer = await self._call("ListTaskPushNotificationConfigs", {"taskId": task_id}, _PushList)
        return answer.configs

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        await self._call(
            "DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": config_id}, type(None)
        )


def _v03_send_params(request: SendMessageRequest) -> dict[str, Any]:
    params: dict[str, Any] = {"message": v03.encode_message(request.message)}
    config = request.configuration
    if config is not None:
        c: dict[str, Any] = {"blocking": not config.return_immediately}
        if config.accepted_output_modes:
            c["acceptedOutputModes"] = config.accepted_output_modes
        if config.history_length is not None:
            c["historyLength"] = config.history_length
        params["configuration"] = c
    if request.metadata:
        params["metadata"] = request.metadata
    return params


class JsonRpc03Transport(_JsonRpc):
    """A2A 0.3 over JSON-RPC (``message/send``, ``tasks/get`` …, ``kind``-tagged shapes)."""

    version = "0.3"

    async def send(self, request: SendMessageRequest) -> Task | Message:
        result = await self._call("message/send", _v03_send_params(request), Any)
        return v03.decode_send_result(result)

    def stream(self, request: SendMessageRequest) -> AsyncIterator[StreamItem]:
        return self._events("message/stream", _v03_send_params(request))

    def subscribe(
        self, task_id: str, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        params = self._subscribe_params(task_id, last_event_id)
        return self._events("tasks/resubscribe", params, last_event_id)

    def _decode_event(self, result: Any) -> StreamResponse | None:
        return v03.decode_stream_event(result)

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        params: dict[str, Any] = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return v03.decode_task(await self._call("tasks/get", params, Any))

    async def list_tasks(self, request: ListTasksRequest) -> ListTasksResponse:
        raise self._unsupported("ListTasks (tasks/list)")

    async def cancel_task(self, task_id: str) -> Task:
        return v03.decode_task(await self._call("tasks/cancel", {"id": task_id}, Any))


class JsonRpc01Transport(_JsonRpc):
    """The A2A 0.1 legacy methods (``tasks/send`` with client-chosen ids, ``sessionId``)."""

    version = "0.1"

    def _send_params(self, request: SendMessageRequest) -> dict[str, Any]:
        message = request.message
        params: dict[str, Any] = {
            "id": message.task_id or v01.new_legacy_id(),
            "message": v01.encode_message(message),
        }
        if message.context_id:
            params["sessionId"] = message.context_id
        config = request.configuration
        if config is not None and config.history_length is not None:
            params["historyLength"] = config.history_length
        if request.metadata:
            params["metadata"] = request.metadata
        return params

    async def send(self, request: SendMessageRequest) -> Task | Message:
        return v01.decode_task(await self._call("tasks/send", self._send_params(request), Any))

    def stream(self, request: SendMessageRequest) -> AsyncIterator[StreamItem]:
        return self._events("tasks/sendSubscribe", self._send_params(request))

    def subscribe(
        self, task_id: str, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        params = self._subscribe_params(task_id, last_event_id)
        return self._events("tasks/resubscribe", params, last_event_id)

    def _decode_event(self, result: Any) -> StreamResponse | None:
        if not isinstance(result, dict) or not isinstance(result.get("id"), str):
            raise _bad_response(self.url, "a 0.1 stream event without an id")
        task_id: str = result["id"]
        if "status" in result:
            task = v01.decode_task({"id": task_id, "status": result["status"]})
            return StreamResponse(
                status_update=TaskStatusUpdateEvent(
                    task_id=task_id, context_id="", status=task.status
                )
            )
        if "artifact" in result:
            art = result["artifact"]
            task = v01.decode_task(
                {"id": task_id, "status": {"state": "working"}, "artifacts": [art]}
            )
            decoded = (task.artifacts or [Artifact(artifact_id="", parts=[])])[0]
            index = art.get("index", 0) if isinstance(art, dict) else 0
            decoded = msgspec.structs.replace(decoded, artifact_id=f"artifact-{index}")
            return StreamResponse(
                artifact_update=TaskArtifactUpdateEvent(
                    task_id=task_id,
                    context_id="",
                    artifact=decoded,
                    append=bool(art.get("append")),
                    last_chunk=bool(art.get("lastChunk")),
                )
            )
        return None

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        params: dict[str, Any] = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return v01.decode_task(await self._call("tasks/get", params, Any))

    async def list_tasks(self, request: ListTasksRequest) -> ListTasksResponse:
        raise self._unsupported("ListTasks")

    async def cancel_task(self, task_id: str) -> Task:
        return v01.decode_task(await self._call("tasks/cancel", {"id": task_id}, Any))


# --- HTTP+JSON -----------------------------------------------------------------------


class RestTransport(Transport):
    """A2A 1.0 over HTTP+JSON: ``POST {url}/message:send``, ``GET {url}/tasks/{id}`` …"""

    binding = "HTTP+JSON"
    version = "1.0"

    def _headers(self, accept: str = "application/json") -> dict[str, str]:
        return {"A2A-Version": "1.0", "Accept": accept, **self.headers}

    async def _request(
        self,
        method: str,
        path: str,
        kind: type[T],
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
    ) -> T:
        headers = self._headers()
        content = None
        if body is not None:
            content = _enc.encode(body)
            headers["Content-Type"] = "application/json"
        response = await self.http.request(
            method, self.url + path, content=content, headers=headers, params=params
        )
        return self._decode(response.content, response.status_code, kind)

    def _decode(self, body: bytes, status: int, kind: type[T]) -> T:
        if status >= 400:
            raise self._error(body, status)
        if kind is type(None):
            return None  # type: ignore[return-value,unused-ignore]
        try:
            return msgspec.json.decode(body, type=kind)
        except msgspec.DecodeError as exc:
            raise _bad_response(self.url, f"HTTP {status}: {exc}") from None

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
            raise _bad_response(self.url, "message:send answered neither a task nor a message")
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
        all_headers = {**self._headers("text/event-stream"), **(headers or {})}
        content = None
        if body is not None:
            content = _enc.encode(body)
            all_headers["Content-Type"] = "application/json"
        request = self.http.build_request(
            method, self.url + path, content=content, headers=all_headers
        )
        async for frame in self._sse(request):
            if frame.event == "error":
                raise self._error(frame.data.encode(), 500)
            event = msgspec.json.decode(frame.data, type=StreamResponse)
            yield StreamItem(_sse_id(frame.id), event)

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
        answer = await self._request("GET", f"/tasks/{task_id}/pushNotificationConfigs", _PushList)
        return answer.configs

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        await self._request(
            "DELETE", f"/tasks/{task_id}/pushNotificationConfigs/{config_id}", type(None)
        )
