"""Codec between the legacy A2A 0.1 JSON-RPC shapes (``tasks/send`` & co.) and the 1.0 structs.

0.1 differs from later versions in ways that cannot all be carried through:

* Messages have no id.  Decoded messages get ``LEGACY_ID_PREFIX + uuid4().hex``;
  this also marks tasks created through 0.1 (see :func:`is_legacy_task`) so that
  methods shared with 0.3 (``tasks/get`` ...) can answer in 0.1 shape.
* The client chooses the task id (``params.id``) and groups tasks by ``sessionId``
  (the 1.0 ``contextId``).
* Artifacts have no id but an ``index``: encoded as the artifact's position in the
  task's list; decoded artifacts get the id ``artifact-<position>``.
* There are no ``rejected``/``auth-required`` states; they become ``failed`` and
  ``input-required``.
* ``mediaType``/``filename`` on text and data parts and ``contextId``/``taskId``/
  ``extensions``/``referenceTaskIds`` on messages have no 0.1 place and are dropped.

Nothing here does I/O.  Invalid input raises :class:`InvalidParamsError` naming the
offending field path.
"""

from __future__ import annotations

import uuid
from typing import Any

from a2a_hub.protocol import v03
from a2a_hub.protocol._fields import (
    convert,
    copy_keys,
    fail,
    obj,
    opt_list,
    opt_non_negative_int,
    opt_str,
    opt_str_list,
    req,
    req_obj,
    req_str,
)
from a2a_hub.protocol.errors import InvalidAgentResponseError
from a2a_hub.protocol.types import (
    AgentCard,
    Artifact,
    Message,
    Part,
    Role,
    SecurityScheme,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
)
from a2a_hub.protocol.v03 import (
    _decode_push_fields,
    _encode_auth,
    _encode_part,
    _encode_status,
)

__all__ = [
    "LEGACY_ID_PREFIX",
    "ROLE_TO_V01",
    "STATE_TO_V01",
    "V01_TO_ROLE",
    "V01_TO_STATE",
    "ArtifactIndexer",
    "decode_message",
    "decode_push_set",
    "decode_send_params",
    "decode_task",
    "decode_task_id",
    "decode_task_query",
    "encode_artifact",
    "encode_card",
    "encode_message",
    "encode_part",
    "encode_push_config",
    "encode_status",
    "encode_stream_event",
    "encode_task",
    "is_legacy_task",
    "new_legacy_id",
]

LEGACY_ID_PREFIX = "a2a01-"
"""Prefix of the message ids generated for 0.1 messages (which carry none)."""

STATE_TO_V01: dict[TaskState, str] = {
    TaskState.UNSPECIFIED: "unknown",
    TaskState.SUBMITTED: "submitted",
    TaskState.WORKING: "working",
    TaskState.COMPLETED: "completed",
    TaskState.FAILED: "failed",
    TaskState.CANCELED: "canceled",
    TaskState.INPUT_REQUIRED: "input-required",
    TaskState.REJECTED: "failed",
    TaskState.AUTH_REQUIRED: "input-required",
}
"""Canonical task state -> 0.1 state (rejected -> failed, auth-required -> input-required)."""

V01_TO_STATE: dict[str, TaskState] = {
    "unknown": TaskState.UNSPECIFIED,
    "submitted": TaskState.SUBMITTED,
    "working": TaskState.WORKING,
    "completed": TaskState.COMPLETED,
    "failed": TaskState.FAILED,
    "canceled": TaskState.CANCELED,
    "input-required": TaskState.INPUT_REQUIRED,
}
"""0.1 state -> canonical task state."""

ROLE_TO_V01: dict[Role, str] = {Role.USER: "user", Role.AGENT: "agent", Role.UNSPECIFIED: "agent"}
"""Canonical role -> 0.1 role (unspecified becomes "agent")."""

V01_TO_ROLE: dict[str, Role] = {"user": Role.USER, "agent": Role.AGENT}
"""0.1 role -> canonical role."""


def new_legacy_id() -> str:
    """A fresh message id for a 0.1 message: ``LEGACY_ID_PREFIX + uuid4().hex``."""
    return LEGACY_ID_PREFIX + uuid.uuid4().hex


def is_legacy_task(task: Task) -> bool:
    """True if ``task`` was created through 0.1 (its first history message has a legacy id)."""
    history = task.history
    if not history:
        return False
    return history[0].message_id.startswith(LEGACY_ID_PREFIX)


# --- parts and messages ---------------------------------------------------------------


def _decode_parts(d: dict[str, Any], path: str) -> list[dict[str, Any]]:
    # the 0.1 spec's own examples put a file's base64 content under "data": accept it too
    return v03._decode_parts(d, path, tag="type", byte_keys=("bytes", "data"))


def _message_dict(
    v: Any, path: str, *, context_id: str | None = None, task_id: str | None = None
) -> dict[str, Any]:
    m = obj(v, path)
    role = req(m, "role", path)
    r = V01_TO_ROLE.get(role) if isinstance(role, str) else None
    if r is None:
        fail(f"{path}.role", f"unknown role {role!r} (expected 'user' or 'agent')")
    out: dict[str, Any] = {
        "messageId": new_legacy_id(),
        "role": r.value,
        "parts": _decode_parts(m, path),
    }
    if context_id is not None:
        out["contextId"] = context_id
    if task_id is not None:
        out["taskId"] = task_id
    copy_keys(m, out, ("metadata",))
    return out


def decode_message(
    d: Any,
    path: str = "message",
    *,
    context_id: str | None = None,
    task_id: str | None = None,
) -> Message:
    """Decode a 0.1 ``Message`` into a canonical :class:`Message` with a fresh legacy id.

    ``context_id``/``task_id`` (which 0.1 carries on the task, not the message) are set
    on the result if given; ``path`` prefixes error messages.
    """
    return convert(_message_dict(d, path, context_id=context_id, task_id=task_id), Message, path)


def encode_part(p: Part) -> dict[str, Any]:
    """Encode a canonical :class:`Part` as a 0.1 part (``type`` text/file/data)."""
    return _encode_part(p, "type")


def encode_message(m: Message) -> dict[str, Any]:
    """Encode a canonical :class:`Message` as a 0.1 ``Message`` ``{role, parts, metadata?}``."""
    out: dict[str, Any] = {"role": ROLE_TO_V01[m.role], "parts": [encode_part(p) for p in m.parts]}
    if m.metadata is not None:
        out["metadata"] = m.metadata
    return out


# --- tasks ----------------------------------------------------------------------------


def encode_status(s: TaskStatus) -> dict[str, Any]:
    """Encode a canonical :class:`TaskStatus` as a 0.1 ``TaskStatus``."""
    return _encode_status(s, STATE_TO_V01[s.state], encode_message)


def encode_artifact(
    a: Artifact,
    index: int = 0,
    *,
    append: bool | None = None,
    last_chunk: bool | None = None,
) -> dict[str, Any]:
    """Encode a canonical :class:`Artifact` as a 0.1 ``Artifact`` with the given ``index``.

    ``append``/``lastChunk`` are written only when given (streaming events).
    """
    out: dict[str, Any] = {}
    if a.name is not None:
        out["name"] = a.name
    if a.description is not None:
        out["description"] = a.description
    out["parts"] = [encode_part(p) for p in a.parts]
    if a.metadata is not None:
        out["metadata"] = a.metadata
    out["index"] = index
    if append is not None:
        out["append"] = append
    if last_chunk is not None:
        out["lastChunk"] = last_chunk
    return out


def encode_task(t: Task) -> dict[str, Any]:
    """Encode a canonical :class:`Task` as a 0.1 ``Task``.

    ``sessionId`` is the context id (left out when empty); artifacts are left out
    when there are none and get their position in the list as ``index``.
    """
    out: dict[str, Any] = {"id": t.id}
    if t.context_id:
        out["sessionId"] = t.context_id
    out["status"] = encode_status(t.status)
    if t.artifacts:
        out["artifacts"] = [encode_artifact(a, i) for i, a in enumerate(t.artifacts)]
    if t.history is not None:
        out["history"] = [encode_message(m) for m in t.history]
    if t.metadata is not None:
        out["metadata"] = t.metadata
    return out


def decode_task(d: Any, path: str = "task") -> Task:
    """Decode a 0.1 ``Task`` into a canonical :class:`Task`.

    Messages get fresh legacy ids plus the task's id and session id; artifacts get
    the id ``artifact-<position>``.
    """
    t = obj(d, path)
    task_id = req_str(t, "id", path)
    session = opt_str(t, "sessionId", path)
    spath = f"{path}.status"
    s = req_obj(t, "status", path)
    state_v = s.get("state")
    state = V01_TO_STATE.get(state_v) if isinstance(state_v, str) else None
    if state is None:
        if state_v is None:
            fail(f"{spath}.state", "required field is missing")
        fail(f"{spath}.state", f"unknown task state {state_v!r}")
    status: dict[str, Any] = {"state": state.value}
    if s.get("message") is not None:
        status["message"] = _message_dict(
            s["message"], f"{spath}.message", context_id=session, task_id=task_id
        )
    copy_keys(s, status, ("timestamp",))
    out: dict[str, Any] = {"id": task_id, "status": status}
    if session is not None:
        out["contextId"] = session
    arts = opt_list(t, "artifacts", path)
    if arts is not None:
        decoded = []
        for i, a in enumerate(arts):
            apath = f"{path}.artifacts[{i}]"
            ad = obj(a, apath)
            art: dict[str, Any] = {"artifactId": f"artifact-{i}", "parts": _decode_parts(ad, apath)}
            copy_keys(ad, art, ("name", "description", "metadata"))
            decoded.append(art)
        out["artifacts"] = decoded
    hist = opt_list(t, "history", path)
    if hist is not None:
        out["history"] = [
            _message_dict(m, f"{path}.history[{i}]", context_id=session, task_id=task_id)
            for i, m in enumerate(hist)
        ]
    copy_keys(t, out, ("metadata",))
    return convert(out, Task, path)


# --- requests -------------------------------------------------------------------------


def decode_send_params(params: Any) -> tuple[SendMessageRequest, str]:
    """Decode 0.1 ``TaskSendParams`` (``tasks/send``, ``tasks/sendSubscribe``).

    Returns the canonical request and the client-chosen task id.  ``sessionId``
    becomes ``message.contextId``; ``message.taskId`` is left unset.  A
    ``pushNotification`` becomes the configuration's push config with the task id
    as its id and task id.
    """
    p = obj(params, "params")
    task_id = req_str(p, "id", "params", non_empty=True)
    session = opt_str(p, "sessionId", "params") or None
    message = req(p, "message", "params")
    out: dict[str, Any] = {"message": _message_dict(message, "params.message", context_id=session)}
    copy_keys(p, out, ("metadata",))
    cfg: dict[str, Any] = {}
    modes = opt_str_list(p, "acceptedOutputModes", "params")
    if modes is not None:
        cfg["acceptedOutputModes"] = modes
    hl = opt_non_negative_int(p, "historyLength", "params")
    if hl is not None:
        cfg["historyLength"] = hl
    push = p.get("pushNotification")
    if push is not None:
        pc = _decode_push_fields(push, "params.pushNotification", with_id=False)
        pc["id"] = task_id
        pc["taskId"] = task_id
        cfg["taskPushNotificationConfig"] = pc
    if cfg:
        out["configuration"] = cfg
    return convert(out, SendMessageRequest, "params"), task_id


def decode_task_query(params: Any) -> tuple[str, int | None]:
    """Decode ``tasks/get``/``tasks/resubscribe`` params ``{id, historyLength?}``."""
    return v03.decode_task_query(params)


def decode_task_id(params: Any) -> str:
    """Decode ``{id}`` params (``tasks/cancel``, ``tasks/pushNotification/get``)."""
    return v03.decode_task_id(params)


# --- streaming ------------------------------------------------------------------------


class ArtifactIndexer:
    """Gives the artifacts of one 0.1 stream their ``index``.

    0.1 artifact events carry an ``index`` instead of an id.  An indexer numbers
    artifact ids in order of first appearance, after the artifacts of a task
    snapshot seen on the stream (so indexes agree with :func:`encode_task`, which
    uses the position in the task's list).  Keep one per stream.
    """

    __slots__ = ("_ids", "_next")

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._next = 0

    def seed(self, artifacts: list[Artifact] | None) -> None:
        """Register a task's artifacts at their positions in its list."""
        for i, a in enumerate(artifacts or ()):
            if a.artifact_id not in self._ids:
                self._ids[a.artifact_id] = i
                self._next = max(self._next, i + 1)

    def index(self, artifact_id: str) -> int:
        """The index of ``artifact_id``, assigning the next free one if it is new."""
        i = self._ids.get(artifact_id)
        if i is None:
            i = self._ids[artifact_id] = self._next
            self._next += 1
        return i


def encode_stream_event(
    ev: StreamResponse, indexer: ArtifactIndexer | None = None
) -> dict[str, Any] | None:
    """Encode a canonical :class:`StreamResponse` as a 0.1 streaming result, or None to skip.

    * status update -> ``{id, status, final, metadata?}``; ``final`` is true when the
      state is terminal or interrupted.
    * artifact update -> ``{id, artifact{..., index, append, lastChunk}, metadata?}``.
      The index comes from ``indexer`` if given, else it is 0 (a single event does
      not say where its artifact sits in the task).
    * task snapshot -> a status event of its status, final only if terminal (it also
      seeds ``indexer``).
    * message -> None: 0.1 streams carry no messages.
    """
    if ev.status_update is not None:
        su = ev.status_update
        state = su.status.state
        out: dict[str, Any] = {
            "id": su.task_id,
            "status": encode_status(su.status),
            "final": state.terminal or state.interrupted,
        }
        if su.metadata is not None:
            out["metadata"] = su.metadata
        return out
    if ev.artifact_update is not None:
        au = ev.artifact_update
        index = indexer.index(au.artifact.artifact_id) if indexer is not None else 0
        out = {
            "id": au.task_id,
            "artifact": encode_artifact(
                au.artifact, index, append=au.append, last_chunk=au.last_chunk
            ),
        }
        if au.metadata is not None:
            out["metadata"] = au.metadata
        return out
    if ev.task is not None:
        t = ev.task
        if indexer is not None:
            indexer.seed(t.artifacts)
        return {"id": t.id, "status": encode_status(t.status), "final": t.status.state.terminal}
    if ev.message is not None:
        return None
    raise InvalidAgentResponseError(
        "stream event has none of task, message, statusUpdate, artifactUpdate"
    )


# --- push notifications ---------------------------------------------------------------


def decode_push_set(params: Any) -> TaskPushNotificationConfig:
    """Decode ``tasks/pushNotification/set`` params ``{id, pushNotificationConfig}``.

    0.1 configs have no id of their own: the config id is the task id.
    """
    p = obj(params, "params")
    task_id = req_str(p, "id", "params", non_empty=True)
    cpath = "params.pushNotificationConfig"
    c = _decode_push_fields(req(p, "pushNotificationConfig", "params"), cpath, with_id=False)
    c["id"] = task_id
    c["taskId"] = task_id
    return convert(c, TaskPushNotificationConfig, cpath)


def encode_push_config(task_id: str, c: TaskPushNotificationConfig) -> dict[str, Any]:
    """Encode a canonical config as a 0.1 ``{id, pushNotificationConfig}`` for task ``task_id``."""
    inner: dict[str, Any] = {"url": c.url}
    if c.token is not None:
        inner["token"] = c.token
    if c.authentication is not None:
        inner["authentication"] = _encode_auth(c.authentication)
    return {"id": task_id, "pushNotificationConfig": inner}


# --- agent card -----------------------------------------------------------------------


def _scheme_name(s: SecurityScheme) -> str | None:
    if s.http_auth_security_scheme is not None:
        return s.http_auth_security_scheme.scheme
    if s.api_key_security_scheme is not None:
        return "apiKey"
    if s.oauth2_security_scheme is not None:
        return "OAuth2"
    if s.open_id_connect_security_scheme is not None:
        return "openIdConnect"
    if s.mtls_security_scheme is not None:
        return "mutualTLS"
    return None


def encode_card(card: AgentCard, url: str) -> dict[str, Any]:
    """Encode a canonical :class:`AgentCard` as a 0.1 AgentCard served at ``url``.

    ``authentication.schemes`` is derived from ``securitySchemes``: an HTTP scheme
    gives its scheme name (e.g. ``Bearer``), the others ``apiKey``, ``OAuth2``,
    ``openIdConnect`` or ``mutualTLS``.
    """
    out: dict[str, Any] = {"name": card.name, "description": card.description, "url": url}
    if card.provider is not None:
        out["provider"] = {"organization": card.provider.organization, "url": card.provider.url}
    out["version"] = card.version
    if card.documentation_url is not None:
        out["documentationUrl"] = card.documentation_url
    caps = card.capabilities
    out["capabilities"] = {
        "streaming": bool(caps.streaming),
        "pushNotifications": bool(caps.push_notifications),
        "stateTransitionHistory": False,
    }
    if card.security_schemes:
        names: list[str] = []
        for s in card.security_schemes.values():
            n = _scheme_name(s)
            if n is not None and n not in names:
                names.append(n)
        if names:
            out["authentication"] = {"schemes": names}
    out["defaultInputModes"] = card.default_input_modes
    out["defaultOutputModes"] = card.default_output_modes
    skills = []
    for sk in card.skills:
        d: dict[str, Any] = {
            "id": sk.id,
            "name": sk.name,
            "description": sk.description,
            "tags": sk.tags,
        }
        if sk.examples is not None:
            d["examples"] = sk.examples
        if sk.input_modes is not None:
            d["inputModes"] = sk.input_modes
        if sk.output_modes is not None:
            d["outputModes"] = sk.output_modes
        skills.append(d)
    out["skills"] = skills
    return out
