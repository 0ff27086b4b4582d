"""In-process store (``memory://``): fast, not durable, not shared.

It copies everything on the way in and out (through the wire encoding), so code
that mutates a task after saving it, or mutates what it read, fails here just as
it would against a real backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from a2a_hub.protocol.errors import TaskNotFoundError
from a2a_hub.protocol.types import Task, TaskPushNotificationConfig
from a2a_hub.stores.base import (
    Store,
    TaskEvent,
    TaskPage,
    TaskQuery,
    decode_page_token,
    encode_page_token,
    now,
)

__all__ = ["MemoryStore"]

_enc = msgspec.json.Encoder()
_task_dec = msgspec.json.Decoder(Task)
_event_dec = msgspec.json.Decoder(TaskEvent)
_push_dec = msgspec.json.Decoder(TaskPushNotificationConfig)


@dataclass
class _Entry:
    task: bytes
    context_id: str
    state: str
    updated_at: float
    events: list[bytes] = field(default_factory=list)
    push: dict[str, bytes] = field(default_factory=dict)


class MemoryStore(Store):
    """Dictionaries in this process; lost when it exits."""

    def __init__(self, url: str = "memory://") -> None:
        self.url = url
        self._tasks: dict[tuple[str, str], _Entry] = {}

    async def get_task(self, agent_id: str, task_id: str) -> Task | None:
        entry = self._tasks.get((agent_id, task_id))
        return None if entry is None else _task_dec.decode(entry.task)

    async def get_task_at(self, agent_id: str, task_id: str) -> tuple[Task, int] | None:
        entry = self._tasks.get((agent_id, task_id))
        return None if entry is None else (_task_dec.decode(entry.task), len(entry.events))

    async def save_task(self, agent_id: str, task: Task, events: Sequence[TaskEvent] = ()) -> None:
        key = (agent_id, task.id)
        entry = self._tasks.get(key)
        last = len(entry.events) if entry else 0
        for offset, ev in enumerate(events, start=1):
            if ev.seq != last + offset:
                raise ValueError(f"event seq {ev.seq} does not follow {last + offset - 1}")
        blob = _enc.encode(task)
        stamp = max(now(), entry.updated_at) if entry else now()
        if entry is None:
            entry = _Entry(blob, task.context_id, task.status.state.value, stamp)
            self._tasks[key] = entry
        else:
            entry.task, entry.context_id = blob, task.context_id
            entry.state, entry.updated_at = task.status.state.value, stamp
        entry.events.extend(_enc.encode(ev) for ev in events)

    async def list_tasks(self, agent_id: str, query: TaskQuery) -> TaskPage:
        rows = [
            (entry.updated_at, task_id, entry)
            for (owner, task_id), entry in self._tasks.items()
            if owner == agent_id
            and (query.context_id is None or entry.context_id == query.context_id)
            and (query.state is None or entry.state == query.state.value)
            and (query.updated_after is None or entry.updated_at >= query.updated_after)
        ]
        rows.sort(key=lambda r: (r[0], r[1]), reverse=True)
        total = len(rows)
        start = 0
        if query.page_token:
            cursor = decode_page_token(query.page_token)
            start = next((i for i, r in enumerate(rows) if (r[0], r[1]) < cursor), total)
        page = rows[start : start + query.page_size]
        more = start + query.page_size < total
        token = encode_page_token(page[-1][0], page[-1][1]) if page and more else ""
        return TaskPage(
            tasks=[_task_dec.decode(r[2].task) for r in page],
            next_page_token=token,
            total_size=total,
        )

    async def delete_task(self, agent_id: str, task_id: str) -> bool:
        return self._tasks.pop((agent_id, task_id), None) is not None

    async def read_events(
        self, agent_id: str, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[TaskEvent]:
        entry = self._tasks.get((agent_id, task_id))
        if entry is None:
            return []
        blobs = entry.events[max(after, 0) :]
        if limit is not None:
            blobs = blobs[:limit]
        return [_event_dec.decode(b) for b in blobs]

    async def last_seq(self, agent_id: str, task_id: str) -> int:
        entry = self._tasks.get((agent_id, task_id))
        return len(entry.events) if entry else 0

    async def set_push_config(
        self, agent_id: str, task_id: str, config: TaskPushNotificationConfig
    ) -> None:
        entry = self._tasks.get((agent_id, task_id))
        if entry is None:
            raise TaskNotFoundError(f"Task {task_id} not found")
        entry.push[config.id or task_id] = _enc.encode(config)

    async def get_push_config(
        self, agent_id: str, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        entry = self._tasks.get((agent_id, task_id))
        blob = entry.push.get(config_id) if entry else None
        return None if blob is None else _push_dec.decode(blob)

    async def list_push_configs(
        self, agent_id: str, task_id: str
    ) -> list[TaskPushNotificationConfig]:
        entry = self._tasks.get((agent_id, task_id))
        return [_push_dec.decode(b) for b in entry.push.values()] if entry else []

    async def delete_push_config(self, agent_id: str, task_id: str, config_id: str) -> bool:
        entry = self._tasks.get((agent_id, task_id))
        return entry is not None and entry.push.pop(config_id, None) is not None
