"""Checks of what a client asks the engine: of the request itself, made before anything
is looked up, and of the request against the task it names.

Each bad value becomes an :class:`InvalidParamsError` that names the field and
says what is expected.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from a2a_hub.protocol.errors import InvalidParamsError, UnsupportedOperationError
from a2a_hub.protocol.types import ListTasksRequest, Message, Role, Task, TaskState
from a2a_hub.stores.base import TaskQuery

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "check_continuation",
    "check_follow",
    "check_history_length",
    "check_idempotency_key",
    "check_message",
    "task_query",
]

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50

#: The longest ``Idempotency-Key`` taken (a UUID is 36 characters).
MAX_IDEMPOTENCY_KEY = 255


_USER = Role.USER  # read once: an enum member costs a metaclass lookup per read


def check_message(message: Message) -> None:
    """A message sent to an agent: an id, the user role, and well-formed parts."""
    if not message.message_id:
        raise InvalidParamsError("message.messageId is required")
    if message.role is not _USER:
        raise InvalidParamsError("message.role must be ROLE_USER for a message sent to an agent")
    if not message.parts:
        raise InvalidParamsError("message.parts must contain at least one part")
    for i, part in enumerate(message.parts):
        present = (
            (part.text is not None)
            + (part.raw is not None)
            + (part.url is not None)
            + (part.data is not msgspec.UNSET)
        )
        if present != 1:
            raise InvalidParamsError(
                f"message.parts[{i}] must have exactly one of text, raw, url or data"
            )


def check_idempotency_key(key: str) -> None:
    """An ``Idempotency-Key``: 1 to 255 printable ASCII characters (no spaces at its ends)."""
    if not key:
        raise InvalidParamsError("The Idempotency-Key header must not be empty")
    if len(key) > MAX_IDEMPOTENCY_KEY or not key.isascii() or not key.isprintable():
        raise InvalidParamsError(
            f"The Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII "
            "characters (a UUID is a good key)"
        )
    if key != key.strip():
        raise InvalidParamsError("The Idempotency-Key header must not start or end with spaces")


def check_continuation(task: Task, message: Message) -> None:
    """A message may continue ``task``: it waits for input, in the message's context."""
    state = task.status.state
    if state.terminal:
        raise UnsupportedOperationError(
            f"Task {task.id} is {state.label} and accepts no more messages; "
            "send without taskId (keeping contextId) to start a new task",
            data={"taskId": task.id, "state": state.value},
        )
    if not state.interrupted:
        raise UnsupportedOperationError(
            f"Task {task.id} is still {state.label}; send the next message once it "
            "asks for input (input-required)",
            data={"taskId": task.id, "state": state.value},
        )
    if message.context_id is not None and message.context_id != task.context_id:
        raise InvalidParamsError(
            f"message.contextId {message.context_id!r} does not match the context "
            f"{task.context_id!r} of task {task.id}",
        )


def check_follow(task_id: str, state: TaskState, last: int, after: int | None) -> None:
    """A task in ``state`` whose last event is ``last`` may be followed from ``after``
    (``None``: from a snapshot, which a terminal task has nothing after)."""
    if after is None and state.terminal:
        raise UnsupportedOperationError(
            f"Task {task_id} is already {state.label}; there is nothing to follow "
            "(GetTask returns its final state)",
            data={"taskId": task_id, "state": state.value},
        )
    if after is not None and after > last:
        raise InvalidParamsError(
            f"Last-Event-ID {after} is beyond the last event ({last}) of task {task_id}"
        )


def check_history_length(value: int | None, name: str = "historyLength") -> None:
    """``None`` (everything) or a count of messages, 0 or more."""
    if value is not None and value < 0:
        raise InvalidParamsError(f"{name} must be 0 or more")


def task_query(request: ListTasksRequest, owner: str | None) -> TaskQuery:
    """The store query of a ``ListTasks`` request, limited to ``owner``'s tasks if set."""
    page_size = DEFAULT_PAGE_SIZE if request.page_size is None else request.page_size
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise InvalidParamsError(f"pageSize must be between 1 and {MAX_PAGE_SIZE}")
    check_history_length(request.history_length)
    status = None if request.status is TaskState.UNSPECIFIED else request.status
    after = _parse_time(request.status_timestamp_after) if request.status_timestamp_after else None
    return TaskQuery(
        context_id=request.context_id or None,
        state=status,
        updated_after=after,
        owner=owner,
        page_size=page_size,
        page_token=request.page_token or None,
    )


def _parse_time(value: str) -> float:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise InvalidParamsError(
            f"statusTimestampAfter {value!r} is not an ISO 8601 timestamp"
        ) from exc
