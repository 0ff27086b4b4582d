"""Sends push notifications, outside the tasks' own processing.

The :class:`Dispatcher` follows the agent-wide event feed of every hosted agent
(:meth:`TaskEngine.feed`), picks the events a webhook is told about (every status
change, every complete artifact), and queues one delivery per config of the
task.  Each config has its own queue and worker: deliveries to one config go out
in sequence order, and a failing webhook holds back only its own queue.

A delivery is retried with the shared :class:`~a2a_hub._backoff.Backoff`
(0, 5 s, 30 s, 2 min, … ±20 %, up to a horizon, default 24 h), honouring
``Retry-After``; ``410 Gone`` deletes the config; an unsafe address is not
retried.  A delivery that gives up is kept in :attr:`Dispatcher.dead`, listed and
re-queued by the admin calls.

Each POST carries: the body (1.0: one ``StreamResponse``, ``application/a2a+json``;
a 0.1 task: the task in 0.1 shape), ``X-A2A-Notification-Id`` (stable across
retries), ``X-A2A-Event-Seq``, the config's ``authentication`` as
``Authorization`` and ``token`` as ``X-A2A-Notification-Token``, and a JWT signed
by the hub in ``X-A2A-Notification-JWT`` (also as ``Authorization: Bearer`` when
the config has no authentication of its own).

The per-task config lists are cached: a task first seen at its creating event has
none (its configs arrive through the engine's hooks), others are read once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from a2a_hub._backoff import Backoff
from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.pubsub import EventsLostError, Feed
from a2a_hub.protocol import v01
from a2a_hub.protocol.types import StreamResponse, TaskPushNotificationConfig
from a2a_hub.push.keys import SigningKeys
from a2a_hub.push.sender import Outcome, WebhookSender
from a2a_hub.stores.base import TaskEvent

__all__ = ["DEFAULT_BACKOFF", "Delivery", "Dispatcher", "push_backoff"]

log = logging.getLogger("a2a_hub.push")

DEFAULT_BACKOFF = Backoff(
    steps=(5, 30, 120, 600, 1800), max_delay=3600, max_tries=None, horizon=86400
)
A2A_JSON = "application/a2a+json"


def push_backoff(steps: str, horizon: float) -> Backoff:
    """The retry policy of the push settings: ``steps`` like ``"5,30,120"`` (waits before
    retries 1, 2, 3 after the immediate first try), then doubling up to an hour."""
    try:
        waits = tuple(float(s) for s in steps.split(",") if s.strip())
    except ValueError:
        raise ValueError(
            f"push retry_steps {steps!r} is not a comma-separated list of seconds"
        ) from None
    return Backoff(steps=waits, max_delay=3600, max_tries=None, horizon=horizon)


_NS = uuid.UUID("5f1b3f0c-6c1e-4c55-a3b5-0f6e0b0d2a11")
_enc = msgspec.json.Encoder()


@dataclass
class Delivery:
    """One notification to one config: a stable id, the event seq, the body."""

    id: str
    agent_id: str
    task_id: str
    config_id: str
    seq: int
    body: bytes
    content_type: str
    attempts: int = 0
    first_failure: float | None = None
    last_error: str = ""
    dead_at: float | None = None


def delivery_id(agent_id: str, task_id: str, config_id: str, seq: int, kind: str = "e") -> str:
    """The stable id of a delivery (the same on every retry and instance)."""
    return str(uuid.uuid5(_NS, f"{agent_id}\0{task_id}\0{config_id}\0{seq}\0{kind}"))


def notable(event: StreamResponse) -> bool:
    """Whether a webhook is told about this event: status changes, complete artifacts."""
    if event.status_update is not None:
        return True
    art = event.artifact_update
    return art is not None and (art.last_chunk or not art.append)


@dataclass
class _Queue:
    config: TaskPushNotificationConfig
    items: collections.deque[Delivery] = field(default_factory=collections.deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    worker: asyncio.Task[None] | None = None


class Dispatcher:
    """Follows every engine's feed and sends the notifications (see the module doc)."""

    def __init__(
        self,
        sender: WebhookSender,
        keys: SigningKeys,
        issuer: Callable[[str], str],
        backoff: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        self.sender = sender
        self.keys = keys
        #: agent id -> the agent's card URL (the JWT's ``iss``).
        self.issuer = issuer
        self.backoff = backoff
        #: Deliveries that gave up, oldest first.
        self.dead: list[Delivery] = []
        #: Deliveries sent successfully (count), for tests and metrics.
        self.sent = 0
        self._configs: dict[tuple[str, str], dict[str, TaskPushNotificationConfig]] = {}
        self._queues: dict[tuple[str, str, str], _Queue] = {}
        self._followers: dict[str, asyncio.Task[None]] = {}
        self._engines: dict[str, TaskEngine] = {}
        self._closed = False

    # --- wiring ----------------------------------------------------------------------

    def watch(self, engine: TaskEngine) -> None:
        """Follow ``engine``'s feed and its config changes."""
        if self._closed or self._engines.get(engine.agent_id) is engine:
            return
        old = self._followers.pop(engine.agent_id, None)
        if old is not None:
            old.cancel()
        self._engines[engine.agent_id] = engine
        engine.push.on_set = lambda task_id, config, snap: self._on_set(
            engine, task_id, config, snap
        )
        engine.push.on_delete = lambda task_id, config_id: self._drop(
            engine.agent_id, task_id, config_id
        )
        feed = engine.feed()
        self._followers[engine.agent_id] = asyncio.ensure_future(self._follow(engine, feed))

    async def close(self) -> None:
        """Stop following and sending (undelivered notifications stay undelivered)."""
        self._closed = True
        tasks = list(self._followers.values()) + [
            q.worker for q in self._queues.values() if q.worker is not None
        ]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.sender.close()

    # --- configs -----------------------------------------------------------------------

    def _on_set(
        self,
        engine: TaskEngine,
        task_id: str,
        config: TaskPushNotificationConfig,
        snapshot: TaskEvent | None,
    ) -> None:
        configs = self._configs.setdefault((engine.agent_id, task_id), {})
        config_id = config.id or task_id
        configs[config_id] = config
        queue = self._queues.get((engine.agent_id, task_id, config_id))
        if queue is not None:
            queue.config = config
        if snapshot is not None and snapshot.event.task is not None:
            body, ctype = self._body(snapshot.event, snapshot.event)
            did = delivery_id(engine.agent_id, task_id, config_id, snapshot.seq, "snapshot")
            self._enqueue(engine.agent_id, task_id, config, snapshot.seq, body, ctype, did)

    def _drop(self, agent_id: str, task_id: str, config_id: str) -> None:
        configs = self._configs.get((agent_id, task_id))
        if configs is not None:
            configs.pop(config_id, None)
        queue = self._queues.pop((agent_id, task_id, config_id), None)
        if queue is not None and queue.worker is not None:
            queue.worker.cancel()

    async def _configs_of(
        self, engine: TaskEngine, task_id: str, seq: int
    ) -> dict[str, TaskPushNotificationConfig]:
        key = (engine.agent_id, task_id)
        configs = self._configs.get(key)
        if configs is None:
            configs = {}
            if seq > 1:  # a task first seen at its creation has no configs yet
                for c in await engine.store.list_push_configs(engine.agent_id, task_id):
                    configs[c.id or task_id] = c
            self._configs[key] = configs
        return configs

    # --- following ------------------------------------------------------------------

    async def _follow(self, engine: TaskEngine, feed: Feed) -> None:
        try:
            while True:
                try:
                    item = await feed.next(None)
                except StopAsyncIteration:
                    return
                except EventsLostError:
                    log.warning(
                        "push: %s feed overflowed; some notifications were lost", engine.agent_id
                    )
                    continue
                if item is None:
                    return
                ev = item.event
                if ev.seq <= 0 or not notable(ev.event):
                    if ev.seq == 1:
                        self._configs.setdefault((engine.agent_id, item.task_id), {})
                    continue
                configs = await self._configs_of(engine, item.task_id, ev.seq)
                if not configs:
                    continue
                snapshot = None
                art = ev.event.artifact_update
                if art is not None and art.append:
                    snapshot = (await engine.log.snapshot(item.task_id)).event
                    ev = TaskEvent(ev.seq, _whole_artifact(ev.event, snapshot))
                for config_id, config in list(configs.items()):
                    body, ctype = self._body(ev.event, snapshot)
                    did = delivery_id(engine.agent_id, item.task_id, config_id, ev.seq)
                    self._enqueue(engine.agent_id, item.task_id, config, ev.seq, body, ctype, did)
        finally:
            feed.close()

    def _body(self, event: StreamResponse, snapshot: StreamResponse | None) -> tuple[bytes, str]:
        task = snapshot.task if snapshot is not None else event.task
        if task is not None and v01.is_legacy_task(task):
            return _enc.encode(v01.encode_task(task)), "application/json"
        return _enc.encode(event), A2A_JSON

    def _enqueue(
        self,
        agent_id: str,
        task_id: str,
        config: TaskPushNotificationConfig,
        seq: int,
        body: bytes,
        content_type: str,
        did: str,
    ) -> None:
        config_id = config.id or task_id
        key = (agent_id, task_id, config_id)
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = _Queue(config)
        queue.items.append(Delivery(did, agent_id, task_id, config_id, seq, body, content_type))
        queue.wake.set()
        if queue.worker is None or queue.worker.done():
            queue.worker = asyncio.ensure_future(self._work(key, queue))

    # --- sending ----------------------------------------------------------------------

    async def _work(self, key: tuple[str, str, str], queue: _Queue) -> None:
        while queue.items and not self._closed:
            delivery = queue.items[0]
            outcome = await self._send(queue.config, delivery)
            if outcome.ok:
                queue.items.popleft()
                self.sent += 1
                continue
            if outcome.gone:
                log.info(
                    "push: %s answered 410 Gone; config %s deleted",
                    queue.config.url,
                    delivery.config_id,
                )
                engine = self._engines.get(delivery.agent_id)
                if engine is not None:
                    await engine.store.delete_push_config(
                        delivery.agent_id, delivery.task_id, delivery.config_id
                    )
                self._drop(*key)
                return
            delivery.attempts += 1
            delivery.last_error = outcome.error
            now = time.monotonic()
            if delivery.first_failure is None:
                delivery.first_failure = now
            elapsed = now - delivery.first_failure
            if outcome.permanent or self.backoff.exhausted(delivery.attempts, elapsed):
                queue.items.popleft()
                delivery.dead_at = time.time()
                self.dead.append(delivery)
                log.warning(
                    "push: delivery %s to %s is dead: %s",
                    delivery.id,
                    queue.config.url,
                    outcome.error,
                )
                continue
            await asyncio.sleep(self.backoff.delay(delivery.attempts, outcome.retry_after))

    async def _send(self, config: TaskPushNotificationConfig, delivery: Delivery) -> Outcome:
        token = self.keys.sign(
            issuer=self.issuer(delivery.agent_id),
            audience=config.url,
            jti=delivery.id,
            task_id=delivery.task_id,
            body=delivery.body,
        )
        headers = {
            "Content-Type": delivery.content_type,
            "X-A2A-Notification-Id": delivery.id,
            "X-A2A-Event-Seq": str(delivery.seq),
            "X-A2A-Notification-JWT": token,
        }
        auth = config.authentication
        if auth is not None:
            headers["Authorization"] = (
                f"{auth.scheme} {auth.credentials}" if auth.credentials else auth.scheme
            )
        else:
            headers["Authorization"] = f"Bearer {token}"
        if config.token is not None:
            headers["X-A2A-Notification-Token"] = config.token
        return await self.sender.post(config.url, delivery.body, headers)

    # --- dead deliveries ------------------------------------------------------------

    def requeue(self, delivery_id: str | None = None) -> int:
        """Queue dead deliveries again (one by id, or all); returns how many."""
        again = [d for d in self.dead if delivery_id is None or d.id == delivery_id]
        self.dead = [d for d in self.dead if d not in again]
        for d in again:
            configs = self._configs.get((d.agent_id, d.task_id), {})
            config = configs.get(d.config_id)
            if config is None:
                continue
            d.attempts, d.first_failure, d.dead_at = 0, None, None
            self._enqueue(d.agent_id, d.task_id, config, d.seq, d.body, d.content_type, d.id)
        return len(again)


def _whole_artifact(event: StreamResponse, snapshot: StreamResponse) -> StreamResponse:
    """The artifact update of a last chunk, carrying the whole artifact as stored."""
    art = event.artifact_update
    task = snapshot.task
    if art is None or task is None:
        return event
    for whole in task.artifacts or []:
        if whole.artifact_id == art.artifact.artifact_id:
            return StreamResponse(
                artifact_update=msgspec.structs.replace(
                    art, artifact=whole, append=False, last_chunk=True
                )
            )
    return event
