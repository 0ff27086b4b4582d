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

from collections.abc import Callable
from typing import Any

import msgspec

from a2a_hub.protocol._fields import (
    b64decode,
    b64encode,
    convert,
    copy_keys,
    fail,
    json_type,
    obj,
    opt_bool,
    opt_list,
    opt_non_negative_int,
    opt_str,
    opt_str_list,
    req,
    req_list,
    req_obj,
    req_str,
    str_items,
)
from a2a_hub.protocol.errors import InvalidAgentResponseError
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


# --- shapes shared with the 0.1 codec ------------------------------------------------


def _decode_auth(v: Any, path: str) -> dict[str, Any] | None:
    """0.1/0.3 ``{schemes[], credentials?}`` -> canonical ``{scheme, credentials?}`` dict.

    The canonical form has a single scheme: the first one is used.  An empty
    ``schemes`` list gives no authentication (there is no scheme to use).
    """
    if v is None:
        return None
    a = obj(v, path)
    schemes = req_list(a, "schemes", path)
    str_items(schemes, f"{path}.schemes")
    credentials = opt_str(a, "credentials", path)
    if not schemes:
        return None
    out: dict[str, Any] = {"scheme": schemes[0]}
    if credentials is not None:
        out["credentials"] = credentials
    return out


def _decode_push_fields(v: Any, path: str, *, with_id: bool) -> dict[str, Any]:
    """0.1/0.3 PushNotificationConfig -> canonical TaskPushNotificationConfig dict."""
    c = obj(v, path)
    out: dict[str, Any] = {"url": req_str(c, "url", path)}
    if with_id:
        cid = opt_str(c, "id", path)
        if cid is not None:
            out["id"] = cid
    token = opt_str(c, "token", path)
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


# --- parts and messages ---------------------------------------------------------------


def _decode_part(
    v: Any, path: str, *, tag: str = "kind", byte_keys: tuple[str, ...] = ("bytes",)
) -> dict[str, Any]:
    """A tagged part (0.3 ``kind``, 0.1 ``type``) -> canonical Part dict.

    ``byte_keys`` are the names a file's base64 content may have (0.1 examples use ``data``).
    """
    p = obj(v, path)
    kind = p.get(tag)
    out: dict[str, Any]
    if kind == "text":
        out = {"text": req_str(p, "text", path)}
    elif kind == "file":
        fpath = f"{path}.file"
        f = req_obj(p, "file", path)
        bkey = next((k for k in byte_keys if f.get(k) is not None), byte_keys[0])
        b = f.get(bkey)
        uri = f.get("uri")
        if b is not None and uri is not None:
            fail(fpath, f"must have exactly one of 'bytes' or 'uri', got {bkey!r} and 'uri'")
        if b is not None:
            if not isinstance(b, str):
                fail(f"{fpath}.{bkey}", f"expected a base64 string, got {json_type(b)}")
            out = {"raw": b64decode(b, f"{fpath}.{bkey}")}
        elif uri is not None:
            if not isinstance(uri, str):
                fail(f"{fpath}.uri", f"expected a string, got {json_type(uri)}")
            out = {"url": uri}
        else:
            fail(fpath, "must have one of 'bytes' or 'uri'")
        mime = opt_str(f, "mimeType", fpath)
        if mime is not None:
            out["mediaType"] = mime
        name = opt_str(f, "name", fpath)
        if name is not None:
            out["filename"] = name
    elif kind == "data":
        if "data" not in p:
            fail(f"{path}.data", "required field is missing")
        out = {"data": p["data"]}
    elif kind is None:
        fail(f"{path}.{tag}", "required field is missing")
    else:
        fail(path, f"unknown part {tag} {kind!r} (expected 'text', 'file' or 'data')")
    md = p.get("metadata")
    if md is not None:
        out["metadata"] = md
    return out


def _decode_parts(
    d: dict[str, Any], path: str, *, tag: str = "kind", byte_keys: tuple[str, ...] = ("bytes",)
) -> list[dict[str, Any]]:
    """The required ``parts`` of ``d``, each decoded by :func:`_decode_part`."""
    parts = req_list(d, "parts", path)
    ppath = f"{path}.parts"
    return [
        _decode_part(x, f"{ppath}[{i}]", tag=tag, byte_keys=byte_keys) for i, x in enumerate(parts)
    ]


_MESSAGE_KEYS = ("messageId", "contextId", "taskId", "referenceTaskIds", "extensions", "metadata")


def _message_dict(v: Any, path: str) -> dict[str, Any]:
    """0.3 Message -> canonical Message dict (not yet validated by msgspec)."""
    m = obj(v, path)
    kind = m.get("kind")
    if kind is not None and kind != "message":
        fail(f"{path}.kind", f"expected 'message', got {kind!r}")
    role = req(m, "role", path)
    r = V03_TO_ROLE.get(role) if isinstance(role, str) else None
    if r is None:
        fail(f"{path}.role", f"unknown role {role!r} (expected 'user' or 'agent')")
    out: dict[str, Any] = {"role": r.value, "parts": _decode_parts(m, path)}
    copy_keys(m, out, _MESSAGE_KEYS)
    return out


def decode_message(d: Any, path: str = "message") -> Message:
    """Decode a 0.3 ``Message`` object into a canonical :class:`Message`.

    ``kind`` is optional on input; ``path`` prefixes error messages.
    """
    return convert(_message_dict(d, path), Message, path)


def encode_part(p: Part) -> dict[str, Any]:
    """Encode a canonical :class:`Part` as a 0.3 part (``kind`` text/file/data)."""
    return _encode_part(p, "kind")


def _encode_part(p: Part, tag: str) -> dict[str, Any]:
    """A canonical part as a tagged part (0.3 ``kind``, 0.1 ``type``)."""
    out: dict[str, Any]
    if p.text is not None:
        out = {tag: "text", "text": p.text}
    elif p.raw is not None or p.url is not None:
        f: dict[str, Any] = {"bytes": b64encode(p.raw)} if p.raw is not None else {"uri": p.url}
        if p.media_type is not None:
            f["mimeType"] = p.media_type
        if p.filename is not None:
            f["name"] = p.filename
        out = {tag: "file", "file": f}
    elif p.data is not msgspec.UNSET:
        out = {tag: "data", "data": p.data}
    else:
        out = {tag: "text", "text": ""}
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
        fail(path, "required field is missing")
    s = V03_TO_STATE.get(v) if isinstance(v, str) else None
    if s is None:
        fail(path, f"unknown task state {v!r}")
    return s.value


def _status_dict(v: Any, path: str) -> dict[str, Any]:
    s = obj(v, path)
    out: dict[str, Any] = {"state": _state(s.get("state"), f"{path}.state")}
    if s.get("message") is not None:
        out["message"] = _message_dict(s["message"], f"{path}.message")
    copy_keys(s, out, ("timestamp",))
    return out


def _artifact_dict(v: Any, path: str) -> dict[str, Any]:
    a = obj(v, path)
    out: dict[str, Any] = {"parts": _decode_parts(a, path)}
    copy_keys(a, out, ("artifactId", "name", "description", "metadata", "extensions"))
    return out


def _task_dict(v: Any, path: str) -> dict[str, Any]:
    t = obj(v, path)
    kind = t.get("kind")
    if kind is not None and kind != "task":
        fail(f"{path}.kind", f"expected 'task', got {kind!r}")
    out: dict[str, Any] = {"status": _status_dict(req_obj(t, "status", path), f"{path}.status")}
    copy_keys(t, out, ("id", "contextId", "metadata"))
    arts = opt_list(t, "artifacts", path)
    if arts is not None:
        out["artifacts"] = [_artifact_dict(a, f"{path}.artifacts[{i}]") for i, a in enumerate(arts)]
    hist = opt_list(t, "history", path)
    if hist is not None:
        out["history"] = [_message_dict(m, f"{path}.history[{i}]") for i, m in enumerate(hist)]
    return out


def decode_artifact(d: Any, path: str = "artifact") -> Artifact:
    """Decode a 0.3 ``Artifact`` into a canonical :class:`Artifact`."""
    return convert(_artifact_dict(d, path), Artifact, path)


def decode_task(d: Any, path: str = "task") -> Task:
    """Decode a 0.3 ``Task`` (e.g. a peer's result) into a canonical :class:`Task`."""
    return convert(_task_dict(d, path), Task, path)


def encode_status(s: TaskStatus) -> dict[str, Any]:
    """Encode a canonical :class:`TaskStatus` as a 0.3 ``TaskStatus``."""
    return _encode_status(s, STATE_TO_V03[s.state], encode_message)


def _encode_status(
    s: TaskStatus, state: str, message: Callable[[Message], dict[str, Any]]
) -> dict[str, Any]:
    """A status as ``{state, message?, timestamp?}``, its message encoded by ``message``."""
    out: dict[str, Any] = {"state": state}
    if s.message is not None:
        out["message"] = message(s.message)
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
    r = obj(d, path)
    kind = r.get("kind")
    if kind == "task":
        return decode_task(r, path)
    if kind == "message":
        return decode_message(r, path)
    fail(f"{path}.kind", f"expected 'task' or 'message', got {kind!r}")


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
    r = obj(d, path)
    kind = r.get("kind")
    if kind == "task":
        return StreamResponse(task=decode_task(r, path))
    if kind == "message":
        return StreamResponse(message=decode_message(r, path))
    if kind == "status-update":
        su: dict[str, Any] = {"status": _status_dict(req_obj(r, "status", path), f"{path}.status")}
        copy_keys(r, su, ("taskId", "contextId", "metadata"))
        return StreamResponse(status_update=convert(su, TaskStatusUpdateEvent, path))
    if kind == "artifact-update":
        au: dict[str, Any] = {
            "artifact": _artifact_dict(req_obj(r, "artifact", path), f"{path}.artifact")
        }
        copy_keys(r, au, ("taskId", "contextId", "append", "lastChunk", "metadata"))
        return StreamResponse(artifact_update=convert(au, TaskArtifactUpdateEvent, path))
    if kind is None:
        fail(f"{path}.kind", "required field is missing")
    fail(f"{path}.kind", f"unknown event kind {kind!r}")


# --- requests -------------------------------------------------------------------------


def decode_send_params(params: Any) -> SendMessageRequest:
    """Decode 0.3 ``MessageSendParams`` (``message/send``, ``message/stream``).

    ``configuration.blocking`` defaults to true; ``blocking: false`` becomes
    ``returnImmediately: true``.  ``configuration.pushNotificationConfig`` becomes
    ``taskPushNotificationConfig`` with the first of its authentication schemes.
    """
    p = obj(params, "params")
    out: dict[str, Any] = {"message": _message_dict(req(p, "message", "params"), "params.message")}
    copy_keys(p, out, ("metadata",))
    cfg_v = p.get("configuration")
    if cfg_v is not None:
        cpath = "params.configuration"
        c = obj(cfg_v, cpath)
        cfg: dict[str, Any] = {}
        modes = opt_str_list(c, "acceptedOutputModes", cpath)
        if modes is not None:
            cfg["acceptedOutputModes"] = modes
        hl = opt_non_negative_int(c, "historyLength", cpath)
        if hl is not None:
            cfg["historyLength"] = hl
        if opt_bool(c, "blocking", cpath) is False:
            cfg["returnImmediately"] = True
        push = c.get("pushNotificationConfig")
        if push is not None:
            cfg["taskPushNotificationConfig"] = _decode_push_fields(
                push, f"{cpath}.pushNotificationConfig", with_id=True
            )
        out["configuration"] = cfg
    return convert(out, SendMessageRequest, "params")


def decode_task_query(params: Any) -> tuple[str, int | None]:
    """Decode ``tasks/get`` params ``{id, historyLength?}`` into ``(task_id, history_length)``.

    The 0.1 codec reads the same shape.
    """
    p = obj(params, "params")
    return req_str(p, "id", "params", non_empty=True), opt_non_negative_int(
        p, "historyLength", "params"
    )


def decode_task_id(params: Any) -> str:
    """Decode ``{id}`` params (``tasks/cancel``, ``tasks/resubscribe``) into the task id.

    The 0.1 codec reads the same shape.
    """
    return req_str(obj(params, "params"), "id", "params", non_empty=True)


# --- push notification configs --------------------------------------------------------


def decode_push_config_set(params: Any) -> TaskPushNotificationConfig:
    """Decode ``tasks/pushNotificationConfig/set`` params ``{taskId, pushNotificationConfig}``.

    The config id defaults to the task id when absent, as the 0.3 SDK does.
    """
    p = obj(params, "params")
    task_id = req_str(p, "taskId", "params", non_empty=True)
    cpath = "params.pushNotificationConfig"
    c = _decode_push_fields(req(p, "pushNotificationConfig", "params"), cpath, with_id=True)
    c["taskId"] = task_id
    c.setdefault("id", task_id)
    return convert(c, TaskPushNotificationConfig, cpath)


def decode_push_config_ref(
    params: Any, *, require_config_id: bool = False
) -> tuple[str, str | None]:
    """Decode ``{id, pushNotificationConfigId?}`` (push config get/list/delete).

    Returns ``(task_id, config_id)``.  With ``require_config_id`` (delete) a missing
    ``pushNotificationConfigId`` is an error.
    """
    p = obj(params, "params")
    task_id = req_str(p, "id", "params", non_empty=True)
    if require_config_id:
        return task_id, req_str(p, "pushNotificationConfigId", "params")
    return task_id, opt_str(p, "pushNotificationConfigId", "params")


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
