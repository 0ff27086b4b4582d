"""A2A 0.3 over JSON-RPC (``message/send``, ``tasks/get`` …, ``kind``-tagged shapes)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from a2a_hub.client.transports.base import StreamItem
from a2a_hub.client.transports.jsonrpc import LegacyJsonRpcTransport
from a2a_hub.protocol import v03
from a2a_hub.protocol.types import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
)

__all__ = ["JsonRpc03Transport"]


def _send_params(request: SendMessageRequest) -> dict[str, Any]:
    params: dict[str, Any] = {"message": v03.encode_message(request.message)}
    config = request.configuration
    if config is not None:
        c: dict[str, Any] = {"blocking": not config.return_immediately}
        if config.accepted_output_modes:
            c["acceptedOutputModes"] = config.accepted_output_modes
        if config.history_length is not None:
            c["historyLength"] = config.history_length
        if config.task_push_notification_config is not None:
            pc = config.task_push_notification_config
            c["pushNotificationConfig"] = v03.encode_push_config(pc)["pushNotificationConfig"]
        params["configuration"] = c
    if request.metadata:
        params["metadata"] = request.metadata
    return params


class JsonRpc03Transport(LegacyJsonRpcTransport):
    """A2A 0.3 over JSON-RPC (``message/send``, ``tasks/get`` …, ``kind``-tagged shapes)."""

    version = "0.3"

    async def send(self, request: SendMessageRequest) -> Task | Message:
        result = await self._call("message/send", _send_params(request), Any)
        return v03.decode_send_result(result)

    def stream(self, request: SendMessageRequest) -> AsyncIterator[StreamItem]:
        return self._events("message/stream", _send_params(request))

    def _decode_event(self, result: Any) -> StreamResponse | None:
        return v03.decode_stream_event(result)

    def _task(self, result: Any) -> Task:
        return v03.decode_task(result)

    async def list_tasks(self, request: ListTasksRequest) -> ListTasksResponse:
        raise self._unsupported("ListTasks (tasks/list)")

    async def create_push_config(
        self, config: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        params = v03.encode_push_config(config)
        result = await self._call("tasks/pushNotificationConfig/set", params, Any)
        return v03.decode_push_config_set(result)

    async def get_push_config(self, task_id: str, config_id: str) -> TaskPushNotificationConfig:
        params = {"id": task_id, "pushNotificationConfigId": config_id}
        result = await self._call("tasks/pushNotificationConfig/get", params, Any)
        return v03.decode_push_config_set(result)

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        result = await self._call(
            "tasks/pushNotificationConfig/list", {"id": task_id}, list[dict[str, Any]]
        )
        return [v03.decode_push_config_set(c) for c in result]

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        params = {"id": task_id, "pushNotificationConfigId": config_id}
        await self._call("tasks/pushNotificationConfig/delete", params, type(None))
