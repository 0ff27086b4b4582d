"""Conversions between the protobuf messages of ``lf.a2a.v1`` and a2a-hub's wire types.

The canonical model (:mod:`a2a_hub.protocol.types`) mirrors ``a2a.proto`` field by field,
so each conversion is a straight copy.  The rules where the two representations differ:

* **absent vs empty**: proto3 strings and lists cannot be absent; an empty string or list
  becomes ``None`` here, and ``None`` is left unset there.  Fields the proto marks
  ``optional`` (``history_length``, ``page_size``, …) keep their presence both ways.
* **enums**: ``Role`` and ``TaskState`` map by name (``ROLE_USER`` ↔ :attr:`Role.USER`);
  an unknown number (from a newer peer) reads as ``UNSPECIFIED``.
* **timestamps**: ``google.protobuf.Timestamp`` ↔ the ISO 8601 UTC string of the JSON
  bindings (``2025-10-28T10:30:00.123Z``).
* **metadata** (``google.protobuf.Struct``) and ``Part.data`` (``google.protobuf.Value``):
  Struct numbers are doubles, so a whole number within ±2**53 comes back as an ``int``
  (what the JSON bindings would have decoded); anything else keeps its float value.
* ``Part.raw`` is bytes on both sides (base64 only in JSON).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import msgspec
from google.protobuf import struct_pb2, timestamp_pb2

from a2a_hub.protocol.errors import InvalidParamsError
from a2a_hub.protocol.types import (
    Artifact,
    AuthenticationInfo,
    GetTaskRequestV11,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageConfigurationV11,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a_hub.server.grpc._generated import a2a_pb2 as pb

__all__ = [
    "get_task_request",
    "list_tasks_request",
    "list_tasks_response",
    "message_from_pb",
    "message_to_pb",
    "send_message_request",
    "send_message_response",
    "stream_response",
    "struct_to_dict",
    "task_to_pb",
    "value_to_py",
]

_ROLE_FROM_PB: dict[int, Role] = {pb.Role.Value(r.value): r for r in Role}
_ROLE_TO_PB: dict[Role, pb.Role] = {r: cast(pb.Role, pb.Role.Value(r.value)) for r in Role}
_STATE_FROM_PB: dict[int, TaskState] = {pb.TaskState.Value(s.value): s for s in TaskState}
_STATE_TO_PB: dict[TaskState, pb.TaskState] = {
    s: cast(pb.TaskState, pb.TaskState.Value(s.value)) for s in TaskState
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SAFE_INT = 2**53


# --- Struct / Value -----------------------------------------------------------------


def value_to_py(value: struct_pb2.Value) -> Any:
    """A ``google.protobuf.Value`` as plain Python (dict, list, str, number, bool, None)."""
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        number = value.number_value
        if number.is_integer() and -_SAFE_INT <= number <= _SAFE_INT:
            return int(number)
        return number
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return struct_to_dict(value.struct_value)
    if kind == "list_value":
        return [value_to_py(v) for v in value.list_value.values]
    return None  # null_value, or a Value with nothing set


def struct_to_dict(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A ``google.protobuf.Struct`` as a dict."""
    return {key: value_to_py(value) for key, value in struct.fields.items()}


def _plain(data: Any) -> Any:
    """JSON-shaped builtins for anything msgspec can encode (agents may use Structs)."""
    if data is None or isinstance(data, str | bool | int | float | dict | list):
        return data
    return msgspec.to_builtins(data)


def _set_value(target: struct_pb2.Value, data: Any) -> None:
    data = _plain(data)
    if data is None:
        target.null_value = struct_pb2.NULL_VALUE
    elif isinstance(data, bool):
        target.bool_value = data
    elif isinstance(data, int | float):
        target.number_value = data
    elif isinstance(data, str):
        target.string_value = data
    elif isinstance(data, dict):
        target.struct_value.update(msgspec.to_builtins(data))
    else:
        target.list_value.extend(msgspec.to_builtins(data))


def _set_struct(target: struct_pb2.Struct, data: dict[str, Any]) -> None:
    target.update(msgspec.to_builtins(data))


# --- timestamps ---------------------------------------------------------------------


def _timestamp_to_str(ts: timestamp_pb2.Timestamp) -> str:
    return ts.ToJsonString()


def _set_timestamp(target: timestamp_pb2.Timestamp, text: str) -> None:
    """Set ``target`` from an ISO 8601 string; one that does not parse is left unset."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    target.seconds = delta.days * 86400 + delta.seconds
    target.nanos = delta.microseconds * 1000


# --- protobuf -> a2a-hub ------------------------------------------------------------


def _part_from_pb(part: pb.Part) -> Part:
    metadata = struct_to_dict(part.metadata) if part.HasField("metadata") else None
    filename = part.filename or None
    media_type = part.media_type or None
    content = part.WhichOneof("content")
    if content == "text":
        return Part(text=part.text, metadata=metadata, filename=filename, media_type=media_type)
    if content == "raw":
        return Part(raw=part.raw, metadata=metadata, filename=filename, media_type=media_type)
    if content == "url":
        return Part(url=part.url, metadata=metadata, filename=filename, media_type=media_type)
    if content == "data":
        return Part(
            data=value_to_py(part.data),
            metadata=metadata,
            filename=filename,
            media_type=media_type,
        )
    return Part(metadata=metadata, filename=filename, media_type=media_type)


def message_from_pb(message: pb.Message) -> Message:
    """A protobuf ``Message`` (from a client) as a :class:`Message`."""
    return Message(
        message_id=message.message_id,
        role=_ROLE_FROM_PB.get(message.role, Role.UNSPECIFIED),
        parts=[_part_from_pb(p) for p in message.parts],
        context_id=message.context_id or None,
        task_id=message.task_id or None,
        metadata=struct_to_dict(message.metadata) if message.HasField("metadata") else None,
        extensions=list(message.extensions) or None,
        reference_task_ids=list(message.reference_task_ids) or None,
    )


def _push_config_from_pb(config: pb.TaskPushNotificationConfig) -> TaskPushNotificationConfig:
    auth = None
    if config.HasField("authentication"):
        auth = AuthenticationInfo(
            scheme=config.authentication.scheme,
            credentials=config.authentication.credentials or None,
        )
    return TaskPushNotificationConfig(
        url=config.url,
        id=config.id or None,
        task_id=config.task_id or None,
        token=config.token or None,
        authentication=auth,
        tenant=config.tenant or None,
    )


def push_config_from_pb(config: pb.TaskPushNotificationConfig) -> TaskPushNotificationConfig:
    """``CreateTaskPushNotificationConfig``'s request as a :class:`TaskPushNotificationConfig`."""
    return _push_config_from_pb(config)


def push_config_to_pb(config: TaskPushNotificationConfig) -> pb.TaskPushNotificationConfig:
    """A (masked) stored push config as a protobuf ``TaskPushNotificationConfig``."""
    out = pb.TaskPushNotificationConfig(url=config.url)
    if config.id:
        out.id = config.id
    if config.task_id:
        out.task_id = config.task_id
    if config.token:
        out.token = config.token
    if config.tenant:
        out.tenant = config.tenant
    if config.authentication is not None:
        out.authentication.scheme = config.authentication.scheme
        if config.authentication.credentials:
            out.authentication.credentials = config.authentication.credentials
    return out


def send_message_request(request: pb.SendMessageRequest, v11: bool = False) -> SendMessageRequest:
    """``SendMessage`` / ``SendStreamingMessage`` params (InvalidParams without a message);
    ``v11``: with the 1.1 preview's ``if_generation_match``."""
    if not request.HasField("message"):
        raise InvalidParamsError("message is required")
    configuration: SendMessageConfiguration | None = None
    if request.HasField("configuration"):
        c = request.configuration
        configuration = SendMessageConfiguration(
            accepted_output_modes=list(c.accepted_output_modes) or None,
            task_push_notification_config=(
                _push_config_from_pb(c.task_push_notification_config)
                if c.HasField("task_push_notification_config")
                else None
            ),
            history_length=c.history_length if c.HasField("history_length") else None,
            return_immediately=c.return_immediately,
        )
        if v11 and c.HasField("if_generation_match"):
            configuration = SendMessageConfigurationV11(
                **msgspec.structs.asdict(configuration),
                if_generation_match=c.if_generation_match,
            )
    return SendMessageRequest(
        message=message_from_pb(request.message),
        configuration=configuration,
        metadata=struct_to_dict(request.metadata) if request.HasField("metadata") else None,
        tenant=request.tenant or None,
    )


def get_task_request(request: pb.GetTaskRequest) -> GetTaskRequestV11:
    """``GetTask`` params (with the 1.1 preview's ``current_generation``: only 1.1 calls
    read it)."""
    return GetTaskRequestV11(
        id=request.id,
        history_length=request.history_length if request.HasField("history_length") else None,
        tenant=request.tenant or None,
        current_generation=(
            request.current_generation if request.HasField("current_generation") else None
        ),
    )


def _state_filter(number: int) -> TaskState | None:
    if not number:
        return None
    state = _STATE_FROM_PB.get(number)
    if state is None:
        raise InvalidParamsError(f"status {number} is not a TaskState this server knows")
    return state


def list_tasks_request(request: pb.ListTasksRequest) -> ListTasksRequest:
    """``ListTasks`` params."""
    return ListTasksRequest(
        context_id=request.context_id or None,
        status=_state_filter(request.status),
        page_size=request.page_size if request.HasField("page_size") else None,
        page_token=request.page_token or None,
        history_length=request.history_length if request.HasField("history_length") else None,
        status_timestamp_after=(
            _timestamp_to_str(request.status_timestamp_after)
            if request.HasField("status_timestamp_after")
            else None
        ),
        include_artifacts=(
            request.include_artifacts if request.HasField("include_artifacts") else None
        ),
        tenant=request.tenant or None,
    )


# --- a2a-hub -> protobuf ------------------------------------------------------------


def _part_to_pb(part: Part, out: pb.Part) -> None:
    if part.text is not None:
        out.text = part.text
    elif part.raw is not None:
        out.raw = part.raw
    elif part.url is not None:
        out.url = part.url
    elif part.data is not msgspec.UNSET:
        _set_value(out.data, part.data)
    if part.metadata:
        _set_struct(out.metadata, part.metadata)
    if part.filename:
        out.filename = part.filename
    if part.media_type:
        out.media_type = part.media_type


def message_to_pb(message: Message, out: pb.Message | None = None) -> pb.Message:
    """A :class:`Message` as a protobuf ``Message`` (filled into ``out`` if given)."""
    if out is None:
        out = pb.Message()
    out.message_id = message.message_id
    out.role = _ROLE_TO_PB[message.role]
    for part in message.parts:
        _part_to_pb(part, out.parts.add())
    if message.context_id:
        out.context_id = message.context_id
    if message.task_id:
        out.task_id = message.task_id
    if message.metadata:
        _set_struct(out.metadata, message.metadata)
    if message.extensions:
        out.extensions.extend(message.extensions)
    if message.reference_task_ids:
        out.reference_task_ids.extend(message.reference_task_ids)
    return out


def _status_to_pb(status: TaskStatus, out: pb.TaskStatus) -> None:
    out.state = _STATE_TO_PB[status.state]
    if status.message is not None:
        message_to_pb(status.message, out.message)
    if status.timestamp:
        _set_timestamp(out.timestamp, status.timestamp)


def _artifact_to_pb(artifact: Artifact, out: pb.Artifact) -> None:
    out.artifact_id = artifact.artifact_id
    for part in artifact.parts:
        _part_to_pb(part, out.parts.add())
    if artifact.name:
        out.name = artifact.name
    if artifact.description:
        out.description = artifact.description
    if artifact.metadata:
        _set_struct(out.metadata, artifact.metadata)
    if artifact.extensions:
        out.extensions.extend(artifact.extensions)


def task_to_pb(task: Task, out: pb.Task | None = None) -> pb.Task:
    """A :class:`Task` as a protobuf ``Task`` (filled into ``out`` if given)."""
    if out is None:
        out = pb.Task()
    out.id = task.id
    out.context_id = task.context_id
    _status_to_pb(task.status, out.status)
    for artifact in task.artifacts or ():
        _artifact_to_pb(artifact, out.artifacts.add())
    for message in task.history or ():
        message_to_pb(message, out.history.add())
    if task.metadata:
        _set_struct(out.metadata, task.metadata)
    if task.generation:
        out.generation = task.generation
    return out


def send_message_response(result: Task | Message) -> pb.SendMessageResponse:
    """The answer to ``SendMessage``: the task, or the agent's direct message."""
    out = pb.SendMessageResponse()
    if isinstance(result, Task):
        task_to_pb(result, out.task)
    else:
        message_to_pb(result, out.message)
    return out


def _status_update_to_pb(event: TaskStatusUpdateEvent, out: pb.TaskStatusUpdateEvent) -> None:
    out.task_id = event.task_id
    out.context_id = event.context_id
    _status_to_pb(event.status, out.status)
    if event.metadata:
        _set_struct(out.metadata, event.metadata)
    if event.generation:
        out.generation = event.generation


def _artifact_update_to_pb(event: TaskArtifactUpdateEvent, out: pb.TaskArtifactUpdateEvent) -> None:
    out.task_id = event.task_id
    out.context_id = event.context_id
    _artifact_to_pb(event.artifact, out.artifact)
    out.append = event.append
    out.last_chunk = event.last_chunk
    if event.metadata:
        _set_struct(out.metadata, event.metadata)
    if event.generation:
        out.generation = event.generation


def stream_response(event: StreamResponse) -> pb.StreamResponse:
    """One streamed event as a protobuf ``StreamResponse``."""
    out = pb.StreamResponse()
    if event.task is not None:
        task_to_pb(event.task, out.task)
    elif event.message is not None:
        message_to_pb(event.message, out.message)
    elif event.status_update is not None:
        _status_update_to_pb(event.status_update, out.status_update)
    elif event.artifact_update is not None:
        _artifact_update_to_pb(event.artifact_update, out.artifact_update)
    return out


def list_tasks_response(page: ListTasksResponse) -> pb.ListTasksResponse:
    """The answer to ``ListTasks``."""
    out = pb.ListTasksResponse(
        next_page_token=page.next_page_token,
        page_size=page.page_size,
        total_size=page.total_size,
    )
    for task in page.tasks:
        task_to_pb(task, out.tasks.add())
    return out
