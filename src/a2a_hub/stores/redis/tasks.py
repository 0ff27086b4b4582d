"""Tasks and their event logs in Redis: get, save (one Lua script, group committed),
list, expire, delete; read a log (a Stream) from a sequence number."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import msgspec

from a2a_hub.protocol.types import StreamResponse, Task, TaskPushNotificationConfig, TaskState
from a2a_hub.stores.base import (
    Delivery,
    StoredTask,
    TaskEvent,
    TaskPage,
    TaskQuery,
    check_events,
    decode_page_token,
    encode_page_token,
    log_conflict,
    now,
)
from a2a_hub.stores.redis import scripts
from a2a_hub.stores.redis.base import RedisBase, redis_guarded, text_of

__all__ = ["RedisTasks"]

_enc = msgspec.json.Encoder()
_task_dec = msgspec.json.Decoder(Task)
_event_dec = msgspec.json.Decoder(StreamResponse)

_ENDED = sorted(state.value for state in TaskState if state.terminal)


class RedisTasks(RedisBase):
    """Task snapshots (:class:`~a2a_hub.stores.base.TaskStore`, expiry) and event logs."""

    @redis_guarded
    async def get_task(self, agent_id: str, task_id: str) -> Task | None:
        data = await self.client.hget(self.keys(agent_id).task(task_id), "d")
        return None if data is None else _task_dec.decode(data)

    @redis_guarded
    async def get_task_record(self, agent_id: str, task_id: str) -> StoredTask | None:
        data, seq, owner = await self.client.hmget(
            self.keys(agent_id).task(task_id), ["d", "seq", "owner"]
        )
        if data is None:
            return None
        return StoredTask(
            _task_dec.decode(data), int(cast(bytes, seq)), None if owner is None else text_of(owner)
        )

    @redis_guarded
    async def save_task(
        self,
        agent_id: str,
        task: Task,
        events: Sequence[TaskEvent] = (),
        *,
        owner: str | None = None,
        deliveries: Sequence[Delivery] = (),
        push_configs: Sequence[TaskPushNotificationConfig] = (),
    ) -> None:
        check_events(task.id, events)
        k = self.keys(agent_id)
        state = task.status.state
        keys = (
            *k.common_keys,
            k.task(task.id),
            k.events(task.id),
            k.push(task.id),
            k.context(task.context_id),
            k.state(state.value),
            *self._outbox_keys,
        )
        args: list[str | bytes | int] = [
            *k.common_args,
            task.id,
            _enc.encode(task),
            task.context_id,
            state.value,
            repr(now()),
            "1" if state.terminal else "0",
            self._task_ttl,
            self._history_ttl,
            self._push_ttl,
            "" if owner is None else "=" + owner,
            events[0].seq if events else 0,
        ]
        args.extend(_enc.encode(e.event) for e in events)
        for d in deliveries:
            ident, queue = self._ident(d)
            args.extend((ident, d.seq * 2 + int(d.snapshot), _enc.encode(d), queue))
        for config in push_configs:
            args.extend(("c:" + (config.id or task.id), _enc.encode(config)))
        args.append(len(push_configs))
        args.append(len(deliveries))
        ok, stored = await self._batch.call(scripts.SAVE, keys, args)
        if not ok:
            raise log_conflict(task.id, events[0].seq, int(stored))

    @redis_guarded
    async def list_tasks(self, agent_id: str, query: TaskQuery) -> TaskPage:
        cursor = decode_page_token(query.page_token) if query.page_token else None
        k = self.keys(agent_id)
        indexes = [
            k.context(query.context_id) if query.context_id is not None else None,
            k.state(query.state.value) if query.state is not None else None,
            k.owner(query.owner) if query.owner is not None else None,
        ]
        sources = [index for index in indexes if index is not None] or [k.tasks]
        lowest = "-inf" if query.updated_after is None else repr(float(query.updated_after))
        ties = cursor is not None and (
            query.updated_after is None or cursor[0] >= query.updated_after
        )
        size = max(query.page_size, 0)
        reply = await scripts.LIST(
            self.client,
            (*k.common_keys, k.scratch(), *sources),
            (
                *k.common_args,
                k.task_prefix,
                lowest,
                "" if cursor is None else repr(cursor[0]),
                "1" if ties else "0",
                size + 1,  # one more tells whether there is a next page
            ),
        )
        total, n_ties = int(reply[0]), int(reply[1])
        rows: list[tuple[float, str, bytes]] = []
        if cursor is not None and n_ties:
            at, after_id = cursor
            for i in range(2, 2 + 2 * n_ties, 2):
                task_id = text_of(reply[i])
                if task_id < after_id:  # equal updated_at: task_id descending
                    rows.append((at, task_id, reply[i + 1]))
            rows.sort(key=lambda r: r[1], reverse=True)
        rest = reply[2 + 2 * n_ties :]
        rows.extend(
            (float(rest[i + 1]), text_of(rest[i]), rest[i + 2]) for i in range(0, len(rest), 3)
        )
        more = len(rows) > size
        page = rows[:size]
        token = encode_page_token(page[-1][0], page[-1][1]) if page and more else ""
        return TaskPage(
            tasks=[_task_dec.decode(r[2]) for r in page],
            next_page_token=token,
            total_size=max(total, len(page)),
        )

    @redis_guarded
    async def expired_tasks(self, agent_id: str, before: float, limit: int) -> list[str]:
        """Besides this, Redis drops ended tasks by itself ``task_ttl`` after they end."""
        k = self.keys(agent_id)
        found: list[tuple[float, str]] = []
        for state in _ENDED:
            rows: Any = await self.client.zrange(
                k.state(state),
                "-inf",
                f"({before!r}",
                byscore=True,
                offset=0,
                num=limit,
                withscores=True,
            )
            found.extend((float(score), text_of(member)) for member, score in rows)
        found.sort()
        return [task_id for _, task_id in found[:limit]]

    @redis_guarded
    async def delete_task(self, agent_id: str, task_id: str) -> bool:
        k = self.keys(agent_id)
        existed = await scripts.DELETE(
            self.client,
            (*k.common_keys, k.task(task_id), k.events(task_id), k.push(task_id)),
            (*k.common_args, task_id),
        )
        return bool(existed)

    # --- events ------------------------------------------------------------------------

    @redis_guarded
    async def read_events(
        self, agent_id: str, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[TaskEvent]:
        if limit is not None and limit <= 0:
            return []
        entries = cast(
            list[tuple[bytes, dict[bytes, bytes]]],
            await self.client.xrange(
                self.keys(agent_id).events(task_id),
                min=f"(0-{max(after, 0)}",
                max="+",
                count=limit,
            ),
        )
        return [
            TaskEvent(seq=int(entry_id.rpartition(b"-")[2]), event=_event_dec.decode(fields[b"d"]))
            for entry_id, fields in entries
        ]

    @redis_guarded
    async def last_seq(self, agent_id: str, task_id: str) -> int:
        k = self.keys(agent_id)
        return int(await scripts.LAST_SEQ(self.client, (k.task(task_id), k.events(task_id)), ()))
