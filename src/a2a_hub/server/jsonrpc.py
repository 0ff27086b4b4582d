"""JSON-RPC 2.0 binding for every A2A version: 1.0, 0.3 (and 0.2), and the 0.1 legacy methods.

The version is chosen by the ``A2A-Version`` header (or query parameter) and the
method name: ``1.x`` serves the PascalCase 1.0 methods (``1.1``: with the 1.1 preview's
``generation``, see :mod:`a2a_hub.engine.generation`), ``0.3``/``0.2`` the
slash-named 0.3 methods plus the 0.1 legacy ones, ``0.1`` the legacy ones.
Without a version the method name decides (a PascalCase name is served as
1.0, a slash name as 0.3 or 0.1), so a plain ``curl -H 'content-type: application/json'``
works.  Errors are answered with HTTP 200 and a JSON-RPC error object, as the protocol
does, carrying the request's ``id`` whenever it can be read, even from an invalid request
(JSON-RPC 2.0 section 5).  A body whose ``Content-Type`` is not JSON (or that has none) is refused
with HTTP 415 before anything else (:func:`check_content_type`).  1.0 params may use the proto field
names (``history_length``) as well as camelCase (:mod:`a2a_hub.protocol.fieldnames`).  The
send and stream methods of every version activate the extensions the request asks for
(:mod:`a2a_hub.server.extensions`) and are claimed under the ``Idempotency-Key`` header
when it is there, in place of the message id (:mod:`a2a_hub.engine.claims`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from a2a_hub.engine.caller import ANONYMOUS, Caller
from a2a_hub.engine.generation import with_generation
from a2a_hub.engine.stream import TaskStream, check_position, is_internal
from a2a_hub.protocol import fieldnames, v01, v03
from a2a_hub.protocol.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    RateLimitedError,
    VersionNotSupportedError,
)
from a2a_hub.protocol.types import (
    GetTaskRequest,
    GetTaskRequestV11,
    ListTasksRequest,
    SendMessageRequest,
    SendMessageRequestV11,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskIdRequest,
    TaskPushNotificationConfig,
)
from a2a_hub.server.caller import caller_of
from a2a_hub.server.errors import JSON, WWW_AUTHENTICATE, encode_error, protocol_error
from a2a_hub.server.extensions import activate_for_request
from a2a_hub.server.http import (
    agent_of,
    first_values,
    hub_of,
    is_json,
    receive_body,
    version_in,
)
from a2a_hub.server.hub import HostedAgent
from a2a_hub.server.legacy_ids import client_view, stored_id
from a2a_hub.server.scope import SERVED_VERSIONS, VERSION_KEY
from a2a_hub.server.sse import SseReply, encoded_event, sse_response
from a2a_hub.stores.base import TaskEvent

__all__ = [
    "Answer",
    "Call",
    "HttpAnswer",
    "answer",
    "check_content_type",
    "handle",
    "resolve_family",
    "rpc",
]


@dataclass(slots=True)
class Call:
    """One JSON-RPC call: the agent, raw params, request id, ``Last-Event-ID``, the caller,
    the HTTP request and its ``Idempotency-Key`` header (the claim key of a send)."""

    agent: HostedAgent
    params: msgspec.Raw
    id: str | int | None = None
    last_event_id: str | None = None
    caller: Caller = ANONYMOUS
    request: Request | None = None
    idempotency_key: str | None = None

    @property
    def long_poll_timeout(self) -> float:
        """How long a 1.1 long-polling GetTask waits (``long_poll_timeout``)."""
        if self.request is None:
            return 30.0
        return hub_of(self.request).settings.server.long_poll_timeout


Handler = Callable[[Call], Awaitable[Any]]


class _Envelope(msgspec.Struct):
    jsonrpc: str
    method: str
    id: str | int | None = None
    params: msgspec.Raw = msgspec.Raw(b"")


class _Ok(msgspec.Struct):
    jsonrpc: str
    id: str | int | None
    result: Any


_enc = msgspec.json.Encoder()
_env_dec = msgspec.json.Decoder(_Envelope)
_any_dec = msgspec.json.Decoder()


T = TypeVar("T")


def _decode(raw: msgspec.Raw, kind: type[T]) -> T:
    if not raw:
        raise InvalidParamsError("params is required for this method")
    try:
        return fieldnames.decode(raw, kind)
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(f"invalid params: {_field_msg(exc)}") from None
    except msgspec.DecodeError as exc:  # the envelope skipped params: not UTF-8, too deep
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None


def _field_msg(exc: msgspec.ValidationError) -> str:
    return str(exc).replace("`$.", "`params.").replace("`$`", "`params`")


def _decode_any(raw: msgspec.Raw) -> Any:
    if not raw:
        raise InvalidParamsError("params is required for this method")
    try:
        params = fieldnames.decode_with(_any_dec, raw)
    except msgspec.DecodeError as exc:
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    if not isinstance(params, dict):
        raise InvalidParamsError("params must be an object")
    return params


def _position(call: Call, metadata: dict[str, Any] | None) -> int | None:
    """``Last-Event-ID`` from the header, else from ``params.metadata.lastEventId``."""
    value = call.last_event_id
    if value is None and metadata:
        value = metadata.get("lastEventId")
    return check_position(value)


def _rpc_stream(
    call: Call, stream: TaskStream, encode: Callable[[StreamResponse], Any | None], family: str
) -> SseReply:
    req_id = call.id
    if encode is _v10_event:  # 1.0: the event's JSON is shared by every stream sending it
        head = b'{"jsonrpc":"2.0","id":' + _enc.encode(req_id) + b',"result":'

        def event(ev: TaskEvent) -> bytes | None:
            return None if is_internal(ev.event) else head + encoded_event(ev) + b"}"

    elif encode is _v11_event:  # 1.1 preview: each event with its generation

        def event(ev: TaskEvent) -> bytes | None:
            if is_internal(ev.event):
                return None
            return _enc.encode(_Ok("2.0", req_id, with_generation(ev)))

    else:

        def event(ev: TaskEvent) -> bytes | None:
            result = encode(ev.event)
            return None if result is None else _enc.encode(_Ok("2.0", req_id, result))

    return SseReply(stream, event, lambda err: encode_error(req_id, err, family))


def _v10_event(event: StreamResponse) -> StreamResponse | None:
    return None if is_internal(event) else event


def _v03_event(event: StreamResponse) -> dict[str, Any] | None:
    return None if is_internal(event) else v03.encode_stream_event(event)


def _v01_encoder() -> Callable[[StreamResponse], dict[str, Any] | None]:
    indexer = v01.ArtifactIndexer()
    return lambda event: v01.encode_stream_event(event, indexer)


async def _extended_card(call: Call, v03: bool = False) -> Any:
    from a2a_hub.server.cards import extended_card_body

    if call.request is None:
        raise call.agent.no_extended_card()
    return extended_card_body(call.request, call.agent, call.caller, v03=v03)


async def _extended_card_03(call: Call) -> Any:
    return await _extended_card(call, v03=True)


# --- 1.0 -----------------------------------------------------------------------------


async def _send_10(call: Call) -> Any:
    request = _via(_decode(call.params, SendMessageRequest), None)
    result = await call.agent.engine.send(
        request,
        caller=call.caller,
        extensions=activate_for_request(call.agent),
        idempotency_key=call.idempotency_key,
    )
    if isinstance(result, Task):
        return SendMessageResponse(task=result)
    return SendMessageResponse(message=result)


async def _stream_10(call: Call) -> Any:
    call.agent.require_streaming("SendStreamingMessage")
    request = _via(_decode(call.params, SendMessageRequest), None)
    stream = await call.agent.engine.send_stream(
        request,
        caller=call.caller,
        extensions=activate_for_request(call.agent),
        idempotency_key=call.idempotency_key,
    )
    return _rpc_stream(call, stream, _v10_event, "1.0")


async def _subscribe_10(call: Call) -> Any:
    call.agent.require_streaming("SubscribeToTask")
    req = _decode(call.params, TaskIdRequest)
    stream = await call.agent.engine.subscribe(
        req.id, _position(call, req.metadata), caller=call.caller
    )
    return _rpc_stream(call, stream, _v10_event, "1.0")


async def _get_10(call: Call) -> Any:
    req = _decode(call.params, GetTaskRequest)
    return await call.agent.engine.get_task(req.id, req.history_length, caller=call.caller)


async def _list_10(call: Call) -> Any:
    req = _decode(call.params, ListTasksRequest) if call.params else ListTasksRequest()
    return await call.agent.engine.list_tasks(req, caller=call.caller)


async def _cancel_10(call: Call) -> Any:
    task_id = _decode(call.params, TaskIdRequest).id
    return await call.agent.engine.cancel_task(task_id, caller=call.caller)


class _PushRef(msgspec.Struct, rename="camel"):
    task_id: str
    id: str = ""


class _PushList(msgspec.Struct, rename="camel"):
    configs: list[TaskPushNotificationConfig]
    next_page_token: str = ""


def _push_ref(call: Call, *, need_id: bool) -> _PushRef:
    ref = _decode(call.params, _PushRef)
    if not ref.task_id:
        raise InvalidParamsError("params.taskId must not be empty")
    if need_id and not ref.id:
        raise InvalidParamsError("params.id (the push notification config id) is required")
    return ref


def _via(request: SendMessageRequest, version: str | None) -> SendMessageRequest:
    """Mark an inline push config with the protocol version it came through."""
    config = request.configuration
    if config is None or config.task_push_notification_config is None:
        return request
    push = msgspec.structs.replace(config.task_push_notification_config, hub_protocol=version)
    config = msgspec.structs.replace(config, task_push_notification_config=push)
    return msgspec.structs.replace(request, configuration=config)


async def _push_create_10(call: Call) -> Any:
    config = _decode(call.params, TaskPushNotificationConfig)
    config = msgspec.structs.replace(config, hub_protocol=None)
    if not config.task_id:
        raise InvalidParamsError("params.taskId is required")
    return await call.agent.engine.set_push_config(config, caller=call.caller)


async def _push_get_10(call: Call) -> Any:
    ref = _push_ref(call, need_id=True)
    return await call.agent.engine.get_push_config(ref.task_id, ref.id, caller=call.caller)


async def _push_list_10(call: Call) -> Any:
    ref = _push_ref(call, need_id=False)
    return _PushList(await call.agent.engine.list_push_configs(ref.task_id, caller=call.caller))


async def _push_delete_10(call: Call) -> Any:
    ref = _push_ref(call, need_id=True)
    await call.agent.engine.delete_push_config(ref.task_id, ref.id, caller=call.caller)
    return None


V10: dict[str, Handler] = {
    "SendMessage": _send_10,
    "SendStreamingMessage": _stream_10,
    "GetTask": _get_10,
    "ListTasks": _list_10,
    "CancelTask": _cancel_10,
    "SubscribeToTask": _subscribe_10,
    "CreateTaskPushNotificationConfig": _push_create_10,
    "GetTaskPushNotificationConfig": _push_get_10,
    "ListTaskPushNotificationConfigs": _push_list_10,
    "DeleteTaskPushNotificationConfig": _push_delete_10,
    "GetExtendedAgentCard": _extended_card,
}

# --- 1.1 preview (dev-1.1 of a2aproject/A2A: generation) ---------------------------------


def _v11_event(event: StreamResponse) -> StreamResponse | None:  # marks the 1.1 encoding
    return None if is_internal(event) else event


async def _send_11(call: Call) -> Any:
    request = _via(_decode(call.params, SendMessageRequestV11), None)
    result = await call.agent.engine.send_v11(
        request,
        caller=call.caller,
        extensions=activate_for_request(call.agent),
        idempotency_key=call.idempotency_key,
    )
    if isinstance(result, Task):
        return SendMessageResponse(task=result)
    return SendMessageResponse(message=result)


async def _stream_11(call: Call) -> Any:
    call.agent.require_streaming("SendStreamingMessage")
    request = _via(_decode(call.params, SendMessageRequestV11), None)
    stream = await call.agent.engine.send_stream(
        request,
        caller=call.caller,
        extensions=activate_for_request(call.agent),
        idempotency_key=call.idempotency_key,
    )
    return _rpc_stream(call, stream, _v11_event, "1.1")


async def _subscribe_11(call: Call) -> Any:
    call.agent.require_streaming("SubscribeToTask")
    req = _decode(call.params, TaskIdRequest)
    stream = await call.agent.engine.subscribe(
        req.id, _position(call, req.metadata), caller=call.caller
    )
    return _rpc_stream(call, stream, _v11_event, "1.1")


async def _get_11(call: Call) -> Any:
    req = _decode(call.params, GetTaskRequestV11)
    return await call.agent.engine.get_task_v11(
        req.id,
        req.history_length,
        caller=call.caller,
        current_generation=req.current_generation,
        wait=call.long_poll_timeout,
    )


async def _cancel_11(call: Call) -> Any:
    task_id = _decode(call.params, TaskIdRequest).id
    engine = call.agent.engine
    await engine.cancel_task(task_id, caller=call.caller)
    return await engine.get_task_v11(task_id, caller=call.caller)


V11: dict[str, Handler] = {
    **V10,
    "SendMessage": _send_11,
    "SendStreamingMessage": _stream_11,
    "GetTask": _get_11,
    "CancelTask": _cancel_11,
    "SubscribeToTask": _subscribe_11,
}

# --- 0.3 and 0.1 ---------------------------------------------------------------------


def _encode_old(task: Task) -> dict[str, Any]:
    """Tasks created through 0.1 ``tasks/send`` are answered in 0.1 shape, others in 0.3."""
    return v01.encode_task(task) if v01.is_legacy_task(task) else v03.encode_task(task)


async def _send_03(call: Call) -> Any:
    request = _via(v03.decode_send_params(_decode_any(call.params)), "0.3")
    result = await call.agent.engine.send(
        request,
        caller=call.caller,
        extensions=activate_for_request(call.agent),
        idempotency_key=call.idempotency_key,
    )
    return v03.encode_send_result(result)


async def _stream_03(call: Call) -> Any:
    call.agent.require_streaming("message/stream")
    request = _via(v03.decode_send_params(_decode_any(call.params)), "0.3")
    stream = await call.agent.engine.send_stream(
        request,
        caller=call.caller,
        extensions=activate_for_request(call.agent),
        idempotency_key=call.idempotency_key,
    )
    return _rpc_stream(call, stream, _v03_event, "0.3")


async def _get_old(call: Call) -> Any:
    asked, history_length = v03.decode_task_query(_decode_any(call.params))
    task_id = await stored_id(call.agent.engine, call.caller, asked)
    task = await call.agent.engine.get_task(task_id, history_length, caller=call.caller)
    return client_view(_encode_old(task), asked, task_id)


async def _cancel_old(call: Call) -> Any:
    asked = v03.decode_task_id(_decode_any(call.params))
    task_id = await stored_id(call.agent.engine, call.caller, asked)
    task = await call.agent.engine.cancel_task(task_id, caller=call.caller)
    return client_view(_encode_old(task), asked, task_id)


async def _resubscribe_old(call: Call) -> Any:
    call.agent.require_streaming("tasks/resubscribe")
    params = _decode_any(call.params)
    asked = v03.decode_task_id(params)
    task_id = await stored_id(call.agent.engine, call.caller, asked)
    metadata = params.get("metadata")
    after = _position(call, metadata if isinstance(metadata, dict) else None)
    legacy = v01.is_legacy_task(await call.agent.engine.get_task(task_id, 1, caller=call.caller))
    stream = await call.agent.engine.subscribe(task_id, after, caller=call.caller)
    encode = _v01_encoder() if legacy else _v03_event
    return _rpc_stream(call, stream, _shown_as(encode, asked, task_id), "0.1" if legacy else "0.3")


def _shown_as(
    encode: Callable[[StreamResponse], dict[str, Any] | None], asked: str, task_id: str
) -> Callable[[StreamResponse], dict[str, Any] | None]:
    """``encode`` showing the stored id ``task_id`` as the 0.1 id the client chose."""
    if asked == task_id:
        return encode
    return lambda event: client_view(encode(event), asked, task_id)


async def _legacy_send(call: Call) -> tuple[SendMessageRequest, str, str]:
    """A 0.1 send's request, the id its client chose and the id of the task it means."""
    request, asked = v01.decode_send_params(_decode_any(call.params))
    request = _via(request, "0.1")
    task_id = await stored_id(call.agent.engine, call.caller, asked)
    config = request.configuration
    if task_id != asked and config is not None and config.task_push_notification_config:
        push = msgspec.structs.replace(
            config.task_push_notification_config, id=task_id, task_id=task_id
        )
        config = msgspec.structs.replace(config, task_push_notification_config=push)
        request = msgspec.structs.replace(request, configuration=config)
    return request, asked, task_id


async def _send_01(call: Call) -> Any:
    request, asked, task_id = await _legacy_send(call)
    result = await call.agent.engine.send(
        request,
        new_task_id=task_id,
        caller=call.caller,
        extensions=activate_for_request(call.agent),
        idempotency_key=call.idempotency_key,
    )
    if not isinstance(result, Task):  # cannot happen: a client-chosen id binds the run to a task
        raise InternalError("the agent answered a 0.1 tasks/send without a task")
    return client_view(v01.encode_task(result), asked, task_id)


async def _stream_01(call: Call) -> Any:
    call.agent.require_streaming("tasks/sendSubscribe")
    request, asked, task_id = await _legacy_send(call)
    stream = await call.agent.engine.send_stream(
        request,
        new_task_id=task_id,
        caller=call.caller,
        extensions=activate_for_request(call.agent),
        idempotency_key=call.idempotency_key,
    )
    return _rpc_stream(call, stream, _shown_as(_v01_encoder(), asked, task_id), "0.1")


async def _push_set_03(call: Call) -> Any:
    config = v03.decode_push_config_set(_decode_any(call.params))
    config = msgspec.structs.replace(config, hub_protocol="0.3")
    return v03.encode_push_config(
        await call.agent.engine.set_push_config(config, caller=call.caller)
    )


async def _push_get_03(call: Call) -> Any:
    task_id, config_id = v03.decode_push_config_ref(_decode_any(call.params))
    engine = call.agent.engine
    if config_id is None:  # 0.3 get without a config id: the task's default config
        config_id = task_id
        configs = await engine.list_push_configs(task_id, caller=call.caller)
        if configs and all(c.id != task_id for c in configs):
            config_id = configs[0].id or task_id
    return v03.encode_push_config(
        await engine.get_push_config(task_id, config_id, caller=call.caller)
    )


async def _push_list_03(call: Call) -> Any:
    task_id, _ = v03.decode_push_config_ref(_decode_any(call.params))
    configs = await call.agent.engine.list_push_configs(task_id, caller=call.caller)
    return [v03.encode_push_config(c) for c in configs]


async def _push_delete_03(call: Call) -> Any:
    task_id, config_id = v03.decode_push_config_ref(
        _decode_any(call.params), require_config_id=True
    )
    assert config_id is not None
    await call.agent.engine.delete_push_config(task_id, config_id, caller=call.caller)
    return None


async def _push_set_01(call: Call) -> Any:
    config = msgspec.structs.replace(
        v01.decode_push_set(_decode_any(call.params)), hub_protocol="0.1"
    )
    asked = config.task_id or ""
    task_id = await stored_id(call.agent.engine, call.caller, asked)
    if task_id != asked:
        config = msgspec.structs.replace(config, id=task_id, task_id=task_id)
    stored = await call.agent.engine.set_push_config(config, caller=call.caller)
    return client_view(v01.encode_push_config(stored.task_id or "", stored), asked, task_id)


async def _push_get_01(call: Call) -> Any:
    asked = v03.decode_task_id(_decode_any(call.params))
    task_id = await stored_id(call.agent.engine, call.caller, asked)
    config = await call.agent.engine.get_push_config(task_id, task_id, caller=call.caller)
    return client_view(v01.encode_push_config(task_id, config), asked, task_id)


_SHARED: dict[str, Handler] = {
    "tasks/get": _get_old,
    "tasks/cancel": _cancel_old,
    "tasks/resubscribe": _resubscribe_old,
}

V03: dict[str, Handler] = {
    "message/send": _send_03,
    "message/stream": _stream_03,
    **_SHARED,
    "tasks/pushNotificationConfig/set": _push_set_03,
    "tasks/pushNotificationConfig/get": _push_get_03,
    "tasks/pushNotificationConfig/list": _push_list_03,
    "tasks/pushNotificationConfig/delete": _push_delete_03,
    "agent/getAuthenticatedExtendedCard": _extended_card_03,
}

V01: dict[str, Handler] = {
    "tasks/send": _send_01,
    "tasks/sendSubscribe": _stream_01,
    **_SHARED,
    "tasks/pushNotification/set": _push_set_01,
    "tasks/pushNotification/get": _push_get_01,
}

_FAMILIES: dict[str, dict[str, Handler]] = {
    "1.1": V11,
    "1.0": V10,
    "0.3": {**V01, **V03},
    "0.1": V01,
}


#: What :func:`resolve_family` found for the (version, method) pairs seen (most
#: requests repeat a handful of them).
_resolved: dict[tuple[str | None, str], tuple[str, Handler]] = {}


def resolve_family(version: str | None, method: str) -> tuple[str, Handler]:
    """Pick the protocol family and handler for a method under an ``A2A-Version`` value."""
    found = _resolved.get((version, method))
    if found is None:
        found = _resolve(version, method)
        if len(_resolved) >= 256:  # odd versions and methods must not grow it without bound
            _resolved.clear()
        _resolved[version, method] = found
    return found


def _resolve(version: str | None, method: str) -> tuple[str, Handler]:
    if version:
        family = _family_of(version)
    elif method in V10:
        family = "1.0"
    elif method in V03:
        family = "0.3"
    elif method in V01:
        family = "0.1"
    else:
        raise MethodNotFoundError(f"Method {method!r} is not an A2A method ({SERVED_VERSIONS})")
    handler = _FAMILIES[family].get(method)
    if handler is None:
        for other, table in _FAMILIES.items():
            if method in table:
                raise MethodNotFoundError(
                    f"Method {method!r} belongs to A2A {other}, but the request asks for A2A "
                    f"{version}; send A2A-Version: {other} or use the {family} method"
                )
        raise MethodNotFoundError(f"Method {method!r} does not exist in A2A {family}")
    return family, handler


def _family_of(version: str) -> str:
    major, _, minor = version.strip().partition(".")
    if major == "1":  # 1.1: the preview (see server/scope.py); any other 1.x is 1.0
        return "1.0" if minor == "0" or minor.partition(".")[0] != "1" else "1.1"
    if major == "0" and minor.split(".")[0] in ("2", "3"):
        return "0.3"
    if major == "0" and minor.split(".")[0] == "1":
        return "0.1"
    raise VersionNotSupportedError(
        f"A2A version {version!r} is not supported; this server speaks {SERVED_VERSIONS}",
        data={"requested": version, "supported": "1.1,1.0,0.3,0.2,0.1"},
    )


def _readable_id(body: bytes) -> str | int | None:
    """The ``id`` of a request that is not valid JSON-RPC, if one can be read (else None)."""
    try:
        obj = fieldnames.decode_with(_any_dec, body)
    except msgspec.DecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    value = obj.get("id")
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _family_or_none(version: str | None) -> str | None:
    try:
        return _family_of(version) if version else None
    except VersionNotSupportedError:
        return None


def check_content_type(content_type: str | None) -> None:
    """Refuse (:class:`ContentTypeNotSupportedError`, HTTP 415) a body not declared as JSON.

    ``application/json``, ``application/a2a+json`` and any other ``+json`` type (any
    parameters) are served.  A request without a ``Content-Type``, or with ``text/plain``
    or a form type, is refused: those are the types a web page may send to another site
    without a CORS preflight, so accepting them would let any page create or cancel tasks
    on a hub it can reach (a local one included).
    """
    if is_json(content_type):
        return
    media = (content_type or "").split(";")[0].strip().lower()
    raise ContentTypeNotSupportedError(
        f"Content-Type {media or '(none)'!r} is not supported by the JSON-RPC endpoint; send "
        "the request as application/json (or application/a2a+json)",
        data={"contentType": media},
    )


class Answer(NamedTuple):
    """What :func:`handle` made of one JSON-RPC request: the encoded response (a result or
    an error object), or the stream of a streaming method; the error answered, if any; the
    family the request was served in (``None`` when none was resolved)."""

    reply: bytes | SseReply
    error: A2AError | None = None
    family: str | None = None


async def handle(
    body: bytes,
    agent: HostedAgent,
    version: str | None,
    caller: Caller,
    *,
    last_event_id: str | None = None,
    idempotency_key: str | None = None,
    request: Request | None = None,
    where: str = "JSON-RPC",
) -> Answer:
    """One JSON-RPC request, already read, for any binding that carries it (``POST`` on an
    agent's URL, a frame of the WebSocket binding :mod:`a2a_hub.server.ws_rpc`).

    The catch-all of JSON-RPC: every failure is a JSON-RPC error object carrying the
    request's ``id`` whenever it can be read.  Never raises.
    """
    req_id: str | int | None = None
    family: str | None = None
    try:
        try:
            env = fieldnames.decode_with(_env_dec, body)
        except msgspec.ValidationError as exc:
            req_id = _readable_id(body)
            family = _family_or_none(version)
            raise InvalidRequestError(
                f"not a JSON-RPC 2.0 request: {exc} (expected an object with jsonrpc, "
                "method, id and params)"
            ) from None
        except msgspec.DecodeError as exc:
            raise JSONParseError(f"Invalid JSON payload: {exc}") from None
        req_id = env.id
        if env.jsonrpc != "2.0":
            family = _family_or_none(version)
            raise InvalidRequestError('jsonrpc must be "2.0"')
        family, handler = resolve_family(version, env.method)
        call = Call(agent, env.params, req_id, last_event_id, caller, request, idempotency_key)
        result = await handler(call)
        if isinstance(result, SseReply):
            return Answer(result, None, family)
        return Answer(_enc.encode(_Ok("2.0", req_id, result)), None, family)
    except Exception as exc:
        err = protocol_error(exc, where)
        return Answer(encode_error(req_id, err, family or "1.0"), err, family)


class HttpAnswer(NamedTuple):
    """What :func:`answer` made of one JSON-RPC ``POST``: the HTTP status, the JSON body (or
    the stream of a streaming method) and the headers to add to the JSON's own."""

    status: int
    reply: bytes | SseReply
    headers: list[tuple[bytes, bytes]]


async def answer(request: Request, headers: Mapping[bytes, bytes]) -> HttpAnswer:
    """``POST`` on an agent's URL (or the root alias): one JSON-RPC request, any version,
    ``headers`` being the request's (:func:`~a2a_hub.server.http.first_values`).

    A request refused before its body is parsed (no such agent, a body over the
    limit, a Content-Type that is not JSON) gets the error's HTTP status; after that
    every error is a JSON-RPC error object with HTTP 200 (:func:`handle`), except a missing
    credential (401 with ``WWW-Authenticate``, e.g. ``GetExtendedAgentCard`` without a key).
    Never raises.  :func:`rpc` is its Starlette endpoint; the app's front calls it directly
    (:mod:`a2a_hub.server.front`).
    """
    hub = hub_of(request)
    req_id: str | int | None = None
    where = "JSON-RPC"
    try:
        agent = agent_of(request, hub)
        where = f"agent {agent.id}"
        body = await receive_body(
            request, hub.settings.server.max_body_bytes, headers.get(b"content-length")
        )
        version = version_in(request, headers)
        content_type = headers.get(b"content-type")
        if content_type != b"application/json":
            try:
                check_content_type(None if content_type is None else content_type.decode("latin-1"))
            except ContentTypeNotSupportedError:
                req_id = _readable_id(body)
                raise
        caller = caller_of(request)
    except Exception as exc:
        err = protocol_error(exc, where)
        return _http_answer(encode_error(req_id, err, "1.0"), err.http_status, err)
    last_event_id = headers.get(b"last-event-id")
    idempotency_key = headers.get(b"idempotency-key")
    answered = await handle(
        body,
        agent,
        version,
        caller,
        last_event_id=None if last_event_id is None else last_event_id.decode("latin-1"),
        idempotency_key=None if idempotency_key is None else idempotency_key.decode("latin-1"),
        request=request,
        where=where,
    )
    if answered.family is not None:
        request.scope[VERSION_KEY] = answered.family
    if isinstance(answered.reply, SseReply):
        return HttpAnswer(200, answered.reply, [])
    # a missing credential is a 401 on every binding (the extended card asks for one), a
    # rate limit a 429 with Retry-After
    error = answered.error
    status = error.http_status if error is not None and error.http_status in (401, 429) else 200
    return _http_answer(answered.reply, status, error)


def _http_answer(body: bytes, status: int, error: A2AError | None = None) -> HttpAnswer:
    if status == 401:
        return HttpAnswer(status, body, [(b"www-authenticate", _CHALLENGE)])
    if isinstance(error, RateLimitedError):
        return HttpAnswer(status, body, [(b"retry-after", error.retry_after_header.encode())])
    return HttpAnswer(status, body, [])


_CHALLENGE = WWW_AUTHENTICATE.encode("latin-1")


async def rpc(request: Request) -> Response:
    """The JSON-RPC endpoint (:func:`answer`) as a Starlette endpoint."""
    answered = await answer(request, first_values(request.scope["headers"]))
    if isinstance(answered.reply, SseReply):
        return sse_response(answered.reply, hub_of(request).settings.server.sse_heartbeat)
    response = Response(answered.reply, answered.status, media_type=JSON)
    response.raw_headers += answered.headers
    return response
