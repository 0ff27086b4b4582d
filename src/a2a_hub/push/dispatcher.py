"""Sends the push notifications the store's outbox holds, outside the tasks' processing.

Deliveries enter the outbox in the same write as the events they announce (the
task's run adds one per config of the task for every status change and every
complete artifact; a config registered on a running task gets the task's snapshot
first).  A :class:`Dispatcher` runs in every hub instance: it claims due
deliveries from the store with a lease (the store hands each to one claimant, and
only the first pending delivery of each config, so one config's notifications go
out in sequence order while a failing webhook holds back only its own), sends
them, and finishes or reschedules each.  A dead instance's claims come due again
when their lease runs out, and another instance sends them.

The store is asked per round, not per delivery: each turn of the dispatcher's loop
writes the outcomes of every send that ended since the last turn in one call
(:meth:`~a2a_hub.stores.base.PushOutbox.settle_deliveries`), claims as many due
deliveries as there are free sending slots in one call, and reads their configs and
events in one call (:meth:`~a2a_hub.stores.base.Store.delivery_sources`).  Up to
``concurrency`` sends run at once, each on its own; a slow webhook occupies one
slot, never the loop.  While the process is busy serving requests (one pass through
the event loop's ready callbacks takes over :data:`BUSY_PASS`), at most
``busy_concurrency`` sends are in flight: the notifications, background work, yield
most of the CPU to the requests and catch up once the load drops, never stopping.
The more sends end while the store answers, the larger the next round: under load
rounds grow instead of multiplying.

Retries follow the shared :class:`~a2a_hub._backoff.Backoff` (first try at once,
then 5 s, 30 s, 2 min, 10 min, 30 min, then doubling up to an hour, ±20 %; up to
a horizon, default 24 h), honouring ``Retry-After``; ``410 Gone`` deletes the
config; an unsafe address is not retried.  A delivery that gives up stays in the
store as dead, listed and re-queued by :meth:`Dispatcher.dead` /
:meth:`Dispatcher.requeue` (``a2a-hub push dead list|requeue``).

Each POST carries: the body (1.0: one ``StreamResponse``, ``application/a2a+json``;
a config set through 0.3 or 0.1: the task as it is now, in that version's shape,
``application/json``),
``X-A2A-Notification-Id`` (stable across retries and instances),
``X-A2A-Event-Seq``, the config's ``authentication`` as ``Authorization`` and its
``token`` as ``X-A2A-Notification-Token``, and a JWT signed by the hub in
``X-A2A-Notification-JWT`` (also as ``Authorization: Bearer`` when the config has
no authentication of its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from types import TracebackType

import msgspec

from a2a_hub import metrics
from a2a_hub._backoff import Backoff
from a2a_hub.protocol import v01, v03
from a2a_hub.protocol.types import StreamResponse, Task, TaskPushNotificationConfig
from a2a_hub.push.sender import Outcome, WebhookSender
from a2a_hub.push.signing import SigningKeys
from a2a_hub.stores.base import Delivery, DeliverySource, Store
from a2a_hub.stores.outage import Repeating

__all__ = ["DEFAULT_BACKOFF", "Dispatcher", "push_backoff"]

log = logging.getLogger("a2a_hub.push")

A2A_JSON = "application/a2a+json"
#: How long a claim lasts: well over the 10 s a POST may take.
LEASE = 60.0
#: How often the signing keys are read again from the store.
KEY_REFRESH = 60.0
#: Seconds between two counts of the outbox for the ``a2a_push_outbox_deliveries`` gauge.
BACKLOG_EVERY = 5.0
#: A pass through the event loop's ready callbacks longer than this (seconds) means the
#: process is busy (requests waiting): the dispatcher then keeps fewer sends in flight.
BUSY_PASS = 0.002
#: Sends in flight at most while the process is busy (see :data:`BUSY_PASS`).
BUSY_CONCURRENCY = 8
#: Deliveries this dispatcher sent that it remembers (for the console's task page).
RECENT = 1000


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


DEFAULT_BACKOFF = push_backoff("5,30,120,600,1800", 86400)

_enc = msgspec.json.Encoder()

#: A round's bodies: (agent, task, seq, snapshot, config's version) -> body and content type.
_Bodies = dict[tuple[str, str, int, bool, str | None], tuple[bytes, str] | None]

#: The freshest snapshot of a task: (agent id, task id) -> task, or None if unknown.
SnapshotReader = Callable[[str, str], Awaitable[Task | None]]


class Dispatcher:
    """Claims and sends the outbox's deliveries (see the module doc).

    A service: ``async with dispatcher`` starts it (:meth:`start`) and stops it on the way
    out (:meth:`close`).
    """

    def __init__(
        self,
        store: Store,
        sender: WebhookSender,
        keys: SigningKeys,
        issuer: Callable[[str], str],
        backoff: Backoff = DEFAULT_BACKOFF,
        *,
        snapshot: SnapshotReader | None = None,
        poll: float = 1.0,
        concurrency: int = 128,
        busy_concurrency: int = BUSY_CONCURRENCY,
        lease: float = LEASE,
    ) -> None:
        self.store = store
        self.sender = sender
        self.keys = keys
        #: agent id -> the agent's card URL (the JWT's ``iss``).
        self.issuer = issuer
        self.backoff = backoff
        #: Reads the freshest snapshot of a task (a live run's, when this process runs it).
        self.snapshot = snapshot or store.get_task
        #: Seconds between claims while nothing wakes the dispatcher (other instances'
        #: deliveries, retries coming due).
        self.poll = poll
        #: Sends in flight at most (the most a round claims).
        self.concurrency = concurrency
        #: Sends in flight at most while the event loop is busy: background work yields
        #: to the requests, yet never stops (at least one send is always allowed).
        self.busy_concurrency = max(1, min(busy_concurrency, concurrency))
        self.lease = lease
        #: Claims failing while the store is down: logged once, every 30 s, once back.
        self._failing = Repeating(log, "push: claiming or settling deliveries")
        #: Deliveries sent successfully by this dispatcher (for tests and metrics).
        self.sent = 0
        #: Attempts that failed (each retry counts), for tests and metrics.
        self.failures = 0
        #: The last :data:`RECENT` deliveries sent by this dispatcher, with the wall-clock
        #: second each was answered (the outbox forgets a delivery once sent).
        self.recent: deque[tuple[Delivery, float]] = deque(maxlen=RECENT)
        self._wake = asyncio.Event()
        #: Whether the last round found the event loop busy (see :meth:`_slots`).
        self._busy = False
        self._loop: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[None]] = set()
        #: Outcomes not written yet: deliveries to remove, deliveries to reschedule.
        self._finished: list[Delivery] = []
        self._updated: list[Delivery] = []

    def start(self) -> None:
        """Start claiming and sending (in the background)."""
        if self._loop is None:
            self._loop = asyncio.ensure_future(self._run())

    async def __aenter__(self) -> Dispatcher:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def wake(self) -> None:
        """Deliveries may be due: claim now rather than at the next poll."""
        self._wake.set()

    def queued(self) -> None:
        """A save queued deliveries (called once per such save): claim soon.  While the
        process is busy and every busy slot is taken, nothing is done: a send in flight
        wakes the loop when it ends, and a wake per save would cost the requests a round
        of the loop each for nothing to claim."""
        if self._busy and len(self._sending) >= self.busy_concurrency:
            return
        self._wake.set()

    async def close(self) -> None:
        """Stop; deliveries in flight are abandoned (their claims lapse and they are sent
        again, by this or another instance); outcomes already known are written."""
        loop, self._loop = self._loop, None
        tasks = [t for t in (loop, *self._sending) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await self._settle()
        await self.sender.close()

    # --- the loop -------------------------------------------------------------------

    async def _run(self) -> None:
        refreshed = counted = time.monotonic()
        while True:
            self._wake.clear()
            if time.monotonic() - refreshed > KEY_REFRESH:
                refreshed = time.monotonic()
                with contextlib.suppress(Exception):
                    await self.keys.refresh()  # other instances' rotations; rotation by age
            if metrics.enabled() and time.monotonic() - counted > BACKLOG_EVERY:
                counted = time.monotonic()
                with contextlib.suppress(Exception):  # an outage is said by the claim below
                    metrics.push_outbox(*await self.store.outbox_size())
            claimed: list[Delivery] = []
            free = await self._slots() - len(self._sending)
            # busy: settle and claim once half the busy slots are free, not once per send
            # that ends (a send still in flight wakes the loop again)
            pause = self._busy and len(self._sending) > self.busy_concurrency // 2
            try:
                if not pause:
                    await self._settle()  # first: a config's next delivery is due once settled
                if free > 0 and not pause:
                    claimed = await self.store.claim_deliveries(free, self.lease)
                    if claimed:
                        self._spawn(claimed, await self.store.delivery_sources(claimed))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # what was claimed comes due again after its lease
                self._failing.failed(exc)
            else:
                self._failing.worked()
                if claimed and len(claimed) >= free:
                    continue  # more may be due
            # not asyncio.wait_for: on Python 3.11 it can swallow a cancellation that
            # arrives as the wake-up does, and close() would wait for this loop forever
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll):
                    await self._wake.wait()

    async def _slots(self) -> int:
        """How many sends may be in flight now: all of :attr:`concurrency` while the event
        loop is idle enough, :attr:`busy_concurrency` while one pass through its ready
        callbacks (what this yield waits for) takes longer than :data:`BUSY_PASS`."""
        start = time.perf_counter()
        await asyncio.sleep(0)
        busy = self._busy = time.perf_counter() - start > BUSY_PASS
        return self.busy_concurrency if busy else self.concurrency

    async def _settle(self) -> None:
        """Write the outcomes gathered since the last round, in one store call."""
        finished, updated = self._finished, self._updated
        if not finished and not updated:
            return
        self._finished, self._updated = [], []
        try:
            await self.store.settle_deliveries(finished, updated)
        except BaseException:
            self._finished[:0], self._updated[:0] = finished, updated  # next round
            raise

    def _spawn(self, claimed: list[Delivery], sources: list[DeliverySource]) -> None:
        bodies: _Bodies = {}  # one serialisation per event and version for the round
        for delivery, source in zip(claimed, sources, strict=True):
            task = asyncio.ensure_future(self._deliver(delivery, source, bodies))
            self._sending.add(task)
            task.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task[None]) -> None:
        sending = self._sending
        sending.discard(task)
        # its outcome is to be written, and a slot is free; while busy, the loop waits
        # until half the busy slots are (see _run)
        if not self._busy or len(sending) <= self.busy_concurrency // 2:
            self._wake.set()

    async def _deliver(self, delivery: Delivery, source: DeliverySource, bodies: _Bodies) -> None:
        try:
            await self._attempt(delivery, source, bodies)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("push: delivery %s failed unexpectedly", delivery.id)

    async def _attempt(self, delivery: Delivery, source: DeliverySource, bodies: _Bodies) -> None:
        d, config = delivery, source.config
        if config is None:  # deleted since: nothing to send
            self._finished.append(d)
            metrics.push_delivery("dropped")
            return
        protocol = config.hub_protocol
        shape = (d.agent_id, d.task_id, d.seq, d.snapshot, protocol)
        if shape in bodies:  # another config of the task, in the same round
            body = bodies[shape]
        else:
            body = bodies[shape] = await self._body(d, protocol, source.event)
        if body is None:
            self._failed(d, Outcome(ok=False, permanent=True, error="event not stored"))
            return
        outcome = await self._send(config, d, *body)
        if outcome.ok:
            self._finished.append(d)
            self.sent += 1
            self.recent.append((d, time.time()))
            metrics.push_delivery("delivered")
        elif outcome.gone:
            metrics.push_delivery("gone")
            log.info("push: %s answered 410 Gone; config %s deleted", config.url, d.config_id)
            await self.store.delete_push_config(d.agent_id, d.task_id, d.config_id)
            self._finished.append(d)
        else:
            self._failed(d, outcome)

    def _failed(self, d: Delivery, outcome: Outcome) -> None:
        self.failures += 1
        now = time.time()
        d.attempts += 1
        d.last_error = outcome.error
        if d.first_failure is None:
            d.first_failure = now
        if outcome.permanent or self.backoff.exhausted(d.attempts, now - d.first_failure):
            d.dead = True
            log.warning("push: delivery %s is dead: %s", d.id, outcome.error)
            metrics.push_delivery("dead")
        else:
            d.due = now + self.backoff.delay(d.attempts, outcome.retry_after)
            metrics.push_delivery("retry")
        self._updated.append(d)

    async def _body(
        self, d: Delivery, protocol: str | None, event: StreamResponse | None
    ) -> tuple[bytes, str] | None:
        """The body of a delivery and its content type (``None``: its event is gone).

        1.0 configs get the event (read with the round's sources) as a ``StreamResponse``;
        configs set through 0.3 or 0.1 get the task as it is now in that version's shape
        (what their SDKs send), and a snapshot delivery the task as it is now."""
        if protocol not in ("0.1", "0.3") and not d.snapshot:
            if event is None:
                return None
            art = event.artifact_update
            if art is None or not art.append:
                return _enc.encode(event), A2A_JSON
        task = await self.snapshot(d.agent_id, d.task_id)
        if task is None:
            return None
        if protocol == "0.1":
            return _enc.encode(v01.encode_task(task)), "application/json"
        if protocol == "0.3":
            return _enc.encode(v03.encode_task(task)), "application/json"
        if d.snapshot or event is None:
            return _enc.encode(StreamResponse(task=task)), A2A_JSON
        art = event.artifact_update
        if art is not None and art.append:  # the last chunk: send the whole artifact
            whole = next(
                (a for a in task.artifacts or [] if a.artifact_id == art.artifact.artifact_id),
                None,
            )
            if whole is not None:
                event = StreamResponse(
                    artifact_update=msgspec.structs.replace(
                        art, artifact=whole, append=False, last_chunk=True
                    )
                )
        return _enc.encode(event), A2A_JSON

    async def _send(
        self, config: TaskPushNotificationConfig, d: Delivery, body: bytes, content_type: str
    ) -> Outcome:
        delivery_id = d.id
        token = self.keys.sign(
            issuer=self.issuer(d.agent_id),
            audience=config.url,
            jti=delivery_id,
            task_id=d.task_id,
            body=body,
        )
        headers = {
            "Content-Type": content_type,
            "X-A2A-Notification-Id": delivery_id,
            "X-A2A-Event-Seq": str(d.seq),
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
        return await self.sender.post(config.url, body, headers)

    # --- dead deliveries ------------------------------------------------------------

    async def dead(self, limit: int = 1000) -> list[Delivery]:
        """The deliveries that gave up."""
        return await self.store.dead_deliveries(limit)

    def sent_of(self, agent_id: str, task_id: str) -> list[tuple[Delivery, float]]:
        """The deliveries of a task this dispatcher sent (among the last :data:`RECENT`),
        each with when it was answered."""
        return [(d, at) for d, at in self.recent if d.task_id == task_id and d.agent_id == agent_id]

    async def requeue(self, ids: list[str] | None = None) -> int:
        """Queue dead deliveries again (these ids, or all); returns how many."""
        count = await self.store.requeue_deliveries(ids)
        if count:
            self.wake()
        return count
