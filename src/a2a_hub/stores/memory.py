"""In-process store (``memory://``): fast, not durable, not shared.

It copies everything on the way in and out (through the wire encoding), so code
that mutates a task after saving it, or mutates what it read, fails here just as
it would against a real backend.
"""

from __future__ import annotations

import heapq
import itertools
import operator
import time
from bisect import bisect_right, insort
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from a2a_hub.protocol.errors import TaskNotFoundError
from a2a_hub.protocol.types import Task, TaskPushNotificationConfig, TaskState
from a2a_hub.stores.base import (
    Delivery,
    MessageClaim,
    Store,
    StoredTask,
    TaskEvent,
    TaskPage,
    TaskQuery,
    check_continues,
    decode_page_token,
    encode_page_token,
    now,
)

__all__ = ["MemoryStore"]

_enc = msgspec.json.Encoder()
_task_dec = msgspec.json.Decoder(Task)
_events_dec = msgspec.json.Decoder(list[TaskEvent])
_push_dec = msgspec.json.Decoder(TaskPushNotificationConfig)
_claim_dec = msgspec.json.Decoder(MessageClaim)


class _Entry(NamedTuple):
    """One task, all immutable: a tuple of atoms, so the garbage collector stops tracking it
    (a store of many tasks then adds nothing to the collector's pauses).

    Its event log is kept as the events of each save, encoded together (one JSON array per
    save: one encoder call, not one per event), with the seq of each save's first event."""

    task: bytes
    context_id: str
    state: str
    updated_at: float
    events: tuple[bytes, ...] = ()
    owner: str | None = None
    #: The seq of the first event of each blob of :attr:`events`.
    starts: tuple[int, ...] = ()
    #: The last seq of the log (0: no event).
    seq: int = 0


_ENDED = frozenset(state.value for state in TaskState if state.terminal)
_seq_of = operator.attrgetter("seq")


class MemoryStore(Store):
    """Dictionaries in this process; lost when it exits."""

    def __init__(self, url: str = "memory://") -> None:
        self.url = url
        self._tasks: dict[tuple[str, str], _Entry] = {}
        self._push: dict[tuple[str, str], dict[str, bytes]] = {}
        #: The outbox: identity -> delivery (copied in and out).
        self._outbox: dict[tuple[str, str, str, int, bool], Delivery] = {}
        self._meta: dict[str, bytes] = {}
        #: (agent, owner, message id) -> (when claimed, the encoded claim).
        self._claims: dict[tuple[str, str | None, str], tuple[float, bytes]] = {}
        #: (agent, task, config) -> the identities of its deliveries (pending or dead), in
        #: order (seq, then snapshot): its first pending one is found without a search.
        self._queues: dict[tuple[str, str, str], list[tuple[str, str, str, int, bool]]] = {}
        #: (due, tie, identity) of each config's first pending delivery, by due time, so a
        #: claim looks only at what is due; entries left behind by a change are skipped.
        self._heads: list[tuple[float, int, tuple[str, str, str, int, bool]]] = []
        self._tie = itertools.count()

    async def get_task(self, agent_id: str, task_id: str) -> Task | None:
        entry = self._tasks.get((agent_id, task_id))
        return None if entry is None else _task_dec.decode(entry.task)

    async def get_task_record(self, agent_id: str, task_id: str) -> StoredTask | None:
        entry = self._tasks.get((agent_id, task_id))
        if entry is None:
            return None
        return StoredTask(_task_dec.decode(entry.task), entry.seq, entry.owner)

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
        key = (agent_id, task.id)
        entry = self._tasks.get(key)
        if entry is None:
            logged: tuple[bytes, ...] = ()
            starts: tuple[int, ...] = ()
            last = 0
            stamp = now()
        else:
            logged, starts, last = entry.events, entry.starts, entry.seq
            stamp = max(now(), entry.updated_at)
            owner = entry.owner  # recorded at creation, never changed
        if events:
            seqs = list(map(_seq_of, events))
            if seqs != list(range(last + 1, last + 1 + len(seqs))):
                check_continues(task.id, events, last)  # raises, saying what is wrong
            logged = (*logged, _enc.encode(events))
            starts = (*starts, last + 1)
            last += len(seqs)
        self._tasks[key] = _Entry(
            _enc.encode(task),
            task.context_id,
            task.status.state._value_,  # the enum's ``value`` property costs a call
            stamp,
            logged,
            owner,
            starts,
            last,
        )
        if push_configs:
            configs = self._push.setdefault(key, {})
            for config in push_configs:
                configs[config.id or task.id] = _enc.encode(config)
        if deliveries:
            self._add(deliveries)

    async def list_tasks(self, agent_id: str, query: TaskQuery) -> TaskPage:
        rows = [
            (entry.updated_at, task_id, entry)
            for (agent, task_id), entry in self._tasks.items()
            if agent == agent_id
            and (query.owner is None or entry.owner == query.owner)
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

    async def expired_tasks(self, agent_id: str, before: float, limit: int) -> list[str]:
        found = sorted(
            (entry.updated_at, task_id)
            for (agent, task_id), entry in self._tasks.items()
            if agent == agent_id and entry.updated_at < before and entry.state in _ENDED
        )
        return [task_id for _, task_id in found[:limit]]

    async def claim_message(
        self, agent_id: str, owner: str | None, message_id: str, claim: MessageClaim
    ) -> MessageClaim | None:
        key = (agent_id, owner, message_id)
        held = self._claims.get(key)
        if held is not None:
            found = _claim_dec.decode(held[1])
            if claim.reply is None or found.reply is not None or found.task_id != claim.task_id:
                return found
            self._claims[key] = (held[0], _enc.encode(claim))
            return None
        self._claims[key] = (claim.created or now(), _enc.encode(claim))
        return None

    async def purge_claims(self, agent_id: str, before: float, limit: int = 100) -> int:
        old = [k for k, (made, _) in self._claims.items() if k[0] == agent_id and made < before]
        for key in old[:limit]:
            del self._claims[key]
        return min(len(old), limit)

    async def delete_task(self, agent_id: str, task_id: str) -> bool:
        self._push.pop((agent_id, task_id), None)
        for ident in [i for i in self._outbox if i[0] == agent_id and i[1] == task_id]:
            self._forget(ident)
        return self._tasks.pop((agent_id, task_id), None) is not None

    async def read_events(
        self, agent_id: str, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[TaskEvent]:
        entry = self._tasks.get((agent_id, task_id))
        if entry is None:
            return []
        after = max(after, 0)
        found: list[TaskEvent] = []
        # from the save holding seq after + 1
        for blob in entry.events[max(bisect_right(entry.starts, after + 1) - 1, 0) :]:
            found.extend(e for e in _events_dec.decode(blob) if e.seq > after)
            if limit is not None and len(found) >= limit:
                return found[:limit]
        return found

    async def last_seq(self, agent_id: str, task_id: str) -> int:
        entry = self._tasks.get((agent_id, task_id))
        return entry.seq if entry else 0

    async def set_push_config(
        self, agent_id: str, task_id: str, config: TaskPushNotificationConfig
    ) -> None:
        entry = self._tasks.get((agent_id, task_id))
        if entry is None:
            raise TaskNotFoundError(f"Task {task_id} not found")
        self._push.setdefault((agent_id, task_id), {})[config.id or task_id] = _enc.encode(config)

    async def get_push_config(
        self, agent_id: str, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        blob = self._push.get((agent_id, task_id), {}).get(config_id)
        return None if blob is None else _push_dec.decode(blob)

    async def list_push_configs(
        self, agent_id: str, task_id: str
    ) -> list[TaskPushNotificationConfig]:
        return [_push_dec.decode(b) for b in self._push.get((agent_id, task_id), {}).values()]

    async def delete_push_config(self, agent_id: str, task_id: str, config_id: str) -> bool:
        configs = self._push.get((agent_id, task_id))
        return configs is not None and configs.pop(config_id, None) is not None

    # --- outbox --------------------------------------------------------------------------

    def _head(self, queue_key: tuple[str, str, str]) -> Delivery | None:
        """The first pending (not dead) delivery of a config."""
        outbox = self._outbox
        for ident in self._queues.get(queue_key, ()):
            d = outbox[ident]
            if not d.dead:
                return d
        return None

    def _index_head(self, queue_key: tuple[str, str, str]) -> None:
        """Put the config's first pending delivery, at its due time, in the heap."""
        head = self._head(queue_key)
        if head is not None:
            ident = (head.agent_id, head.task_id, head.config_id, head.seq, head.snapshot)
            heapq.heappush(self._heads, (head.due, next(self._tie), ident))

    def _add(self, deliveries: Sequence[Delivery]) -> None:
        touched = set()
        outbox, queues = self._outbox, self._queues
        for d in deliveries:
            ident = (d.agent_id, d.task_id, d.config_id, d.seq, d.snapshot)
            if ident not in outbox:
                outbox[ident] = msgspec.structs.replace(d)
                queue_key = ident[:3]
                queue = queues.get(queue_key)
                if queue is None:
                    queues[queue_key] = [ident]
                elif queue[-1] < ident:  # in a queue: same config, so by (seq, snapshot)
                    queue.append(ident)
                else:
                    insort(queue, ident)
                touched.add(queue_key)
        for queue_key in touched:
            self._index_head(queue_key)

    def _forget(self, ident: tuple[str, str, str, int, bool]) -> None:
        self._outbox.pop(ident, None)
        queue = self._queues.get(ident[:3])
        if queue is not None and ident in queue:
            queue.remove(ident)
            if not queue:
                del self._queues[ident[:3]]
            else:
                self._index_head(ident[:3])

    async def add_deliveries(self, deliveries: Sequence[Delivery]) -> None:
        self._add(deliveries)

    async def claim_deliveries(
        self, limit: int, lease: float, now: float | None = None
    ) -> list[Delivery]:
        at = time.time() if now is None else now
        heads = self._heads
        claimed: list[Delivery] = []
        while heads and heads[0][0] <= at and len(claimed) < limit:
            due, _, ident = heapq.heappop(heads)
            d = self._outbox.get(ident)
            if d is None or d.dead or d.due != due or self._head(ident[:3]) is not d:
                continue  # left behind by a change: the current head has its own entry
            d.due = at + lease
            heapq.heappush(heads, (d.due, next(self._tie), ident))
            claimed.append(msgspec.structs.replace(d))
        return claimed

    async def finish_delivery(self, delivery: Delivery) -> None:
        d = delivery
        self._forget((d.agent_id, d.task_id, d.config_id, d.seq, d.snapshot))

    async def update_delivery(self, delivery: Delivery) -> None:
        d = delivery
        ident = (d.agent_id, d.task_id, d.config_id, d.seq, d.snapshot)
        if ident in self._outbox:
            self._outbox[ident] = msgspec.structs.replace(d)
            self._index_head(ident[:3])

    async def dead_deliveries(self, limit: int = 1000) -> list[Delivery]:
        dead = sorted((d for d in self._outbox.values() if d.dead), key=lambda d: d.due)
        return [msgspec.structs.replace(d) for d in dead[:limit]]

    async def task_deliveries(self, agent_id: str, task_id: str) -> list[Delivery]:
        found = [d for i, d in self._outbox.items() if i[0] == agent_id and i[1] == task_id]
        found.sort(key=lambda d: (d.config_id, d.order))
        return [msgspec.structs.replace(d) for d in found]

    async def outbox_size(self) -> tuple[int, int]:
        dead = sum(1 for d in self._outbox.values() if d.dead)
        return len(self._outbox) - dead, dead

    async def requeue_deliveries(self, ids: Sequence[str] | None = None) -> int:
        wanted = None if ids is None else set(ids)
        count = 0
        at = time.time()
        for d in self._outbox.values():
            if d.dead and (wanted is None or d.id in wanted):
                d.dead, d.attempts, d.due, d.first_failure, d.last_error = False, 0, at, None, ""
                self._index_head((d.agent_id, d.task_id, d.config_id))
                count += 1
        return count

    # --- meta --------------------------------------------------------------------------

    async def get_meta(self, name: str) -> bytes | None:
        return self._meta.get(name)

    async def swap_meta(self, name: str, expected: bytes | None, value: bytes) -> bool:
        if self._meta.get(name) != expected:
            return False
        self._meta[name] = bytes(value)
        return True
