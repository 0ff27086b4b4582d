"""HTTP+JSON (REST) binding of A2A 1.0: ``/message:send``, ``/tasks/{id}``, ``/tasks`` …

Each endpoint serves the agent of its route (``/a2a/{agent_id}/…`` or the root
alias) for the caller :class:`~a2a_hub.server.caller.CallerMiddleware` found.
Errors use the spec's body: ``{"error": {"code", "status", "message", "details": [ErrorInfo]}}``
(:func:`a2a_hub.server.errors.error_body`), answered by the binding's catch-all,
:func:`~a2a_hub.server.errors.protocol_endpoint`.
Bodies and query parameters may use the proto field names (``history_length``) as well as
camelCase; sends activate the extensions the request asks for (``A2A-Extensions``) and
are claimed under their ``Idempotency-Key`` header when it is there (a repeat with another
message: HTTP 422, :mod:`a2a_hub.engine.claims`).
``A2A-Version: 1.1`` gets the 1.1 preview (:mod:`a2a_hub.engine.generation`): ``generation``
in tasks and events, ``GET /tasks/{id}?currentGeneration=N`` as a long poll, and
``configuration.ifGenerationMatch`` on sends (409 on a mismatch).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from a2a_hub.engine.generation import with_generation
from a2a_hub.engine.stream import TaskStream, check_position, is_internal
from a2a_hub.protocol import fieldnames
from a2a_hub.protocol.errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    VersionNotSupportedError,
)
from a2a_hub.protocol.types import (
    ListTasksRequest,
    SendMessageRequest,
    SendMessageRequestV11,
    SendMessageResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a_hub.server.caller import caller_of
from a2a_hub.server.errors import error_body, protocol_endpoint
from a2a_hub.server.extensions import activate_for_request
from a2a_hub.server.http import a2a_version, agent_of, hub_of, is_json, read_body
from a2a_hub.server.hub import HostedAgent, Hub
from a2a_hub.server.scope import SERVED_VERSIONS, preview
from a2a_hub.server.sse import SseReply, encoded_event, sse_response
from a2a_hub.stores.base import TaskEvent

__all__ = [
    "cancel_task",
    "check_version",
    "extended_card",
    "get_task",
    "list_tasks",
    "push_config",
    "send_message",
    "send_streaming_message",
    "subscribe",
]

A2A_JSON = "application/a2a+json"

_enc = msgspec.json.Encoder()
_object_dec = msgspec.json.Decoder(dict[str, Any])
_push_config_dec = msgspec.json.Decoder(TaskPushNotificationConfig)
_BY_LABEL = {state.label: state for state in TaskState}
_SNAKE = re.compile(r"([A-Z])")


def check_version(version: str | None) -> None:
    """REST here is the 1.0 binding: a version other than 1.x is refused with -32009 / 400."""
    if version and version.strip().partition(".")[0] != "1":
        raise VersionNotSupportedError(
            f"A2A version {version!r} is not served by the HTTP+JSON binding, which speaks 1.0; "
            f"use JSON-RPC at the same URL for {SERVED_VERSIONS}",
            data={"requested": version, "supported": "1.0"},
        )


class _Target(NamedTuple):
    hub: Hub
    agent: HostedAgent
    #: ``A2A-Version: 1.1``: the 1.1 preview (see :func:`preview`).
    v11: bool


def _target(request: Request) -> _Target:
    """The hub and agent of a REST request, its ``A2A-Version`` checked."""
    hub = hub_of(request)
    agent = agent_of(request, hub)
    version = a2a_version(request)
    check_version(version)
    return _Target(hub, agent, preview(version))


def _ok(result: Any) -> Response:
    return Response(_enc.encode(result), media_type=A2A_JSON)


def _check_json(request: Request, body: bytes) -> None:
    content_type = request.headers.get("content-type")
    if not is_json(content_type) and (body or content_type):
        ctype = (content_type or "").split(";")[0].strip().lower()
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


def _send_request(request: Request, body: bytes, v11: bool) -> SendMessageRequest:
    _check_json(request, body)
    kind = SendMessageRequestV11 if v11 else SendMessageRequest
    try:
        return fieldnames.decode(body, kind)
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(
            f"invalid request body: {str(exc).replace('`$', '`body')}"
        ) from None
    except msgspec.DecodeError as exc:
        raise InvalidParamsError(f"request body is not valid JSON: {exc}") from None


def _stream(hub: Hub, stream: TaskStream, v11: bool) -> Response:
    def event(ev: TaskEvent) -> bytes | None:
        return None if is_internal(ev.event) else encoded_event(ev)

    def event_v11(ev: TaskEvent) -> bytes | None:
        return None if is_internal(ev.event) else _enc.encode(with_generation(ev))

    reply = SseReply(stream, event_v11 if v11 else event, error_body)
    return sse_response(reply, hub.settings.server.sse_heartbeat)


@protocol_endpoint
async def send_message(request: Request) -> Response:
    """``POST /message:send``."""
    hub, agent, v11 = _target(request)
    params = _send_request(
        request, await read_body(request, hub.settings.server.max_body_bytes), v11
    )
    send = agent.engine.send_v11 if v11 else agent.engine.send
    result = await send(
        params,
        caller=caller_of(request),
        extensions=activate_for_request(agent),
        idempotency_key=request.headers.get("idempotency-key"),
    )
    if isinstance(result, Task):
        return _ok(SendMessageResponse(task=result))
    return _ok(SendMessageResponse(message=result))


@protocol_endpoint
async def send_streaming_message(request: Request) -> Response:
    """``POST /message:stream``."""
    hub, agent, v11 = _target(request)
    body = await read_body(request, hub.settings.server.max_body_bytes)
    agent.require_streaming("SendStreamingMessage")
    params = _send_request(request, body, v11)
    stream = await agent.engine.send_stream(
        params,
        caller=caller_of(request),
        extensions=activate_for_request(agent),
        idempotency_key=request.headers.get("idempotency-key"),
    )
    return _stream(hub, stream, v11)


@protocol_endpoint
async def subscribe(request: Request) -> Response:
    """``GET|POST /tasks/{id}:subscribe`` (``Last-Event-ID`` header or ``lastEventId`` query)."""
    hub, agent, v11 = _target(request)
    agent.require_streaming("SubscribeToTask")
    position = request.headers.get("last-event-id") or _query(request, "lastEventId")
    stream = await agent.engine.subscribe(
        request.path_params["task_id"], check_position(position), caller=caller_of(request)
    )
    return _stream(hub, stream, v11)


@protocol_endpoint
async def get_task(request: Request) -> Response:
    """``GET /tasks/{id}`` (1.1 preview: ``?currentGeneration=N`` long-polls)."""
    hub, agent, v11 = _target(request)
    if v11:
        return _ok(
            await agent.engine.get_task_v11(
                request.path_params["task_id"],
                _int_param(request, "historyLength"),
                caller=caller_of(request),
                current_generation=_int_param(request, "currentGeneration"),
                wait=hub.settings.server.long_poll_timeout,
            )
        )
    task = await agent.engine.get_task(
        request.path_params["task_id"],
        _int_param(request, "historyLength"),
        caller=caller_of(request),
    )
    return _ok(task)


@protocol_endpoint
async def list_tasks(request: Request) -> Response:
    """``GET /tasks``."""
    agent = _target(request).agent
    query = ListTasksRequest(
        context_id=_query(request, "contextId") or None,
        status=_state_param(request),
        page_size=_int_param(request, "pageSize"),
        page_token=_query(request, "pageToken") or None,
        history_length=_int_param(request, "historyLength"),
        status_timestamp_after=_query(request, "statusTimestampAfter") or None,
        include_artifacts=_bool_param(request, "includeArtifacts"),
    )
    return _ok(await agent.engine.list_tasks(query, caller=caller_of(request)))


@protocol_endpoint
async def cancel_task(request: Request) -> Response:
    """``POST /tasks/{id}:cancel`` (an empty body or a JSON object)."""
    hub, agent, v11 = _target(request)
    body = await read_body(request, hub.settings.server.max_body_bytes)
    _check_json(request, body)
    if body.strip():
        try:
            fieldnames.decode_with(_object_dec, body)
        except msgspec.DecodeError as exc:
            raise InvalidParamsError(f"request body must be a JSON object: {exc}") from None
    task_id, caller = request.path_params["task_id"], caller_of(request)
    task = await agent.engine.cancel_task(task_id, caller=caller)
    if v11:
        task = await agent.engine.get_task_v11(task_id, caller=caller)
    return _ok(task)


class _PushList(msgspec.Struct, rename="camel"):
    configs: list[TaskPushNotificationConfig]
    next_page_token: str = ""


@protocol_endpoint
async def push_config(request: Request) -> Response:
    """``POST|GET /tasks/{id}/pushNotificationConfigs`` (create, list) and
    ``GET|DELETE /tasks/{id}/pushNotificationConfigs/{config_id}`` (get, delete)."""
    hub, agent, _ = _target(request)
    engine, caller = agent.engine, caller_of(request)
    task_id = request.path_params["task_id"]
    config_id = request.path_params.get("config_id")
    if config_id is not None:
        if request.method == "DELETE":
            await engine.delete_push_config(task_id, config_id, caller=caller)
            return _ok({})
        return _ok(await engine.get_push_config(task_id, config_id, caller=caller))
    if request.method == "GET":
        return _ok(_PushList(await engine.list_push_configs(task_id, caller=caller)))
    body = await read_body(request, hub.settings.server.max_body_bytes)
    _check_json(request, body)
    try:
        config = fieldnames.decode_with(_push_config_dec, body)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise InvalidParamsError(f"invalid push notification config: {exc}") from None
    if config.task_id not in (None, "", task_id):
        raise InvalidParamsError(
            f"taskId {config.task_id!r} in the body does not match the path's task {task_id!r}"
        )
    config = msgspec.structs.replace(config, task_id=task_id, hub_protocol=None)
    return _ok(await engine.set_push_config(config, caller=caller))


@protocol_endpoint
async def extended_card(request: Request) -> Response:
    """``GET /extendedAgentCard``: the extended card, to authenticated callers."""
    from a2a_hub.server.cards import extended_card_body

    agent = _target(request).agent
    return _ok(extended_card_body(request, agent, caller_of(request)))
