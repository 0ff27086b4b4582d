"""What the JSON-RPC transports (1.0, 0.3, 0.1) share: envelopes, results, event streams."""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import AsyncIterator
from typing import Any, Generic, TypeVar

import msgspec

from a2a_hub import tracing
from a2a_hub.client.transports.base import StreamItem, Transport, bad_response, encoder, sse_id
from a2a_hub.protocol.errors import error_from_code
from a2a_hub.protocol.types import StreamResponse, Task

__all__ = ["JsonRpcTransport", "LegacyJsonRpcTransport"]

T = TypeVar("T")
_ids = itertools.count(1)


class _RpcError(msgspec.Struct):
    code: int
    message: str
    data: Any = None


class _RpcResponse(msgspec.Struct, Generic[T]):
    result: T | None = None
    error: _RpcError | None = None


class JsonRpcTransport(Transport):
    """A JSON-RPC 2.0 binding: one POST a call, SSE for the streaming methods."""

    binding = "JSONRPC"

    def _envelope(self, method: str, params: Any) -> bytes:
        return encoder.encode(
            {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
        )

    def _headers(self, accept: str = "application/json") -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": accept, **self.headers}
        if self.version in ("1.0", "0.3"):
            headers.setdefault("A2A-Version", self.version)
        return tracing.inject_headers(headers)

    async def _call(self, method: str, params: Any, kind: type[T]) -> T:
        response = await self.http.post(
            self.url, content=self._envelope(method, params), headers=self._headers()
        )
        return self._result(response.content, response.status_code, kind)

    def _result(self, body: bytes, status: int, kind: type[T]) -> T:
        try:
            answer = msgspec.json.decode(body, type=_RpcResponse[kind])  # type: ignore[valid-type]
        except msgspec.DecodeError as exc:
            raise bad_response(self.url, f"HTTP {status}, {body[:200]!r} ({exc})") from None
        if answer.error is not None:
            raise error_from_code(answer.error.code, answer.error.message, answer.error.data)
        if answer.result is None and kind is not type(None):
            raise bad_response(self.url, "a JSON-RPC response with neither result nor error")
        return answer.result  # type: ignore[return-value]

    def _refusal(self, body: bytes, status: int) -> Exception:
        self._result(body, status, object)  # raises the peer's error, if it sent one
        return bad_response(self.url, f"no event stream (HTTP {status})")

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
                yield StreamItem(sse_id(frame.id), event)

    def _decode_frame(self, data: bytes) -> StreamResponse | None:
        return self._decode_event(self._result(data, 200, Any))

    def _decode_event(self, result: Any) -> StreamResponse | None:
        return msgspec.convert(result, StreamResponse)

    @staticmethod
    def _task_query(task_id: str, history_length: int | None) -> dict[str, Any]:
        """``{id, historyLength?}``: the params of GetTask / ``tasks/get`` in every version."""
        params: dict[str, Any] = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return params

    def _subscribe_params(self, task_id: str, last_event_id: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {"id": task_id}
        if last_event_id is not None:
            params["metadata"] = {"lastEventId": last_event_id}
        return params

    def _resubscribe(
        self, method: str, task_id: str, last_event_id: int | None
    ) -> AsyncIterator[StreamItem]:
        """Follow a task with ``method`` (``SubscribeToTask`` or ``tasks/resubscribe``)."""
        return self._events(method, self._subscribe_params(task_id, last_event_id), last_event_id)


class LegacyJsonRpcTransport(JsonRpcTransport):
    """The pre-1.0 versions (0.3, 0.1): the task methods they share (``tasks/get``,
    ``tasks/cancel``, ``tasks/resubscribe``), each version reading tasks with its codec."""

    @abstractmethod
    def _task(self, result: Any) -> Task:
        """The canonical task a version-shaped ``result`` describes."""

    def subscribe(
        self, task_id: str, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        return self._resubscribe("tasks/resubscribe", task_id, last_event_id)

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        query = self._task_query(task_id, history_length)
        return self._task(await self._call("tasks/get", query, Any))

    async def cancel_task(self, task_id: str) -> Task:
        return self._task(await self._call("tasks/cancel", {"id": task_id}, Any))
