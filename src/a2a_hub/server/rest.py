"""HTTP+JSON (REST) binding of A2A 1.0: ``/message:send``, ``/tasks/{id}``, ``/tasks`` …

Errors use the spec's body: ``{"error": {"code", "status", "message", "details": [ErrorInfo]}}``.
Bodies and query parameters may use the proto field names (``history_length``) as well as
camelCase.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from starlette.requests import Request

from a2a_hub.engine.stream import TaskStream, check_position, is_internal
from a2a_hub.protocol import fieldnames
from a2a_hub.protocol.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InvalidParamsError,
    VersionNotSupportedError,
)
from a2a_hub.protocol.types import (
    ListTasksRequest,
    SendMessageRequest,
    SendMessageResponse,
    Task,
    TaskState,
)
from a2a_hub.server.extensions import activate_for_request
from a2a_hub.server.hub import HostedAgent
from a2a_hub.server.jsonrpc import SERVED_VERSIONS, error_info
from a2a_hub.server.sse import SseReply, encoded_event
from a2a_hub.stores.base import TaskEvent

__all__ = [
    "cancel",
    "error_body",
    "get_task",
    "list_tasks",
    "send",
    "stream",
    "subscribe",
]

_enc = msgspec.json.Encoder()
_JSON_TYPES = ("application/json", "application/a2a+json")
_BY_LABEL = {state.label: state for state in TaskState}
_SNAKE = re.compile(r"([A-Z])")


def error_body(err: A2AError) -> bytes:
    """The HTTP+JSON error body of ``err``."""
    return _enc.encode(
        {
            "error": {
                "code": err.http_status,
                "status": err.grpc_status,
                "message": err.message,
                "details": [error_info(err)],
            }
        }
    )


def check_version(version: str | None) -> None:
    """REST here is the 1.0 binding: a version other than 1.x is refused with -32009 / 400."""
    if version and version.strip().partition(".")[0] != "1":
        raise VersionNotSupportedError(
            f"A2A version {version!r} is not served by the HTTP+JSON binding, which speaks 1.0; "
            f"use JSON-RPC at the same URL for {SERVED_VERSIONS}",
            data={"requested": version, "supported": "1.0"},
        )


def _check_json(request: Request, body: bytes) -> None:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype not in _JSON_TYPES and (body or ctype):
        raise ContentTypeNotSupportedError(
            f"Content-Type {ctype or '(none)'!r} is not supported; send application/json "
            "or application/a2a+json",
            data={"contentType": ctype},
        )


def _query(request: Request, name: str) -> str | None:
    """A query parameter by its camelCase name, or else by its proto name (``page_size``)."""
    value = request.query_params.get(name)
    if value is None:
        value = request.query_params.get(_SNAKE.sub(r"_\1", name).lower())
    return value


def _int_param(request: Request, name: str) -> int | None:
    value = _query(request, name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise InvalidParamsError(f"query parameter {name}={value!r} is not an integer") from None


def _bool_param(request: Request, name: str) -> bool | None:
    value = _query(request, name)
    if value is None or value == "":
        return None
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise InvalidParamsError(f"query parameter {name}={value!r} must be true or false")


def _state_param(request: Request) -> TaskState | None:
    value = request.query_params.get("status")
    if not value:
        return None
    try:
        return TaskState(value)
    except ValueError:
        pass
    if value.lower() in _BY_LABEL:
        return _BY_LABEL[value.lower()]
    raise InvalidParamsError(
        f"query parameter status={value!r} is not a task state; use e.g. TASK_STATE_WORKING"
    )


async def send(agent: HostedAgent, request: Request, body: bytes) -> Any:
    """``POST /message:send``."""
    params = _decode_send(request, body)
    result = await agent.engine.send(params, extensions=activate_for_request(agent))
    if isinstance(result, Task):
        return SendMessageResponse(task=result)
    return SendMessageResponse(message=result)


def _stream_reply(stream: TaskStream) -> SseReply:
    def event(ev: TaskEvent) -> bytes | None:
        return None if is_internal(ev.event) else encoded_event(ev)

    return SseReply(stream, event, error_body)


def _decode_send(request: Request, body: bytes) -> SendMessageRequest:
    _check_json(request, body)
    try:
        return fieldnames.decode(body, SendMessageRequest)
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(
            f"invalid request body: {str(exc).replace('`$', '`body')}"
        ) from None
    except msgspec.DecodeError as exc:
        raise InvalidParamsError(f"request body is not valid JSON: {exc}") from None


async def stream(agent: HostedAgent, request: Request, body: bytes) -> SseReply:
    """``POST /message:stream``."""
    agent.require_streaming("SendStreamingMessage")
    params = _decode_send(request, body)
    stream = await agent.engine.send_stream(params, extensions=activate_for_request(agent))
    return _stream_reply(stream)


async def subscribe(agent: HostedAgent, request: Request, task_id: str) -> SseReply:
    """``GET|POST /tasks/{id}:subscribe`` (``Last-Event-ID`` header or ``lastEventId`` query)."""
    agent.require_streaming("SubscribeToTask")
    position = request.headers.get("last-event-id") or _query(request, "lastEventId")
    return _stream_reply(await agent.engine.subscribe(task_id, check_position(position)))


async def get_task(agent: HostedAgent, request: Request, task_id: str) -> Any:
    """``GET /tasks/{id}``."""
    return await agent.engine.get_task(task_id, _int_param(request, "historyLength"))


async def list_tasks(agent: HostedAgent, request: Request) -> Any:
    """``GET /tasks``."""
    return await agent.engine.list_tasks(
        ListTasksRequest(
            context_id=_query(request, "contextId") or None,
            status=_state_param(request),
            page_size=_int_param(request, "pageSize"),
            page_token=_query(request, "pageToken") or None,
            history_length=_int_param(request, "historyLength"),
            status_timestamp_after=_query(request, "statusTimestampAfter") or None,
            include_artifacts=_bool_param(request, "includeArtifacts"),
        )
    )


async def cancel(agent: HostedAgent, request: Request, task_id: str, body: bytes) -> Any:
    """``POST /tasks/{id}:cancel``."""
    _check_json(request, body)
    if body.strip():
        try:
            msgspec.json.decode(body, type=dict[str, Any])
        except msgspec.DecodeError as exc:
            raise InvalidParamsError(f"request body must be a JSON object: {exc}") from None
    return await agent.engine.cancel_task(task_id)
