"""The WebSocket channel's wire shapes (seed 003) and the mapping from task events to them.

Server events are :class:`msgspec.Struct` classes tagged by their ``event``
field, in the shapes of the founding note, each with two additions: ``task_id``
and ``seq`` (the task event they come from), so that a client can resume with
``sync_state`` and skip what it already has.  Client actions are decoded into
tagged structs by their ``action`` field; a frame that does not decode is
answered with an ``error`` event by :mod:`a2a_hub.server.ws`.

:class:`TaskView` turns the events of one task, in seq order, into server events:

=============================================  =========================================
task event                                     WebSocket events
=============================================  =========================================
artifact chunk                                 ``content_stream`` (``is_final`` = last chunk)
status ``working`` / ``submitted``             ``message_status_update`` processing,
                                               ``task_status_update`` processing / queued
status message data part ``kind: tool_call``   ``tool_call``
status message data part ``kind: tool_response``  ``tool_response``
status ``completed``                           ``message_completed``, then the status events
status ``failed``/``rejected``/``canceled``    status events (message status ``failed``)
status ``input-required``/``auth-required``    ``task_status_update`` input-required
task snapshot                                  ``task_status_update`` (the current state)
=============================================  =========================================
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from a2a_hub.engine.executor import PROGRESS_KEY, TOOL_CALL_KIND, TOOL_RESPONSE_KIND, text_of
from a2a_hub.protocol.errors import A2AError, RateLimitedError
from a2a_hub.protocol.types import Message, Part, Role, StreamResponse, Task, TaskState
from a2a_hub.stores.base import TaskEvent

__all__ = [
    "TOOL_CALL_KIND",
    "TOOL_RESPONSE_KIND",
    "Authenticate",
    "Authenticated",
    "CancelTask",
    "ClientAction",
    "ContentStream",
    "ErrorEvent",
    "MessageCompleted",
    "MessageStatusUpdate",
    "Ping",
    "Pong",
    "SendMessage",
    "ServerEvent",
    "Source",
    "SyncCompleted",
    "SyncState",
    "TaskStatusUpdate",
    "TaskView",
    "ToolCall",
    "ToolResponse",
    "ToolResponseAction",
    "ToolResult",
    "error_event",
    "now",
]


_stamp: list[Any] = [0, ""]  # the last millisecond formatted, and its text


def now() -> str:
    """The current time, ISO-8601 in UTC (``2026-01-02T03:04:05.678Z``); formatted once
    per millisecond however many events (an event fanned out to many sockets) share it."""
    ms = time.time_ns() // 1_000_000
    if _stamp[0] != ms:
        moment = datetime.fromtimestamp(ms / 1000, UTC)
        _stamp[1] = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        _stamp[0] = ms
    return str(_stamp[1])


# --- server -> client ----------------------------------------------------------------


class _Event(msgspec.Struct, tag_field="event", kw_only=True):
    task_id: str | None = None
    seq: int | None = None
    timestamp: str = msgspec.field(default_factory=now)


class ContentStream(_Event, tag="content_stream", kw_only=True):
    """A chunk of the reply as it is generated."""

    message_id: str | None
    chunk: str
    is_final: bool = False


class Source(msgspec.Struct, omit_defaults=True):
    """A document the reply is based on (from artifact metadata ``sources``)."""

    title: str | None = None
    url: str | None = None
    snippet: str | None = None


class Response(msgspec.Struct):
    """The finished reply of ``message_completed``."""

    content: str
    type: str = "text"
    sources: list[Source] = msgspec.field(default_factory=list)
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class MessageCompleted(_Event, tag="message_completed", kw_only=True):
    """The reply to a message is complete."""

    message_id: str | None
    response: Response


class MessageStatusUpdate(_Event, tag="message_status_update", kw_only=True):
    """The processing state of a message."""

    message_id: str | None
    status: Literal["processing", "completed", "failed"]


class ToolResult(msgspec.Struct, omit_defaults=True):
    """A tool's outcome (both directions)."""

    status: Literal["success", "error"]
    data: Any = None
    error_message: str | None = None


class ToolCall(_Event, tag="tool_call", kw_only=True):
    """A tool is called: by the server (shown) or for the client to run (answer it)."""

    tool_call_id: str
    message_id: str | None
    tool_id: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)


class ToolResponse(_Event, tag="tool_response", kw_only=True):
    """The result of a tool call."""

    tool_call_id: str
    message_id: str | None
    result: ToolResult


class ErrorEvent(_Event, tag="error", kw_only=True):
    """Something went wrong; ``code`` is stable, ``details.error`` names the A2A error."""

    message_id: str | None = None
    code: str
    message: str
    details: dict[str, Any] = msgspec.field(default_factory=dict)


class TaskStatusUpdate(_Event, tag="task_status_update", kw_only=True):
    """The state of a task (``global_task_id`` is the A2A task id)."""

    global_task_id: str
    status: Literal["queued", "processing", "completed", "failed", "canceled", "input-required"]
    progress: float | None = None
    message: str | None = None


class Pong(_Event, tag="pong", kw_only=True):
    """The answer to ``ping``, echoing the client's timestamp."""

    client_timestamp: str | None = None


class Authenticated(_Event, tag="authenticated", kw_only=True):
    """The key of the first frame was accepted: the socket acts for ``principal``."""

    principal: str | None = None


class SyncCompleted(_Event, tag="sync_completed", kw_only=True):
    """``sync_state`` has replayed everything: ``tasks`` maps each task to its last seq."""

    tasks: dict[str, int] = msgspec.field(default_factory=dict)


ServerEvent = (
    ContentStream
    | MessageCompleted
    | MessageStatusUpdate
    | ToolCall
    | ToolResponse
    | ErrorEvent
    | TaskStatusUpdate
    | Pong
    | SyncCompleted
    | Authenticated
)


def error_event(
    err: A2AError,
    *,
    task_id: str | None = None,
    message_id: str | None = None,
    extra: dict[str, Any] | None = None,
) -> ErrorEvent:
    """The ``error`` event of a protocol error (stable ``code``, A2A name in ``details``)."""
    details: dict[str, Any] = {"error": err.reason, "a2a_code": err.code}
    if err.data:
        details["data"] = err.data
    if isinstance(err, RateLimitedError):  # the delay, in seconds and as google.rpc RetryInfo
        details["retry_after"] = err.retry_after
        details["retry_info"] = err.retry_info()
    if extra:
        details.update(extra)
    return ErrorEvent(
        task_id=task_id, message_id=message_id, code=err.ws_code, message=err.message,
        details=details,
    )  # fmt: skip


# --- client -> server ----------------------------------------------------------------


class _Action(msgspec.Struct, tag_field="action", forbid_unknown_fields=False):
    pass


class SendMessage(_Action, tag="send_message"):
    """Start a task, or continue one (``task_id``), with a message."""

    message_id: str
    text: str | None = None
    parts: list[Part] | None = None
    context_id: str | None = None
    task_id: str | None = None
    metadata: dict[str, Any] | None = None


class CancelTask(_Action, tag="cancel_task"):
    """Cancel a task."""

    global_task_id: str


class Ping(_Action, tag="ping"):
    """Keep the connection alive."""

    client_timestamp: str | None = None


class ToolResponseAction(_Action, tag="tool_response"):
    """The result of a tool the client was asked to run."""

    tool_call_id: str
    result: ToolResult


class SyncState(_Action, tag="sync_state"):
    """Bring the client back in step after a reconnect.

    ``last_seq`` maps task ids to the last seq the client has; ``last_message_id``
    is the last message it sent or saw; ``context_id`` names its conversation.
    """

    last_message_id: str | None = None
    last_seq: dict[str, int] | None = None
    context_id: str | None = None


class Authenticate(_Action, tag="authenticate"):
    """The API key of a socket opened without one (only as its first frame)."""

    api_key: str


ClientAction = SendMessage | CancelTask | Ping | ToolResponseAction | SyncState | Authenticate


# --- task events -> server events ----------------------------------------------------

_TASK_STATUS: dict[TaskState, str] = {
    TaskState.SUBMITTED: "queued",
    TaskState.WORKING: "processing",
    TaskState.COMPLETED: "completed",
    TaskState.FAILED: "failed",
    TaskState.REJECTED: "failed",
    TaskState.CANCELED: "canceled",
    TaskState.INPUT_REQUIRED: "input-required",
    TaskState.AUTH_REQUIRED: "input-required",
}


def _message_status(state: TaskState) -> str | None:
    if state in (TaskState.SUBMITTED, TaskState.WORKING):
        return "processing"
    if state is TaskState.COMPLETED:
        return "completed"
    if state in (TaskState.FAILED, TaskState.REJECTED, TaskState.CANCELED):
        return "failed"
    return None


def _last_user_message(task: Task) -> str | None:
    for message in reversed(task.history or []):
        if message.role is Role.USER:
            return message.message_id
    return None


def _sources(metadata: dict[str, Any] | None) -> list[Source]:
    found = (metadata or {}).get("sources")
    if not isinstance(found, list):
        return []
    out = []
    for item in found:
        if isinstance(item, dict):
            out.append(
                Source(
                    title=_str(item.get("title")),
                    url=_str(item.get("url")),
                    snippet=_str(item.get("snippet")),
                )
            )
    return out


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


_TOOL_KINDS = (TOOL_CALL_KIND, TOOL_RESPONSE_KIND)


def tool_parts(message: Message | None) -> list[dict[str, Any]]:
    """The data parts of a message that show tool calls or tool results (``kind``
    ``tool_call`` / ``tool_response``, :func:`a2a_hub.engine.executor.tool_call_part`)."""
    if message is None:
        return []
    return [
        part.data
        for part in message.parts
        if isinstance(part.data, dict) and part.data.get("kind") in _TOOL_KINDS
    ]


class TaskView:
    """What one connection knows of one task: the turn's message id, the reply so far,
    and the last seq sent (events at or below it are never sent again)."""

    __slots__ = ("artifacts", "last_seq", "message_id", "state", "task_id")

    def __init__(self, task_id: str, message_id: str | None = None, last_seq: int = 0) -> None:
        self.task_id = task_id
        self.message_id = message_id
        self.last_seq = last_seq
        self.state: TaskState | None = None
        #: artifact id -> (its text so far, its metadata)
        self.artifacts: dict[str, tuple[str, dict[str, Any] | None]] = {}

    @property
    def open(self) -> bool:
        """True while the task may still change (not terminal)."""
        return self.state is None or not self.state.terminal

    def fresh(self, event: TaskEvent) -> bool:
        """True if the event is new to this connection (and remember it)."""
        if event.seq and event.seq <= self.last_seq:
            return False
        if event.seq:
            self.last_seq = event.seq
        return True

    def events(self, event: TaskEvent, *, snapshot: bool = False) -> list[ServerEvent]:
        """The server events of one task event (already checked with :meth:`fresh`).

        ``snapshot`` marks a task snapshot sent as "the current state" (a subscribe
        without a position): it reports the state and does not replay the reply.
        """
        payload: StreamResponse = event.event
        seq = event.seq
        tid = self.task_id
        if payload.task is not None:
            task = payload.task
            self.message_id = _last_user_message(task) or self.message_id
            if snapshot:
                for art in task.artifacts or []:
                    self.artifacts[art.artifact_id] = (text_of(art.parts), art.metadata)
            return self._status(task.status.state, task.status.message, seq, task.metadata)
        if payload.message is not None:
            message = payload.message
            if message.role is Role.USER:  # a new turn of the task
                self.message_id = message.message_id
                self.artifacts.clear()
                return []
            text = text_of(message.parts)  # an immediate reply (no task)
            return [
                ContentStream(task_id=tid, seq=seq, message_id=self.message_id, chunk=text,
                              is_final=True),
                MessageCompleted(task_id=tid, seq=seq, message_id=self.message_id,
                                 response=Response(content=text, metadata=message.metadata or {})),
                MessageStatusUpdate(task_id=tid, seq=seq, message_id=self.message_id,
                                    status="completed"),
            ]  # fmt: skip
        if payload.artifact_update is not None:
            update = payload.artifact_update
            art = update.artifact
            chunk = text_of(art.parts)
            before, meta = self.artifacts.get(art.artifact_id, ("", None))
            text = before + chunk if update.append else chunk
            merged = {**(meta or {}), **(art.metadata or {})} or None
            self.artifacts[art.artifact_id] = (text, merged)
            return [
                ContentStream(task_id=tid, seq=seq, message_id=self.message_id, chunk=chunk,
                              is_final=update.last_chunk)
            ]  # fmt: skip
        if payload.status_update is not None:
            status = payload.status_update.status
            return self._status(status.state, status.message, seq, payload.status_update.metadata)
        return []

    def _status(
        self,
        state: TaskState,
        message: Message | None,
        seq: int,
        metadata: dict[str, Any] | None,
    ) -> list[ServerEvent]:
        tid = self.task_id
        mid = self.message_id
        out: list[ServerEvent] = []
        for data in tool_parts(message):
            out.append(_tool_event(data, tid, seq, mid))
        text = text_of(message.parts) if message is not None else ""
        meta = dict(message.metadata or {}) if message is not None else {}
        progress = meta.get(PROGRESS_KEY)
        if state is TaskState.COMPLETED and self.state is not TaskState.COMPLETED:
            content = "\n".join(t for t, _ in self.artifacts.values() if t)
            if text:
                content = f"{content}\n{text}" if content else text
            sources: list[Source] = []
            for _, art_meta in self.artifacts.values():
                sources.extend(_sources(art_meta))
            out.append(
                MessageCompleted(task_id=tid, seq=seq, message_id=mid,
                                 response=Response(content=content, sources=sources,
                                                   metadata={**(metadata or {}), **meta}))
            )  # fmt: skip
        self.state = state
        message_status = _message_status(state)
        if message_status is not None:
            out.append(
                MessageStatusUpdate(task_id=tid, seq=seq, message_id=mid, status=message_status)  # type: ignore[arg-type]
            )
        if state is TaskState.COMPLETED:
            progress = 1.0
        out.append(
            TaskStatusUpdate(task_id=tid, seq=seq, global_task_id=tid,
                             status=_TASK_STATUS.get(state, "processing"),  # type: ignore[arg-type]
                             progress=float(progress) if isinstance(progress, int | float)
                             else None,
                             message=text or None)
        )  # fmt: skip
        return out


def _tool_event(
    data: dict[str, Any], task_id: str, seq: int, message_id: str | None
) -> ServerEvent:
    call_id = str(data.get("tool_call_id") or data.get("id") or "")
    if data.get("kind") == TOOL_CALL_KIND:
        params: Any = data.get("params")
        if not isinstance(params, dict):
            arguments = data.get("arguments")
            params = arguments if isinstance(arguments, dict) else {}
        return ToolCall(
            task_id=task_id, seq=seq, tool_call_id=call_id, message_id=message_id,
            tool_id=str(data.get("tool_id") or data.get("name") or ""), params=params,
        )  # fmt: skip
    result = data.get("result")
    if isinstance(result, dict) and result.get("status") in ("success", "error"):
        tool_result = ToolResult(
            status=result["status"], data=result.get("data"),
            error_message=_str(result.get("error_message")),
        )  # fmt: skip
    else:
        tool_result = ToolResult(status="success", data=result)
    return ToolResponse(
        task_id=task_id, seq=seq, tool_call_id=call_id, message_id=message_id, result=tool_result
    )
