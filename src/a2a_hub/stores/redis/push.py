"""Push notification configs and the push outbox in Redis."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, cast

import msgspec

from a2a_hub.protocol.errors import TaskNotFoundError
from a2a_hub.protocol.types import StreamResponse, TaskPushNotificationConfig
from a2a_hub.stores.base import Delivery, DeliverySource
from a2a_hub.stores.redis import scripts
from a2a_hub.stores.redis.base import RedisBase, redis_guarded, split_push

__all__ = ["RedisPush"]

_enc = msgspec.json.Encoder()
_event_dec = msgspec.json.Decoder(StreamResponse)
_push_dec = msgspec.json.Decoder(TaskPushNotificationConfig)
_delivery_dec = msgspec.json.Decoder(Delivery)


class RedisPush(RedisBase):
    """Push configs (:class:`~a2a_hub.stores.base.PushConfigStore`) and the outbox
    (:class:`~a2a_hub.stores.base.PushOutbox`)."""

    @redis_guarded
    async def add_deliveries(self, deliveries: Sequence[Delivery]) -> None:
        due, data, dead = self._outbox_keys
        for d in deliveries:
            ident, queue = self._ident(d)
            if await self.client.hexists(dead, ident):
                continue
            if await self.client.hsetnx(data, ident, _enc.encode(d)):
                async with self.client.pipeline(transaction=True) as pipe:
                    pipe.zadd(due, {ident: d.due})
                    pipe.zadd(queue, {ident: d.seq * 2 + int(d.snapshot)})
                    await pipe.execute()

    @redis_guarded
    async def claim_deliveries(
        self, limit: int, lease: float, now: float | None = None
    ) -> list[Delivery]:
        at = time.time() if now is None else now
        due, data, _ = self._outbox_keys
        blobs = await scripts.OUTBOX_CLAIM(
            self.client,
            (due, data),
            (repr(at), repr(at + lease), limit, f"{self.prefix}:outbox:q:"),
        )
        claimed = [_delivery_dec.decode(b) for b in blobs]
        for d in claimed:
            d.due = at + lease
        return claimed

    @redis_guarded
    async def finish_delivery(self, delivery: Delivery) -> None:
        due, data, _ = self._outbox_keys
        ident, queue = self._ident(delivery)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zrem(due, ident)
            pipe.hdel(data, ident)
            pipe.zrem(queue, ident)
            await pipe.execute()

    @redis_guarded
    async def update_delivery(self, delivery: Delivery) -> None:
        due, data, dead = self._outbox_keys
        ident, queue = self._ident(delivery)
        if not await self.client.hexists(data, ident):
            return
        async with self.client.pipeline(transaction=True) as pipe:
            if delivery.dead:
                pipe.zrem(due, ident)
                pipe.hdel(data, ident)
                pipe.zrem(queue, ident)
                pipe.hset(dead, ident, _enc.encode(delivery))
            else:
                pipe.hset(data, ident, _enc.encode(delivery))
                pipe.zadd(due, {ident: delivery.due})
            await pipe.execute()

    @redis_guarded
    async def settle_deliveries(
        self, finished: Sequence[Delivery] = (), updated: Sequence[Delivery] = ()
    ) -> None:
        if not finished and not updated:
            return
        due, data, dead = self._outbox_keys
        present: list[bool] = []
        if updated:  # only deliveries still queued are updated (as update_delivery)
            async with self.client.pipeline(transaction=False) as pipe:
                for d in updated:
                    pipe.hexists(data, self._ident(d)[0])
                present = [bool(x) for x in await pipe.execute()]
        async with self.client.pipeline(transaction=True) as pipe:
            for d in finished:
                ident, queue = self._ident(d)
                pipe.zrem(due, ident)
                pipe.hdel(data, ident)
                pipe.zrem(queue, ident)
            for d, there in zip(updated, present, strict=True):
                if not there:
                    continue
                ident, queue = self._ident(d)
                if d.dead:
                    pipe.zrem(due, ident)
                    pipe.hdel(data, ident)
                    pipe.zrem(queue, ident)
                    pipe.hset(dead, ident, _enc.encode(d))
                else:
                    pipe.hset(data, ident, _enc.encode(d))
                    pipe.zadd(due, {ident: d.due})
            await pipe.execute()

    @redis_guarded
    async def delivery_sources(self, deliveries: Sequence[Delivery]) -> list[DeliverySource]:
        if not deliveries:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for d in deliveries:
                keys = self.keys(d.agent_id)
                pipe.hget(keys.push(d.task_id), "c:" + d.config_id)
                if not d.snapshot:
                    pipe.xrange(keys.events(d.task_id), min=f"0-{d.seq}", max=f"0-{d.seq}")
            replies = iter(await pipe.execute())
        out = []
        for d in deliveries:
            value = next(replies)
            entries = [] if d.snapshot else cast(list[Any], next(replies))
            if value is None:
                out.append(DeliverySource(None, None))
                continue
            config = _push_dec.decode(split_push(cast(bytes, value))[1])
            event = _event_dec.decode(entries[0][1][b"d"]) if entries else None
            out.append(DeliverySource(config, event))
        return out

    @redis_guarded
    async def dead_deliveries(self, limit: int = 1000) -> list[Delivery]:
        _, _, dead = self._outbox_keys
        blobs = cast(list[bytes], await self.client.hvals(dead))
        found = sorted((_delivery_dec.decode(b) for b in blobs), key=lambda d: d.due)
        return found[:limit]

    @redis_guarded
    async def task_deliveries(self, agent_id: str, task_id: str) -> list[Delivery]:
        _, data, dead = self._outbox_keys
        task = f"{agent_id}\0{task_id}\0"
        # pending: the queues of the task's configs (a deleted config's queue is found too)
        queues: list[bytes] = [
            q
            async for q in self.client.scan_iter(
                match=_glob(f"{self.prefix}:outbox:q:{task}") + "*", count=1000
            )
        ]
        found: list[Delivery] = []
        for queue in queues:
            idents = cast(list[bytes], await self.client.zrange(queue, 0, -1))
            if idents:
                blobs = cast(list[bytes | None], await self.client.hmget(data, idents))
                found += [_delivery_dec.decode(b) for b in blobs if b is not None]
        async for _, blob in self.client.hscan_iter(dead, match=_glob(task) + "*", count=1000):
            found.append(_delivery_dec.decode(blob))
        found.sort(key=lambda d: (d.config_id, d.order))
        return found

    @redis_guarded
    async def outbox_size(self) -> tuple[int, int]:
        _, data, dead = self._outbox_keys
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.hlen(data)
            pipe.hlen(dead)
            pending, gone = await pipe.execute()
        return int(pending), int(gone)

    @redis_guarded
    async def requeue_deliveries(self, ids: Sequence[str] | None = None) -> int:
        due, data, dead = self._outbox_keys
        wanted = None if ids is None else set(ids)
        at = time.time()
        count = 0
        entries = cast(dict[bytes, bytes], await self.client.hgetall(dead))
        for raw_ident, blob in entries.items():
            d = _delivery_dec.decode(blob)
            if wanted is not None and d.id not in wanted:
                continue
            d = msgspec.structs.replace(
                d, dead=False, attempts=0, due=at, first_failure=None, last_error=""
            )
            ident, queue = self._ident(d)
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.hdel(dead, raw_ident)
                pipe.hset(data, ident, _enc.encode(d))
                pipe.zadd(due, {ident: at})
                pipe.zadd(queue, {ident: d.seq * 2 + int(d.snapshot)})
                await pipe.execute()
            count += 1
        return count

    @redis_guarded
    async def set_push_config(
        self, agent_id: str, task_id: str, config: TaskPushNotificationConfig
    ) -> None:
        k = self.keys(agent_id)
        found = await scripts.SET_PUSH(
            self.client,
            (k.task(task_id), k.push(task_id)),
            ("c:" + (config.id or task_id), _enc.encode(config), self._push_ttl),
        )
        if not found:
            raise TaskNotFoundError(f"Task {task_id} not found")

    @redis_guarded
    async def get_push_config(
        self, agent_id: str, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        value = await self.client.hget(self.keys(agent_id).push(task_id), "c:" + config_id)
        return None if value is None else _push_dec.decode(split_push(cast(bytes, value))[1])

    @redis_guarded
    async def list_push_configs(
        self, agent_id: str, task_id: str
    ) -> list[TaskPushNotificationConfig]:
        fields = cast(
            dict[bytes, bytes], await self.client.hgetall(self.keys(agent_id).push(task_id))
        )
        configs = sorted(split_push(v) for f, v in fields.items() if f.startswith(b"c:"))
        return [_push_dec.decode(data) for _, data in configs]

    @redis_guarded
    async def delete_push_config(self, agent_id: str, task_id: str, config_id: str) -> bool:
        removed = await self.client.hdel(self.keys(agent_id).push(task_id), "c:" + config_id)
        return bool(removed)


def _glob(text: str) -> str:
    """``text`` as a literal Redis glob pattern (its special characters escaped)."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
