"""The 0.1 binding's client-chosen task ids, kept apart per caller.

A 0.1 client names its task itself (``tasks/send`` with ``id``): an id no task has yet
starts a task with that id.  If another caller's task already has it, answering "not
found" (as the other bindings do for a task of someone else) would tell the sender that
the id is taken, which an id that never existed does not.  So such a send starts the
sender's own task under an alias of the id (the id, ``~`` and a digest of the caller and
the id), and the 0.1 answers show the id the client chose: the sender cannot tell the
two cases apart (issue 30 item 12), and the other caller's task is never touched.

Every 0.1 call naming a task (``tasks/get``, ``tasks/cancel``, ``tasks/resubscribe``, the
push-notification calls) looks the id up the same way: the caller's own task with that
id, else its alias if it has one.
"""

from __future__ import annotations

import hashlib
from typing import Any

from a2a_hub.engine.caller import Caller
from a2a_hub.engine.engine import TaskEngine

__all__ = ["alias_of", "client_view", "stored_id"]


def alias_of(task_id: str, owner: str | None) -> str:
    """The id under which ``owner``'s task named ``task_id`` is kept when that id is taken."""
    digest = hashlib.sha256(f"{owner or ''}\x00{task_id}".encode()).hexdigest()[:16]
    return f"{task_id}~{digest}"


async def _holder(engine: TaskEngine, task_id: str) -> tuple[bool, str | None]:
    """(whether a task has that id, its owner): a running one or a stored one."""
    run = engine.live(task_id)
    if run is not None:
        return True, run.owner
    record = await engine.store.get_task_record(engine.agent_id, task_id)
    return (record is not None, None if record is None else record.owner)


async def stored_id(engine: TaskEngine, caller: Caller, task_id: str) -> str:
    """The id of the task ``caller`` means by the 0.1 id ``task_id``: that id when the
    task is the caller's (or no task has it and the caller has no alias of it), else the
    caller's alias of it."""
    taken, owner = await _holder(engine, task_id)
    if taken and caller.sees(owner):
        return task_id
    alias = alias_of(task_id, caller.owner)
    if taken:
        return alias
    aliased, _ = await _holder(engine, alias)  # made while another task had the id
    return alias if aliased else task_id


def client_view(answer: Any, task_id: str, stored: str) -> Any:
    """A 0.1 answer (a task, a stream event, a push config as dicts) with the stored id
    shown as the id the client chose."""
    if stored == task_id or not isinstance(answer, dict):
        return answer
    for key in ("id", "taskId"):  # a task (0.1, 0.3), a 0.3 event
        if answer.get(key) == stored:
            answer = {**answer, key: task_id}
    config = answer.get("pushNotificationConfig")
    if isinstance(config, dict) and config.get("id") == stored:
        answer = {**answer, "pushNotificationConfig": {**config, "id": task_id}}
    return answer
