"""The task state machine and the fold of events into a task snapshot."""

from __future__ import annotations

import os
import time
from typing import Any

import msgspec

from a2a_hub.protocol.types import (
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
)

__all__ = [
    "InvalidTransitionError",
    "apply_event",
    "check_transition",
    "new_id",
    "timestamp",
    "trim_history",
]

_ACTIVE = {
    TaskState.WORKING,
    TaskState.INPUT_REQUIRED,
    TaskState.AUTH_REQUIRED,
    TaskState.COMPLETED,
    TaskState.FAILED,
    TaskState.CANCELED,
    TaskState.REJECTED,
}

#: Legal moves.  Terminal states have no way out; ``working`` may repeat (progress).
TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    TaskState.SUBMITTED: frozenset(_ACTIVE),
    TaskState.WORKING: frozenset(_ACTIVE),
    TaskState.INPUT_REQUIRED: frozenset(_ACTIVE),
    TaskState.AUTH_REQUIRED: frozenset(_ACTIVE),
    TaskState.COMPLETED: frozenset(),
    TaskState.FAILED: frozenset(),
    TaskState.CANCELED: frozenset(),
    TaskState.REJECTED: frozenset(),
    TaskState.UNSPECIFIED: frozenset(),
}


class InvalidTransitionError(RuntimeError):
    """An executor asked for a state change the protocol does not allow."""


def check_transition(current: TaskState, new: TaskState) -> None:
    """Raise :class:`InvalidTransitionError` unless ``current → new`` is legal."""
    if new not in TRANSITIONS[current]:
        if current.terminal:
            raise InvalidTransitionError(
                f"task is already {current.label}; a terminal task cannot become {new.label}"
            )
        raise InvalidTransitionError(f"a task cannot go from {current.label} to {new.label}")


_last: list[Any] = [None, "", -1, ""]  # whole second and its text, millisecond and its text


def timestamp() -> str:
    """Now, as the ISO 8601 UTC string the protocol uses (millisecond precision).

    The text of the last millisecond is kept: the events of one request usually share it."""
    milli = int(time.time() * 1000)
    last = _last
    if last[2] == milli:
        return last[3]  # type: ignore[no-any-return]
    second, ms = divmod(milli, 1000)
    if last[0] != second:
        last[0], last[1] = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
    text = last[3] = f"{last[1]}.{ms:03d}Z"
    last[2] = milli
    return text


#: Version-4 UUID strings made ahead, :data:`_BATCH` at a time (one ``os.urandom`` call and
#: a few C-level copies per batch instead of a system call and a format per id).
_ids: list[str] = []
_BATCH = 256
#: Where each of the 32 hex digits of an id goes in its 37 characters (36 and a newline).
_DIGITS = [i for i in range(36) if i not in (8, 13, 18, 23)]
#: The first hex digit of the fourth group, as the variant (10xx) allows it: 8, 9, a or b.
_VARIANT_DIGIT = bytes.maketrans(b"0123456789abcdef", b"89ab89ab89ab89ab")


def _make_ids() -> None:
    """Fill :data:`_ids`: 16 random bytes each, version nibble 4, variant bits 10."""
    hexed = os.urandom(16 * _BATCH).hex().encode()
    out = bytearray(b"-" * (37 * _BATCH))
    for digit, at in enumerate(_DIGITS):
        out[at::37] = hexed[digit::32]
    out[14::37] = b"4" * _BATCH  # the version (it replaces a random digit)
    out[19::37] = out[19::37].translate(_VARIANT_DIGIT)
    out[36::37] = b"\n" * _BATCH
    _ids.extend(out.decode().split())


def new_id() -> str:
    """A random (version 4) UUID string, made without the cost of :class:`uuid.UUID`."""
    try:
        return _ids.pop()
    except IndexError:
        _make_ids()
        return _ids.pop()


# a forked process (``--workers``) must not hand out the ids its parent made ahead
os.register_at_fork(after_in_child=_ids.clear)


def apply_event(task: Task | None, event: StreamResponse) -> Task:
    """Fold one event into ``task`` (mutated in place and returned).

    * ``task`` replaces the snapshot (the first event of every log);
    * ``message`` appends a client message to the history;
    * ``status_update`` sets the status and appends its message, if any, to the history;
    * ``artifact_update`` adds or replaces the artifact with that id, or extends
      its parts when ``append`` is set.
    """
    if event.task is not None:  # a copy: the event stays as it was numbered
        first = event.task
        return msgspec.structs.replace(
            first,
            history=None if first.history is None else list(first.history),
            artifacts=None if first.artifacts is None else list(first.artifacts),
        )
    if task is None:
        raise ValueError("the first event of a task log must be a task snapshot")
    if event.message is not None:
        _append_history(task, event.message)
    elif event.status_update is not None:
        status = event.status_update.status
        task.status = status
        if status.message is not None:
            _append_history(task, status.message)
    elif event.artifact_update is not None:
        _apply_artifact(task, event.artifact_update)
    return task


def _append_history(task: Task, message: object) -> None:
    if task.history is None:
        task.history = []
    task.history.append(message)  # type: ignore[arg-type]


def _apply_artifact(task: Task, update: TaskArtifactUpdateEvent) -> None:
    artifacts = task.artifacts if task.artifacts is not None else []
    task.artifacts = artifacts
    new = update.artifact
    for i, old in enumerate(artifacts):
        if old.artifact_id == new.artifact_id:
            if update.append:
                artifacts[i] = msgspec.structs.replace(old, parts=[*old.parts, *new.parts])
            else:
                artifacts[i] = new
            return
    artifacts.append(new)  # shared with the event: folded lists are replaced, never mutated


def trim_history(task: Task, history_length: int | None, *, include_artifacts: bool = True) -> Task:
    """A shallow copy of ``task`` showing at most ``history_length`` recent messages.

    ``None`` means no limit and 0 means no history.  What is stored is untouched.
    """
    history = task.history
    changed = False
    if history_length is not None and history is not None and len(history) > history_length:
        history = history[len(history) - history_length :] if history_length > 0 else None
        changed = True
    if not include_artifacts and task.artifacts is not None:
        return msgspec.structs.replace(task, history=history, artifacts=None)
    return msgspec.structs.replace(task, history=history) if changed else task
