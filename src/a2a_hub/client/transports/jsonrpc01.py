"""The A2A 0.1 legacy JSON-RPC methods (``tasks/send`` with client-chosen ids, ``sessionId``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec

from a2a_hub.client.transports.base import StreamItem, bad_response
from a2a_hub.client.transports.jsonrpc import LegacyJsonRpcTransport
from a2a_hub.protocol import v01
from a2a_hub.protocol.types import (
    Artifact,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
)

__all__ = ["JsonRpc01Transport"]


class JsonRpc01Transport(LegacyJsonRpcTransport):
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
        if config is not None and config.task_push_notification_config is not None:
            push = v01.encode_push_config(params["id"], config.task_push_notification_config)
            params["pushNotification"] = push["pushNotificationConfig"]
        if request.metadata:
            params["metadata"] = request.metadata
        return params

    async def send(self, request: SendMessageRequest) -> Task | Message:
        return self._task(await self._call("tasks/send", self._send_params(request), Any))

    def stream(self, request: SendMessageRequest) -> AsyncIterator[StreamItem]:
        return self._events("tasks/sendSubscribe", self._send_params(request))

    def _decode_event(self, result: Any) -> StreamResponse | None:
        if not isinstance(result, dict) or not isinstance(result.get("id"), str):
            raise bad_response(self.url, "a 0.1 stream event without an id")
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

    def _task(self, result: Any) -> Task:
        return v01.decode_task(result)

    async def list_tasks(self, request: ListTasksRequest) -> ListTasksResponse:
        raise self._unsupported("ListTasks")

    # 0.1 has one push config per task, whose id is the task's.

    async def create_push_config(
        self, config: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        params = v01.encode_push_config(config.task_id or "", config)
        return v01.decode_push_set(await self._call("tasks/pushNotification/set", params, Any))

    async def get_push_config(self, task_id: str, config_id: str) -> TaskPushNotificationConfig:
        result = await self._call("tasks/pushNotification/get", {"id": task_id}, Any)
        return v01.decode_push_set(result)

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return [await self.get_push_config(task_id, task_id)]
