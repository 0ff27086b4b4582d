"""The official a2a-sdk's types (protobuf messages of ``lf.a2a.v1``, ``a2a.types.a2a_pb2``) and
a2a-hub's wire types (:mod:`a2a_hub.protocol.types`), both ways, field by field.

Both mirror the same ``a2a.proto``, so each conversion is a copy; where they differ:

* proto3 strings and lists cannot be absent: an empty one is ``None`` here;
* ``Role`` and ``TaskState`` map by name (``ROLE_AGENT`` ↔ :attr:`Role.AGENT`);
* ``metadata`` (``Struct``) and ``Part.data`` (``Value``) hold JSON: their numbers are doubles,
  so a whole number within ±2**53 comes back as an ``int``, as the JSON bindings decode it.

Only what an executor reads (the message, the task with its history and artifacts, the
request's configuration) and writes (messages, artifacts, statuses) is converted: this module
is imported by :mod:`a2a_hub.agents.frameworks.a2a_sdk` alone, only when an a2a-sdk executor is
hosted.  Field-by-field copies, not ``json_format``: a hosted SDK executor's every event passes
here (the bench's echo: about 4 µs per event instead of about 40).
"""

from __future__ import annotations

from typing import Any

import msgspec
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format, struct_pb2

from a2a_hub.engine.state import new_id
from a2a_hub.protocol.types import (
    Artifact,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    Task,
    TaskState,
)

__all__ = [
    "artifact_from_pb",
    "configuration_to_pb",
    "message_from_pb",
    "message_to_pb",
    "parts_from_pb",
    "state_from_pb",
    "task_to_pb",
]

_ROLE_TO_PB: dict[Role, Any] = {r: pb.Role.Value(r.value) for r in Role}
_ROLE_FROM_PB = {number: r for r, number in _ROLE_TO_PB.items()}
_STATE_TO_PB: dict[TaskState, Any] = {s: pb.TaskState.Value(s.value) for s in TaskState}
_STATE_FROM_PB = {number: s for s, number in _STATE_TO_PB.items()}
_SAFE_INT = 2**53


# --- JSON values -----------------------------------------------------------------------


def _from_json(value: Any) -> Any:
    """Whole doubles back to ints (recursively): what a JSON binding would have decoded."""
    if isinstance(value, float) and value.is_integer() and -_SAFE_INT <= value <= _SAFE_INT:
        return int(value)
    if isinstance(value, dict):
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _struct(message: Any, field: str) -> dict[str, Any] | None:
    if not message.HasField(field):
        return None
    found: dict[str, Any] = _from_json(json_format.MessageToDict(getattr(message, field)))
    return found


def _to_value(data: Any) -> struct_pb2.Value:
    value = struct_pb2.Value()
    json_format.ParseDict(msgspec.to_builtins(data), value)
    return value


# --- a2a-hub -> a2a-sdk ------------------------------------------------------------------


def _part_to_pb(part: Part) -> pb.Part:
    if part.text is not None and not (part.metadata or part.filename or part.media_type):
        return pb.Part(text=part.text)  # the usual case, in one call
    out = pb.Part()
    if part.text is not None:
        out.text = part.text
    elif part.raw is not None:
        out.raw = part.raw
    elif part.url is not None:
        out.url = part.url
    elif part.data is not msgspec.UNSET:
        out.data.CopyFrom(_to_value(part.data))
    if part.metadata:
        out.metadata.update(msgspec.to_builtins(part.metadata))
    if part.filename:
        out.filename = part.filename
    if part.media_type:
        out.media_type = part.media_type
    return out


def message_to_pb(message: Message) -> pb.Message:
    """A hub message as the SDK's ``Message``."""
    out = pb.Message(
        message_id=message.message_id,
        role=_ROLE_TO_PB[message.role],
        parts=[_part_to_pb(p) for p in message.parts],
        context_id=message.context_id or "",
        task_id=message.task_id or "",
    )
    if message.metadata:
        out.metadata.update(msgspec.to_builtins(message.metadata))
    if message.extensions:
        out.extensions.extend(message.extensions)
    if message.reference_task_ids:
        out.reference_task_ids.extend(message.reference_task_ids)
    return out


def _artifact_to_pb(artifact: Artifact) -> pb.Artifact:
    out = pb.Artifact(
        artifact_id=artifact.artifact_id,
        parts=[_part_to_pb(p) for p in artifact.parts],
        name=artifact.name or "",
        description=artifact.description or "",
    )
    if artifact.metadata:
        out.metadata.update(msgspec.to_builtins(artifact.metadata))
    if artifact.extensions:
        out.extensions.extend(artifact.extensions)
    return out


def task_to_pb(task: Task, history: list[Message]) -> pb.Task:
    """A stored task as the SDK's ``Task`` (its status without a timestamp), with ``history``
    (the SDK's handler puts the incoming message in the history before ``execute``)."""
    out = pb.Task(
        id=task.id,
        context_id=task.context_id,
        status=pb.TaskStatus(state=_STATE_TO_PB[task.status.state]),
        artifacts=[_artifact_to_pb(a) for a in task.artifacts or ()],
        history=[message_to_pb(m) for m in history],
    )
    if task.status.message is not None:
        out.status.message.CopyFrom(message_to_pb(task.status.message))
    if task.metadata:
        out.metadata.update(msgspec.to_builtins(task.metadata))
    return out


def configuration_to_pb(config: SendMessageConfiguration) -> pb.SendMessageConfiguration:
    """The options of the send (the push config is the hub's business, not the agent's)."""
    out = pb.SendMessageConfiguration(return_immediately=config.return_immediately)
    if config.accepted_output_modes:
        out.accepted_output_modes.extend(config.accepted_output_modes)
    if config.history_length is not None:
        out.history_length = config.history_length
    return out


# --- a2a-sdk -> a2a-hub ------------------------------------------------------------------


def parts_from_pb(parts: Any) -> list[Part]:
    """The SDK's ``Part`` list as hub parts."""
    out: list[Part] = []
    for part in parts:
        content = part.WhichOneof("content")
        extra: dict[str, Any] = {}
        if part.HasField("metadata"):
            extra["metadata"] = _struct(part, "metadata")
        if part.filename:
            extra["filename"] = part.filename
        if part.media_type:
            extra["media_type"] = part.media_type
        if content == "text":
            out.append(Part(text=part.text, **extra))
        elif content == "raw":
            out.append(Part(raw=part.raw, **extra))
        elif content == "url":
            out.append(Part(url=part.url, **extra))
        elif content == "data":
            out.append(Part(data=_from_json(json_format.MessageToDict(part.data)), **extra))
        else:
            out.append(Part(**extra))
    return out


def message_from_pb(message: pb.Message, *, task_id: str | None, context_id: str) -> Message:
    """An SDK executor's message as a hub agent message; the ids it left empty are the
    run's (``task_id`` ``None``: an immediate reply, bound to no task)."""
    role = _ROLE_FROM_PB.get(message.role, Role.AGENT)
    return Message(
        message_id=message.message_id or new_id(),
        role=Role.AGENT if role is Role.UNSPECIFIED else role,
        parts=parts_from_pb(message.parts),
        context_id=message.context_id or context_id,
        task_id=(message.task_id or task_id) if task_id is not None else None,
        metadata=_struct(message, "metadata"),
        extensions=list(message.extensions) or None,
        reference_task_ids=list(message.reference_task_ids) or None,
    )


def artifact_from_pb(artifact: pb.Artifact) -> Artifact:
    """An SDK artifact as a hub artifact."""
    return Artifact(
        artifact_id=artifact.artifact_id,
        parts=parts_from_pb(artifact.parts),
        name=artifact.name or None,
        description=artifact.description or None,
        metadata=_struct(artifact, "metadata"),
        extensions=list(artifact.extensions) or None,
    )


def state_from_pb(number: int) -> TaskState:
    """The SDK's ``TaskState`` number as a hub state (unknown: ``UNSPECIFIED``)."""
    return _STATE_FROM_PB.get(number, TaskState.UNSPECIFIED)
