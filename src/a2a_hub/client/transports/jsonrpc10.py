"""A2A 1.0 over JSON-RPC (``SendMessage``, ``GetTask`` …)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from a2a_hub.client.transports.base import PushList, StreamItem, bad_response
from a2a_hub.client.transports.jsonrpc import JsonRpcTransport
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

__all__ = ["JsonRpc10Transport"]


class JsonRpc10Transport(JsonRpcTransport):
    """A2A 1.0 over JSON-RPC (``SendMessage``, ``GetTask`` …)."""

    version = "1.0"

    async def send(self, request: SendMessageRequest) -> Task | Message:
        answer = await self._call("SendMessage", request, SendMessageResponse)
        result = answer.task or answer.message
        if result is None:
            raise bad_response(self.url, "SendMessage answered neither a task nor a message")
        return result

    def stream(self, request: SendMessageRequest) -> AsyncIterator[StreamItem]:
        return self._events("SendStreamingMessage", request)

    def subscribe(
        self, task_id: str, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        return self._resubscribe("SubscribeToTask", task_id, last_event_id)

    def _decode_frame(self, data: bytes) -> StreamResponse | None:
        return self._result(data, 200, StreamResponse)

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        return await self._call("GetTask", self._task_query(task_id, history_length), Task)

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
        answer = await self._call("ListTaskPushNotificationConfigs", {"taskId": task_id}, PushList)
        return answer.configs

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        await self._call(
            "DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": config_id}, type(None)
        )
