"""Idempotent sends: a caller's message id runs the agent once, whatever the retries.

Before a run starts, :meth:`Claims.claim` records in the store that this message
(the caller's ``messageId``, scoped by agent and owner) belongs to the task the run
creates or continues (:meth:`~a2a_hub.stores.base.MessageClaims.claim_message`,
one atomic write, group-committed like saves).  If that write fails the request
fails with the store's error and the agent never ran.

A request whose claim is already there (a retry, a duplicate, a second instance)
never runs the agent: :meth:`Claims.resolve` waits until what the first request
produced can be seen — the run in this process, the task's events after the claim
in the store, or the agent's direct reply kept with the claim — and the engine
answers with it, following the task while it runs.  A first attempt that left
nothing behind within ``patience`` seconds (its instance died, or it failed before
the agent started) is answered with a clear error, never with a second run.

The claim's key is the ``messageId``, or the request's ``Idempotency-Key`` when it
has one (:func:`claim_key`: the key then replaces the message id).  Each claim keeps
the :func:`send_digest` of the request that made it; a repeat whose digest differs is
another message under a key already used, refused (:func:`key_reused`) before anything
runs or is written.  A claim without a digest (written by an older version) matches.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Mapping

import msgspec

from a2a_hub.engine.cluster import Cluster
from a2a_hub.engine.log import TaskLog, not_found
from a2a_hub.engine.pubsub import PubSub
from a2a_hub.engine.run import TaskRun
from a2a_hub.engine.state import trim_history
from a2a_hub.engine.stream import TaskStream
from a2a_hub.protocol.errors import (
    IdempotencyKeyReusedError,
    StoreUnavailableError,
    UnsupportedOperationError,
)
from a2a_hub.protocol.types import Message, SendMessageRequest, Task
from a2a_hub.stores.base import MessageClaim, Store, StoredTask

__all__ = [
    "DEFAULT_PATIENCE",
    "KEY_PREFIX",
    "Claims",
    "Resolved",
    "claim_key",
    "key_reused",
    "send_digest",
]

#: Seconds a repeat waits for a first attempt that has stored nothing yet (no cluster).
DEFAULT_PATIENCE = 30.0

#: What a repeated message resolves to: the first attempt's run here, its task as stored
#: (with this message's events in it), or the agent's direct reply.
Resolved = TaskRun | StoredTask | Message


#: What an ``Idempotency-Key`` is stored under, before its value (message ids stay as they
#: are): a key and a message id of the same text are two claims.
KEY_PREFIX = "idempotency-key:"

#: Sorted map keys: a request decoded from JSON encodes to the same bytes whatever the
#: order of its objects' keys on the wire (struct fields have one order already).
_canonical = msgspec.json.Encoder(order="deterministic")


def send_digest(request: SendMessageRequest) -> str:
    """What identifies a send, hashed: its message (every field: id, parts, ``taskId``,
    ``contextId``, metadata, extensions, references), the request's metadata and the
    configuration that changes what runs (``acceptedOutputModes``, the inline push config).

    ``returnImmediately`` and ``historyLength`` only shape the answer, which each repeat
    gets in its own shape, and are left out, as is the kind of send (blocking, streaming):
    a retry may wait differently.  The request is hashed as decoded (the canonical 1.0
    types), so a retry through another binding or protocol version has the same digest.
    """
    config = request.configuration
    modes = push = None
    if config is not None:
        modes, push = config.accepted_output_modes, config.task_push_notification_config
    identity = (request.message, request.metadata, modes, push)
    return hashlib.blake2b(_canonical.encode(identity), digest_size=16).hexdigest()


def claim_key(message_id: str, idempotency_key: str | None) -> str:
    """The key a send is claimed under: its ``Idempotency-Key`` if it has one, else its
    ``messageId``."""
    return message_id if idempotency_key is None else KEY_PREFIX + idempotency_key


def _named(key: str, message_id: str) -> str:
    """How an error names the claim key of a send."""
    if key == message_id:
        return f"Message id {message_id}"
    return f"Idempotency-Key {key.removeprefix(KEY_PREFIX)}"


def key_reused(key: str, message_id: str) -> IdempotencyKeyReusedError:
    """The error of a send whose claim key was already used for another message."""
    keyed = key != message_id
    data: dict[str, str] = {"reason": IdempotencyKeyReusedError.reason, "messageId": message_id}
    if keyed:
        data["idempotencyKey"] = key.removeprefix(KEY_PREFIX)
    retry = "a new Idempotency-Key" if keyed else "a new messageId"
    return IdempotencyKeyReusedError(
        f"{_named(key, message_id)} was already used for another message (other parts, "
        "taskId, contextId, metadata or configuration); a retry must repeat the first "
        f"request exactly; send a different message with {retry}",
        data=data,
    )


class Claims:
    """The message claims of one agent's sends (see the module docstring)."""

    def __init__(
        self,
        agent_id: str,
        store: Store,
        runs: Mapping[str, TaskRun],
        log: TaskLog,
        pubsub: PubSub,
        cluster: Cluster | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.store = store
        self.runs = runs
        self.log = log
        self.pubsub = pubsub
        self.instance = cluster.id if cluster is not None else f"local-{uuid.uuid4().hex[:8]}"
        #: How long a repeat waits for a first attempt that stored nothing.
        self.patience = cluster.orphan_timeout if cluster is not None else DEFAULT_PATIENCE

    async def claim(
        self, owner: str | None, key: str, task_id: str, seq: int, digest: str
    ) -> tuple[MessageClaim, MessageClaim | None]:
        """Claim ``key`` (:func:`claim_key`) for ``task_id`` (whose log ends at ``seq``) and
        the request of ``digest``: the claim made, and ``None`` when this request runs it,
        else the claim of the request that does (the caller compares its digest)."""
        claim = MessageClaim(
            task_id=task_id, seq=seq, instance=self.instance, created=time.time(), digest=digest
        )
        found = await self.store.claim_message(self.agent_id, owner, key, claim)
        if found is None:
            return claim, None
        # a write sent again after a lost answer (the client's retry) finds itself
        return claim, None if found == claim else found

    async def record_reply(
        self, owner: str | None, key: str, claim: MessageClaim, reply: Message
    ) -> None:
        """Keep the agent's direct reply with ``claim``, for the repeats still to come."""
        answered = msgspec.structs.replace(claim, reply=reply, created=time.time())
        await self.store.claim_message(self.agent_id, owner, key, answered)

    async def resolve(
        self, owner: str | None, key: str, message_id: str, claim: MessageClaim
    ) -> Resolved:
        """Wait until what the first request of claim ``key`` (the message ``message_id``)
        produced can be seen."""
        deadline = claim.created + self.patience
        while True:
            run = self.runs.get(claim.task_id)
            if run is not None and run.ctx.message.message_id == message_id:
                return run
            if claim.reply is not None:
                return claim.reply
            record = await self.store.get_task_record(self.agent_id, claim.task_id)
            if record is not None and record.seq > claim.seq:
                return record
            if time.time() >= deadline:
                retry = "messageId" if key == message_id else "Idempotency-Key"
                raise UnsupportedOperationError(
                    f"{_named(key, message_id)} was already sent (task {claim.task_id}), but "
                    "its first request stopped before anything of it was stored; send the "
                    f"message again with a new {retry}",
                    data={"messageId": message_id, "taskId": claim.task_id},
                )
            await self.log.wait(claim.task_id, claim.seq, min(0.5, deadline - time.time()))
            if not self.log.shared:
                await asyncio.sleep(0.05)
            # the reply may have come meanwhile: the stored claim has it
            found = await self.store.claim_message(self.agent_id, owner, key, claim)
            if found is not None:
                claim = found

    async def answer(
        self, request: SendMessageRequest, owner: str | None, key: str, claim: MessageClaim
    ) -> Task | Message:
        """``SendMessage`` of a claim key already used: what its first request produced
        (non-blocking: the task as it is now; blocking: once its turn has settled)."""
        resolved = await self.resolve(owner, key, request.message.message_id, claim)
        if isinstance(resolved, Message):
            return resolved
        config = request.configuration
        history_length = config.history_length if config is not None else None
        immediate = config is not None and config.return_immediately
        if isinstance(resolved, TaskRun):
            if immediate:
                if resolved.task is None:
                    await self._first_event(claim)
                if resolved.task is not None:
                    return trim_history(resolved.snapshot(), history_length)
            try:
                result = await asyncio.shield(resolved.settled)
            except StoreUnavailableError:
                # the run's end could not be written: it is, once the store takes it
                # (TaskRun._finish), and the run finishes then; answer with what is stored
                await asyncio.shield(resolved.finished)
                record = await self.store.get_task_record(self.agent_id, claim.task_id)
                if record is None:
                    raise
                return trim_history(record.task, history_length)
            return trim_history(result, history_length) if isinstance(result, Task) else result
        task = resolved.task
        if not immediate and not (task.status.state.terminal or task.status.state.interrupted):
            stream = TaskStream(self.log, self.pubsub, claim.task_id, after=claim.seq)
            try:
                await stream.start()
                async for _ in stream:
                    pass
            finally:
                stream.close()
            run = self.runs.get(claim.task_id)
            if run is not None and run.task is not None:
                task = run.snapshot()
            else:
                record = await self.store.get_task_record(self.agent_id, claim.task_id)
                if record is None:  # removed meanwhile
                    raise not_found(claim.task_id)
                task = record.task
        return trim_history(task, history_length)

    async def stream(
        self, request: SendMessageRequest, owner: str | None, key: str, claim: MessageClaim
    ) -> TaskStream:
        """``SendStreamingMessage`` of a claim key already used: the events of its first
        request's turn (replayed, then live), or its direct reply."""
        resolved = await self.resolve(owner, key, request.message.message_id, claim)
        stream = TaskStream(self.log, self.pubsub, claim.task_id, after=claim.seq)
        if isinstance(resolved, Message):
            return stream.reply(resolved)
        return await stream.start()

    async def _first_event(self, claim: MessageClaim) -> None:
        """Wait for the first event of the turn ``claim`` belongs to (or its direct reply)."""
        stream = TaskStream(self.log, self.pubsub, claim.task_id, after=claim.seq)
        try:
            await stream.start()
            await stream.next()
        except StopAsyncIteration:
            pass
        finally:
            stream.close()
