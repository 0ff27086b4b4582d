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
here (the bench's echo: about 4 µs per event instead of about 40).  Towards the SDK, messages
are written in place into the field that holds them (``*_into_pb``: a protobuf sub-message
given to a constructor or appended to a list is copied); from the SDK, a part that is text
alone, the usual one, takes one test.
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
    "STATE_FROM_PB",
    "artifact_from_pb",
    "configuration_into_pb",
    "message_from_pb",
    "message_into_pb",
    "message_to_pb",
    "parts_from_pb",
    "state_from_pb",
    "struct_from_pb",
    "task_to_pb",
]

_ROLE_TO_PB: dict[Role, Any] = {r: pb.Role.Value(r.value) for r in Role}
_ROLE_FROM_PB = {number: r for r, number in _ROLE_TO_PB.items()}
_STATE_TO_PB: dict[TaskState, Any] = {s: pb.TaskState.Value(s.value) for s in TaskState}
#: The SDK's ``TaskState`` numbers as hub states.
STATE_FROM_PB = {number: s for s, number in _STATE_TO_PB.items()}
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


def struct_from_pb(message: Any) -> dict[str, Any] | None:
    """The ``metadata`` of an SDK message, artifact or part (``None``: not set)."""
    if not message.HasField("metadata"):
        return None
    found: dict[str, Any] = _from_json(json_format.MessageToDict(message.metadata))
    return found


def _to_value(data: Any) -> struct_pb2.Value:
    value = struct_pb2.Value()
    json_format.ParseDict(msgspec.to_builtins(data), value)
    return value


# --- a2a-hub -> a2a-sdk ------------------------------------------------------------------


def _part_into_pb(part: Part, out: pb.Part) -> None:
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


def message_into_pb(message: Message, out: pb.Message) -> None:
    """Fill ``out``, an empty SDK ``Message`` (a field of another message, say), with a hub
    message: written in place, no copy."""
    out.message_id = message.message_id
    out.role = _ROLE_TO_PB[message.role]
    if message.context_id:
        out.context_id = message.context_id
    if message.task_id:
        out.task_id = message.task_id
    parts = out.parts
    for part in message.parts:
        if part.text is not None and not (part.metadata or part.filename or part.media_type):
            parts.add(text=part.text)  # the usual part, in one call
        else:
            _part_into_pb(part, parts.add())
    if message.metadata:
        out.metadata.update(msgspec.to_builtins(message.metadata))
    if message.extensions:
        out.extensions.extend(message.extensions)
    if message.reference_task_ids:
        out.reference_task_ids.extend(message.reference_task_ids)


def message_to_pb(message: Message) -> pb.Message:
    """A hub message as the SDK's ``Message``."""
    out = pb.Message()
    message_into_pb(message, out)
    return out


def _artifact_into_pb(artifact: Artifact, out: pb.Artifact) -> None:
    out.artifact_id = artifact.artifact_id
    for part in artifact.parts:
        _part_into_pb(part, out.parts.add())
    if artifact.name:
        out.name = artifact.name
    if artifact.description:
        out.description = artifact.description
    if artifact.metadata:
        out.metadata.update(msgspec.to_builtins(artifact.metadata))
    if artifact.extensions:
        out.extensions.extend(artifact.extensions)


def task_to_pb(task: Task, history: list[Message]) -> pb.Task:
    """A stored task as the SDK's ``Task`` (its status without a timestamp), with ``history``
    (the SDK's handler puts the incoming message in the history before ``execute``)."""
    out = pb.Task(id=task.id, context_id=task.context_id)
    out.status.state = _STATE_TO_PB[task.status.state]
    if task.status.message is not None:
        message_into_pb(task.status.message, out.status.message)
    for artifact in task.artifacts or ():
        _artifact_into_pb(artifact, out.artifacts.add())
    for message in history:
        message_into_pb(message, out.history.add())
    if task.metadata:
        out.metadata.update(msgspec.to_builtins(task.metadata))
    return out


def configuration_into_pb(
    config: SendMessageConfiguration, out: pb.SendMessageConfiguration
) -> None:
    """The options of the send into ``out`` (the push config is the hub's business, not the
    agent's)."""
    out.return_immediately = config.return_immediately
    if config.accepted_output_modes:
        out.accepted_output_modes.extend(config.accepted_output_modes)
    if config.history_length is not None:
        out.history_length = config.history_length


# --- a2a-sdk -> a2a-hub ------------------------------------------------------------------


def _part_from_pb(part: Any) -> Part:
    content = part.WhichOneof("content")
    extra: dict[str, Any] = {}
    if part.HasField("metadata"):
        extra["metadata"] = _from_json(json_format.MessageToDict(part.metadata))
    if part.filename:
        extra["filename"] = part.filename
    if part.media_type:
        extra["media_type"] = part.media_type
    if content == "text":
        return Part(text=part.text, **extra)
    if content == "raw":
        return Part(raw=part.raw, **extra)
    if content == "url":
        return Part(url=part.url, **extra)
    if content == "data":
        return Part(data=_from_json(json_format.MessageToDict(part.data)), **extra)
    return Part(**extra)


def parts_from_pb(parts: Any) -> list[Part]:
    """The SDK's ``Part`` list as hub parts."""
    out: list[Part] = []
    for part in parts:
        text = part.text
        # the usual part: text alone ("" may be a set text: the slow path tells)
        if text and not (part.filename or part.media_type or part.HasField("metadata")):
            out.append(Part(text=text))
        else:
            out.append(_part_from_pb(part))
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
        metadata=struct_from_pb(message),
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
        metadata=struct_from_pb(artifact),
        extensions=list(artifact.extensions) or None,
    )


def state_from_pb(number: int) -> TaskState:
    """The SDK's ``TaskState`` number as a hub state (unknown: ``UNSPECIFIED``)."""
    return STATE_FROM_PB.get(number, TaskState.UNSPECIFIED)
