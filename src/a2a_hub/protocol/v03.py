"""Codec between the A2A 0.3 (and 0.2) JSON-RPC shapes and the canonical 1.0 structs.

Decoders take the Python builtins that ``msgspec.json.decode`` produced for a
request's ``params`` (or a peer's result) and return canonical structs from
:mod:`a2a_hub.protocol.types`.  Encoders go the other way and return plain dicts
ready for ``msgspec.json.encode``.  Nothing here does I/O.

Decoding first rewrites the 0.3 dict into the canonical 1.0 dict with fast,
hand-written checks on everything that is renamed (parts, roles, states, push
configs), then lets ``msgspec.convert`` validate the rest.  Every problem is
raised as :class:`InvalidParamsError` whose message starts with the path of the
offending field, e.g. ``params.message.parts[0]: unknown part kind 'foo'``.

Lossy corners (1.0 can say more than 0.3):

* ``mediaType``/``filename`` on text and data parts have no 0.3 place and are dropped.
* A part with no content at all is encoded as an empty text part.
* ``Role.UNSPECIFIED`` is encoded as ``"agent"``.
* 1.0 ``data`` may be any JSON value, 0.3 requires an object; values are passed
  through unchanged in both directions.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, NoReturn, TypeVar

import msgspec

from a2a_hub.protocol.errors import InvalidAgentResponseError, InvalidParamsError
from a2a_hub.protocol.types import (
    Artifact,
    AuthenticationInfo,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = [
    "ROLE_TO_V03",
    "STATE_TO_V03",
    "V03_TO_ROLE",
    "V03_TO_STATE",
    "decode_artifact",
    "decode_message",
    "decode_push_config_ref",
    "decode_push_config_set",
    "decode_send_params",
    "decode_send_result",
    "decode_stream_event",
    "decode_task",
    "decode_task_id",
    "decode_task_query",
    "encode_artifact",
    "encode_message",
    "encode_part",
    "encode_push_config",
    "encode_send_result",
    "encode_status",
    "encode_stream_event",
    "encode_task",
]

_T = TypeVar("_T")

STATE_TO_V03: dict[TaskState, str] = {
    TaskState.UNSPECIFIED: "unknown",
    TaskState.SUBMITTED: "submitted",
    TaskState.WORKING: "working",
    TaskState.COMPLETED: "completed",
    TaskState.FAILED: "failed",
    TaskState.CANCELED: "canceled",
    TaskState.INPUT_REQUIRED: "input-required",
    TaskState.REJECTED: "rejected",
    TaskState.AUTH_REQUIRED: "auth-required",
}
"""Canonical task state -> 0.3 kebab-case state."""

V03_TO_STATE: dict[str, TaskState] = {v: k for k, v in STATE_TO_V03.items()}
"""0.3 kebab-case state -> canonical task state."""

ROLE_TO_V03: dict[Role, str] = {
    Role.USER: "user",
    Role.AGENT: "agent",
    Role.UNSPECIFIED: "agent",
}
"""Canonical role -> 0.3 role (0.3 has no "unspecified"; it becomes "agent")."""

V03_TO_ROLE: dict[str, Role] = {"user": Role.USER, "agent": Role.AGENT}
"""0.3 role -> canonical role."""


# --- shared validation helpers (also used by the 0.1 codec) --------------------------


def _json_type(v: Any) -> str:
    """Name of the JSON type of a decoded value, for error messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _fail(path: str, problem: str) -> NoReturn:
    raise InvalidParamsError(f"{path}: {problem}")


def _obj(v: Any, path: str) -> dict[str, Any]:
    """``v`` if it is a JSON object, else raise naming ``path``."""
    if isinstance(v, dict):
        return v
    _fail(path, f"expected an object, got {_json_type(v)}")


def _req_obj(d: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    v = d.get(key)
    if v is None:
        _fail(f"{path}.{key}", "required field is missing")
    return _obj(v, f"{path}.{key}")


def _req_str(d: dict[str, Any], key: str, path: str, *, non_empty: bool = False) -> str:
    v = d.get(key)
    if v is None:
        _fail(f"{path}.{key}", "required field is missing")
    if not isinstance(v, str):
        _fail(f"{path}.{key}", f"expected a string, got {_json_type(v)}")
    if non_empty and not v:
        _fail(f"{path}.{key}", "must not be empty")
    return v


def _opt_str(d: dict[str, Any], key: str, path: str) -> str | None:
    v = d.get(key)
    if v is None or isinstance(v, str):
        return v
    _fail(f"{path}.{key}", f"expected a string, got {_json_type(v)}")


def _opt_bool(d: dict[str, Any], key: str, path: str) -> bool | None:
    v = d.get(key)
    if v is None or isinstance(v, bool):
        return v
    _fail(f"{path}.{key}", f"expected a boolean, got {_json_type(v)}")


def _opt_history_length(d: dict[str, Any], key: str, path: str) -> int | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        _fail(f"{path}.{key}", f"expected an integer, got {_json_type(v)}")
    if v < 0:
        _fail(f"{path}.{key}", f"must not be negative, got {v}")
    return v


def _opt_str_list(d: dict[str, Any], key: str, path: str) -> list[str] | None:
    v = _opt_list(d, key, path)
    if v is not None:
        for i, s in enumerate(v):
            if not isinstance(s, str):
                _fail(f"{path}.{key}[{i}]", f"expected a string, got {_json_type(s)}")
    return v


def _req_list(d: dict[str, Any], key: str, path: str) -> list[Any]:
    v = d.get(key)
    if v is None:
        _fail(f"{path}.{key}", "required field is missing")
    if not isinstance(v, list):
        _fail(f"{path}.{key}", f"expected an array, got {_json_type(v)}")
    return v


def _opt_list(d: dict[str, Any], key: str, path: str) -> list[Any] | None:
    v = d.get(key)
    if v is None or isinstance(v, list):
        return v
    _fail(f"{path}.{key}", f"expected an array, got {_json_type(v)}")


def _b64decode(s: str, path: str) -> bytes:
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError) as e:
        _fail(path, f"invalid base64: {e}")


def _b64encode(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


_AT = re.compile(r"^(.*) - at `\$(.*)`$", re.DOTALL)


def _convert(obj: Any, typ: type[_T], path: str) -> _T:
    """``msgspec.convert`` with errors re-raised as InvalidParamsError under ``path``."""
    try:
        return msgspec.convert(obj, typ)
    except msgspec.ValidationError as e:
        msg = str(e)
        m = _AT.match(msg)
        if m:
            raise InvalidParamsError(f"{path}{m.group(2)}: {m.group(1)}") from None
        raise InvalidParamsError(f"{path}: {msg}") from None


def _copy_keys(src: dict[str, Any], dst: dict[str, Any], keys: tuple[str, ...]) -> None:
    for k in keys:
        v = src.get(k)
        if v is not None:
            dst[k] = v


def _decode_auth(v: Any, path: str) -> dict[str, Any] | None:
    """0.1/0.3 ``{schemes[], credentials?}`` -> canonical ``{scheme, credentials?}`` dict.

    The canonical form has a single scheme: the first one is used.  An empty
    ``schemes`` list gives no authentication (there is no scheme to use).
    """
    if v is None:
        return None
    a = _obj(v, path)
    schemes = _req_list(a, "schemes", path)
    for i, s in enumerate(schemes):
        if not isinstance(s, str):
            _fail(f"{path}.schemes[{i}]", f"expected a string, got {_json_type(s)}")
    credentials = _opt_str(a, "credentials", path)
    if not schemes:
        return None
    out: dict[str, Any] = {"scheme": schemes[0]}
    if credentials is not None:
        out["credentials"] = credentials
    return out


def _decode_push_fields(v: Any, path: str, *, with_id: bool) -> dict[str, Any]:
    """0.1/0.3 PushNotificationConfig -> canonical TaskPushNotificationConfig dict."""
    c = _obj(v, path)
    out: dict[str, Any] = {"url": _req_str(c, "url", path)}
    if with_id:
        cid = _opt_str(c, "id", path)
        if cid is not None:
            out["id"] = cid
    token = _opt_str(c, "token", path)
    if token is not None:
        out["token"] = token
    auth = _decode_auth(c.get("authentication"), f"{path}.authentication")
    if auth is not None:
        out["authentication"] = auth
    return out


def _encode_auth(a: AuthenticationInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"schemes": [a.scheme]}
    if a.credentials is not None:
        out["credentials"] = a.credentials
    return out


def _decode_task_query(params: Any) -> tuple[str, int | None]:
    p = _obj(params, "params")
    return _req_str(p, "id", "params", non_empty=True), _opt_history_length(
        p, "historyLength", "params"
    )


def _decode_task_id(params: Any) -> str:
    p = _obj(params, "params")
    return _req_str(p, "id", "params", non_empty=True)


# --- parts and messages ---------------------------------------------------------------


def _decode_part(
    v: Any, path: str, *, tag: str = "kind", byte_keys: tuple[str, ...] = ("bytes",)
) -> dict[str, Any]:
    """A tagged part (0.3 ``kind``, 0.1 ``type``) -> canonical Part dict.

    ``byte_keys`` are the names a file's base64 content may have (0.1 examples use ``data``).
    """
    p = _obj(v, path)
    kind = p.get(tag)
    out: dict[str, Any]
    if kind == "text":
        text = p.get("text")
        if text is None:
            _fail(f"{path}.text", "required field is missing")
        if not isinstance(text, str):
            _fail(f"{path}.text", f"expected a string, got {_json_type(text)}")
        out = {"text": text}
    elif kind == "file":
        fpath = f"{path}.file"
        f = _req_obj(p, "file", path)
        bkey = next((k for k in byte_keys if f.get(k) is not None), byte_keys[0])
        b = f.get(bkey)
        uri = f.get("uri")
        if b is not None and uri is not None:
            _fail(fpath, f"must have exactly one of 'bytes' or 'uri', got {bkey!r} and 'uri'")
        if b is not None:
            if not isinstance(b, str):
                _fail(f"{fpath}.{bkey}", f"expected a base64 string, got {_json_type(b)}")
            out = {"raw": _b64decode(b, f"{fpath}.{bkey}")}
        elif uri is not None:
            if not isinstance(uri, str):
                _fail(f"{fpath}.uri", f"expected a string, got {_json_type(uri)}")
            out = {"url": uri}
        else:
            _fail(fpath, "must have one of 'bytes' or 'uri'")
        mime = _opt_str(f, "mimeType", fpath)
        if mime is not None:
            out["mediaType"] = mime
        name = _opt_str(f, "name", fpath)
        if name is not None:
            out["filename"] = name
    elif kind == "data":
        if "data" not in p:
            _fail(f"{path}.data", "required field is missing")
        out = {"data": p["data"]}
    elif kind is None:
        _fail(f"{path}.{tag}", "required field is missing")
    else:
        _fail(path, f"unknown part {tag} {kind!r} (expected 'text', 'file' or 'data')")
    md = p.get("metadata")
    if md is not None:
        out["metadata"] = md
    return out


def _decode_parts(d: dict[str, Any], path: str) -> list[dict[str, Any]]:
    parts = _req_list(d, "parts", path)
    ppath = f"{path}.parts"
    return [_decode_part(x, f"{ppath}[{i}]") for i, x in enumerate(parts)]


_MESSAGE_KEYS = ("messageId", "contextId", "taskId", "referenceTaskIds", "extensions", "metadata")


def _message_dict(v: Any, path: str) -> dict[str, Any]:
    """0.3 Message -> canonical Message dict (not yet validated by msgspec)."""
    m = _obj(v, path)
    kind = m.get("kind")
    if kind is not None and kind != "message":
        _fail(f"{path}.kind", f"expected 'message', got {kind!r}")
    role = m.get("role")
    if role is None:
        _fail(f"{path}.role", "required field is missing")
    r = V03_TO_ROLE.get(role) if isinstance(role, str) else None
    if r is None:
        _fail(f"{path}.role", f"unknown role {role!r} (expected 'user' or 'agent')")
    out: dict[str, Any] = {"role": r.value, "parts": _decode_parts(m, path)}
    _copy_keys(m, out, _MESSAGE_KEYS)
    return out


def decode_message(d: Any, path: str = "message") -> Message:
    """Decode a 0.3 ``Message`` object into a canonical :class:`Message`.

    ``kind`` is optional on input; ``path`` prefixes error messages.
    """
    return _convert(_message_dict(d, path), Message, path)


def encode_part(p: Part) -> dict[str, Any]:
    """Encode a canonical :class:`Part` as a 0.3 part (``kind`` text/file/data)."""
    out: dict[str, Any]
    if p.text is not None:
        out = {"kind": "text", "text": p.text}
    elif p.raw is not None or p.url is not None:
        f: dict[str, Any] = {"bytes": _b64encode(p.raw)} if p.raw is not None else {"uri": p.url}
        if p.media_type is not None:
            f["mimeType"] = p.media_type
        if p.filename is not None:
            f["name"] = p.filename
        out = {"kind": "file", "file": f}
    elif p.data is not msgspec.UNSET:
        out = {"kind": "data", "data": p.data}
    else:
        out = {"kind": "text", "text": ""}
    if p.metadata is not None:
        out["metadata"] = p.metadata
    return out


def encode_message(m: Message) -> dict[str, Any]:
    """Encode a canonical :class:`Message` as a 0.3 ``Message`` (with ``kind``)."""
    out: dict[str, Any] = {
        "kind": "message",
        "role": ROLE_TO_V03[m.role],
        "messageId": m.message_id,
    }
    if m.context_id is not None:
        out["contextId"] = m.context_id
    if m.task_id is not None:
        out["taskId"] = m.task_id
    if m.reference_task_ids is not None:
        out["referenceTaskIds"] = m.reference_task_ids
    out["parts"] = [encode_part(p) for p in m.parts]
    if m.extensions is not None:
        out["extensions"] = m.extensions
    if m.metadata is not None:
        out["metadata"] = m.metadata
    return out


# --- tasks ----------------------------------------------------------------------------


def _state(v: Any, path: str) -> str:
    if v is None:
        _fail(path, "required field is missing")
    s = V03_TO_STATE.get(v) if isinstance(v, str) else None
    if s is None:
        _fail(path, f"unknown task state {v!r}")
    return s.value


def _status_dict(v: Any, path: str) -> dict[str, Any]:
    s = _obj(v, path)
    out: dict[str, Any] = {"state": _state(s.get("state"), f"{path}.state")}
    if s.get("message") is not None:
        out["message"] = _message_dict(s["message"], f"{path}.message")
    _copy_keys(s, out, ("timestamp",))
    return out


def _artifact_dict(v: Any, path: str) -> dict[str, Any]:
    a = _obj(v, path)
    out: dict[str, Any] = {"parts": _decode_parts(a, path)}
    _copy_keys(a, out, ("artifactId", "name", "description", "metadata", "extensions"))
    return out


def _task_dict(v: Any, path: str) -> dict[str, Any]:
    t = _obj(v, path)
    kind = t.get("kind")
    if kind is not None and kind != "task":
        _fail(f"{path}.kind", f"expected 'task', got {kind!r}")
    out: dict[str, Any] = {"status": _status_dict(_req_obj(t, "status", path), f"{path}.status")}
    _copy_keys(t, out, ("id", "contextId", "metadata"))
    arts = _opt_list(t, "artifacts", path)
    if arts is not None:
        out["artifacts"] = [_artifact_dict(a, f"{path}.artifacts[{i}]") for i, a in enumerate(arts)]
    hist = _opt_list(t, "history", path)
    if hist is not None:
        out["history"] = [_message_dict(m, f"{path}.history[{i}]") for i, m in enumerate(hist)]
    return out


def decode_artifact(d: Any, path: str = "artifact") -> Artifact:
    """Decode a 0.3 ``Artifact`` into a canonical :class:`Artifact`."""
    return _convert(_artifact_dict(d, path), Artifact, path)


def decode_task(d: Any, path: str = "task") -> Task:
    """Decode a 0.3 ``Task`` (e.g. a peer's result) into a canonical :class:`Task`."""
    return _convert(_task_dict(d, path), Task, path)


def encode_status(s: TaskStatus) -> dict[str, Any]:
    """Encode a canonical :class:`TaskStatus` as a 0.3 ``TaskStatus``."""
    out: dict[str, Any] = {"state": STATE_TO_V03[s.state]}
    if s.message is not None:
        out["message"] = encode_message(s.message)
    if s.timestamp is not None:
        out["timestamp"] = s.timestamp
    return out


def encode_artifact(a: Artifact) -> dict[str, Any]:
    """Encode a canonical :class:`Artifact` as a 0.3 ``Artifact``."""
    out: dict[str, Any] = {"artifactId": a.artifact_id}
    if a.name is not None:
        out["name"] = a.name
    if a.description is not None:
        out["description"] = a.description
    out["parts"] = [encode_part(p) for p in a.parts]
    if a.metadata is not None:
        out["metadata"] = a.metadata
    if a.extensions is not None:
        out["extensions"] = a.extensions
    return out


def encode_task(t: Task) -> dict[str, Any]:
    """Encode a canonical :class:`Task` as a 0.3 ``Task`` (``kind``, ``contextId`` always set)."""
    out: dict[str, Any] = {
        "kind": "task",
        "id": t.id,
        "contextId": t.context_id,
        "status": encode_status(t.status),
    }
    if t.artifacts is not None:
        out["artifacts"] = [encode_artifact(a) for a in t.artifacts]
    if t.history is not None:
        out["history"] = [encode_message(m) for m in t.history]
    if t.metadata is not None:
        out["metadata"] = t.metadata
    return out


def encode_send_result(r: Task | Message) -> dict[str, Any]:
    """Encode the result of ``message/send``: a 0.3 ``Task`` or ``Message``."""
    if isinstance(r, Task):
        return encode_task(r)
    return encode_message(r)


def decode_send_result(d: Any, path: str = "result") -> Task | Message:
    """Decode a 0.3 ``message/send`` result (by its ``kind``) into a Task or Message."""
    r = _obj(d, path)
    kind = r.get("kind")
    if kind == "task":
        return decode_task(r, path)
    if kind == "message":
        return decode_message(r, path)
    _fail(f"{path}.kind", f"expected 'task' or 'message', got {kind!r}")


# --- streaming ------------------------------------------------------------------------


def encode_stream_event(ev: StreamResponse) -> dict[str, Any]:
    """Encode a canonical :class:`StreamResponse` as a 0.3 streaming result.

    Status updates carry ``final: true`` when the new state is terminal or
    interrupted (input-required / auth-required); that is where a 0.3 stream ends.
    """
    if ev.status_update is not None:
        su = ev.status_update
        out: dict[str, Any] = {
            "kind": "status-update",
            "taskId": su.task_id,
            "contextId": su.context_id,
            "status": encode_status(su.status),
            "final": su.status.state.terminal or su.status.state.interrupted,
        }
        if su.metadata is not None:
            out["metadata"] = su.metadata
        return out
    if ev.artifact_update is not None:
        au = ev.artifact_update
        out = {
            "kind": "artifact-update",
            "taskId": au.task_id,
            "contextId": au.context_id,
            "artifact": encode_artifact(au.artifact),
            "append": au.append,
            "lastChunk": au.last_chunk,
        }
        if au.metadata is not None:
            out["metadata"] = au.metadata
        return out
    if ev.task is not None:
        return encode_task(ev.task)
    if ev.message is not None:
        return encode_message(ev.message)
    raise InvalidAgentResponseError(
        "stream event has none of task, message, statusUpdate, artifactUpdate"
    )


def decode_stream_event(d: Any, path: str = "result") -> StreamResponse:
    """Decode a 0.3 streaming result (by its ``kind``) into a :class:`StreamResponse`.

    The 0.3 ``final`` flag has no 1.0 counterpart and is dropped.
    """
    r = _obj(d, path)
    kind = r.get("kind")
    if kind == "task":
        return StreamResponse(task=decode_task(r, path))
    if kind == "message":
        return StreamResponse(message=decode_message(r, path))
    if kind == "status-update":
        su: dict[str, Any] = {"status": _status_dict(_req_obj(r, "status", path), f"{path}.status")}
        _copy_keys(r, su, ("taskId", "contextId", "metadata"))
        return StreamResponse(status_update=_convert(su, TaskStatusUpdateEvent, path))
    if kind == "artifact-update":
        au: dict[str, Any] = {
            "artifact": _artifact_dict(_req_obj(r, "artifact", path), f"{path}.artifact")
        }
        _copy_keys(r, au, ("taskId", "contextId", "append", "lastChunk", "metadata"))
        return StreamResponse(artifact_update=_convert(au, TaskArtifactUpdateEvent, path))
    if kind is None:
        _fail(f"{path}.kind", "required field is missing")
    _fail(f"{path}.kind", f"unknown event kind {kind!r}")


# --- requests -------------------------------------------------------------------------


def decode_send_params(params: Any) -> SendMessageRequest:
    """Decode 0.3 ``MessageSendParams`` (``message/send``, ``message/stream``).

    ``configuration.blocking`` defaults to true; ``blocking: false`` becomes
    ``returnImmediately: true``.  ``configuration.pushNotificationConfig`` becomes
    ``taskPushNotificationConfig`` with the first of its authentication schemes.
    """
    p = _obj(params, "params")
    if p.get("message") is None:
        _fail("params.message", "required field is missing")
    out: dict[str, Any] = {"message": _message_dict(p["message"], "params.message")}
    _copy_keys(p, out, ("metadata",))
    cfg_v = p.get("configuration")
    if cfg_v is not None:
        cpath = "params.configuration"
        c = _obj(cfg_v, cpath)
        cfg: dict[str, Any] = {}
        modes = _opt_str_list(c, "acceptedOutputModes", cpath)
        if modes is not None:
            cfg["acceptedOutputModes"] = modes
        hl = _opt_history_length(c, "historyLength", cpath)
        if hl is not None:
            cfg["historyLength"] = hl
        if _opt_bool(c, "blocking", cpath) is False:
            cfg["returnImmediately"] = True
        push = c.get("pushNotificationConfig")
        if push is not None:
            cfg["taskPushNotificationConfig"] = _decode_push_fields(
                push, f"{cpath}.pushNotificationConfig", with_id=True
            )
        out["configuration"] = cfg
    return _convert(out, SendMessageRequest, "params")


def decode_task_query(params: Any) -> tuple[str, int | None]:
    """Decode ``tasks/get`` params ``{id, historyLength?}`` into ``(task_id, history_length)``."""
    return _decode_task_query(params)


def decode_task_id(params: Any) -> str:
    """Decode ``{id}`` params (``tasks/cancel``, ``tasks/resubscribe``) into the task id."""
    return _decode_task_id(params)


# --- push notification configs --------------------------------------------------------


def decode_push_config_set(params: Any) -> TaskPushNotificationConfig:
    """Decode ``tasks/pushNotificationConfig/set`` params ``{taskId, pushNotificationConfig}``.

    The config id defaults to the task id when absent, as the 0.3 SDK does.
    """
    p = _obj(params, "params")
    task_id = _req_str(p, "taskId", "params", non_empty=True)
    cpath = "params.pushNotificationConfig"
    if p.get("pushNotificationConfig") is None:
        _fail(cpath, "required field is missing")
    c = _decode_push_fields(p["pushNotificationConfig"], cpath, with_id=True)
    c["taskId"] = task_id
    c.setdefault("id", task_id)
    return _convert(c, TaskPushNotificationConfig, cpath)


def decode_push_config_ref(
    params: Any, *, require_config_id: bool = False
) -> tuple[str, str | None]:
    """Decode ``{id, pushNotificationConfigId?}`` (push config get/list/delete).

    Returns ``(task_id, config_id)``.  With ``require_config_id`` (delete) a missing
    ``pushNotificationConfigId`` is an error.
    """
    p = _obj(params, "params")
    task_id = _req_str(p, "id", "params", non_empty=True)
    if require_config_id:
        return task_id, _req_str(p, "pushNotificationConfigId", "params")
    return task_id, _opt_str(p, "pushNotificationConfigId", "params")


def encode_push_config(c: TaskPushNotificationConfig) -> dict[str, Any]:
    """Encode a canonical config as a 0.3 ``TaskPushNotificationConfig``."""
    inner: dict[str, Any] = {}
    if c.id is not None:
        inner["id"] = c.id
    inner["url"] = c.url
    if c.token is not None:
        inner["token"] = c.token
    if c.authentication is not None:
        inner["authentication"] = _encode_auth(c.authentication)
    return {"taskId": c.task_id or "", "pushNotificationConfig": inner}
