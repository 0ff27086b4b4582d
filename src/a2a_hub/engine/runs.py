"""The running tasks of one agent in this process, and how a message becomes one.

:class:`Runs` maps a task id to its :class:`TaskRun` while an executor works on
it.  :meth:`Runs.open` turns an incoming message into a run, not yet started: a
new task (created by the caller, who becomes its owner) or the next turn of an
interrupted one.  A message naming a task the caller may not see is answered
exactly as for an unknown task.  Before a run is handed out, its message is claimed
(:class:`~a2a_hub.engine.claims.Claims`): a claim key (message id or Idempotency-Key)
the caller already used gives the claim of its first request instead of a run, or,
when that request was another message, the refusal.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable

import msgspec

from a2a_hub import metrics
from a2a_hub.engine.caller import Caller
from a2a_hub.engine.claims import Claims, key_reused, send_digest
from a2a_hub.engine.cluster import Cluster
from a2a_hub.engine.executor import AgentExecutor, RequestContext
from a2a_hub.engine.flusher import Flusher
from a2a_hub.engine.gate import RunningCount
from a2a_hub.engine.generation import check_generation
from a2a_hub.engine.log import CONTINUE_HINT, not_found
from a2a_hub.engine.pubsub import PubSub
from a2a_hub.engine.requests import (
    MAX_PAGE_SIZE,
    check_continuation,
    check_history_length,
    check_message,
)
from a2a_hub.engine.run import TaskRun
from a2a_hub.engine.state import new_id
from a2a_hub.engine.turns import before_message
from a2a_hub.protocol.errors import A2AError, UnsupportedOperationError
from a2a_hub.protocol.types import (
    Message,
    SendMessageConfigurationV11,
    SendMessageRequest,
    StreamResponse,
    Task,
)
from a2a_hub.stores.base import MessageClaim, Store, StoredTask, TaskQuery

__all__ = ["Runs"]


class Runs(dict[str, TaskRun]):
    """Task id -> its run (a run removes itself when it finishes); see the module docstring.

    It holds the pieces every run works with and hands them to each run it opens.
    """

    def __init__(
        self,
        agent_id: str,
        executor: AgentExecutor,
        store: Store,
        pubsub: PubSub,
        flusher: Flusher,
        cluster: Cluster | None = None,
    ) -> None:
        super().__init__()
        self.agent_id = agent_id
        self.executor = executor
        self.store = store
        self.pubsub = pubsub
        self.flusher = flusher
        self.cluster = cluster
        #: When each run began (for the task metrics), by task id.
        self._began: dict[str, float] = {}
        #: The message claims (set by the engine, which builds them over this table).
        self.claims: Claims | None = None
        #: Task id -> the (owner, claim key) and claim of the message its run serves.
        self._claimed: dict[str, tuple[tuple[str | None, str], MessageClaim]] = {}
        #: Running tasks per owner, kept only once a ``max_running`` cap applies.
        self.running: RunningCount | None = None
        self._metrics = metrics.RunMetrics(agent_id)

    async def open(
        self,
        request: SendMessageRequest,
        *,
        new_task_id: str | None,
        caller: Caller,
        extensions: frozenset[str] = frozenset(),
        key: str | None = None,
    ) -> TaskRun | MessageClaim:
        """Validate a send, claim its message and prepare its run (not started).

        ``new_task_id`` is the id a new task gets (0.1 clients choose their own);
        if a task with that id exists, the message continues it.  ``extensions`` are
        the extensions the request activates (the executor's ``ctx.extensions``).
        ``key`` is the claim key (:func:`~a2a_hub.engine.claims.claim_key`; default: the
        message id).  A key the caller already used on this agent returns the claim of
        its first request (nothing runs), or raises ``IdempotencyKeyReusedError`` when
        that request was another message; a failing claim raises the store's error.
        """
        message = request.message
        check_message(message)
        config = request.configuration
        if config is not None:
            check_history_length(config.history_length, "configuration.historyLength")
        key = key or message.message_id
        digest = send_digest(request)
        owner = caller.owner
        task_id = message.task_id or new_task_id
        if task_id is not None:
            held = self._claimed.get(task_id)
            if held is not None and held[0] == (owner, key):
                if held[1].digest != digest:
                    raise key_reused(key, message.message_id)
                return held[1]  # a repeat of the message this task's run serves
            if task_id in self:
                self.refuse_if_running(task_id, caller)
            record = await self.store.get_task_record(self.agent_id, task_id)
            if record is not None and caller.sees(record.owner):
                try:  # a refused message claims nothing, unless it is a repeat
                    if isinstance(config, SendMessageConfigurationV11):  # 1.1 preview
                        check_generation(task_id, config.if_generation_match, record.seq)
                    check_continuation(record.task, message)
                except A2AError:
                    history = record.task.history or []
                    if all(m.message_id != message.message_id for m in history):
                        raise
                claimed = await self._claim(owner, key, message, task_id, record.seq, digest)
                if claimed is not None:
                    return claimed
                return self._continue(record, message, request, caller, extensions)
            if record is not None or message.task_id is not None:
                raise not_found(task_id, CONTINUE_HINT)
        task_id = task_id or new_id()
        context_id = message.context_id or new_id()
        if message.task_id != task_id or message.context_id != context_id:
            message = msgspec.structs.replace(message, task_id=task_id, context_id=context_id)
        # positional: a dataclass called with keywords builds a dict for its __init__
        ctx = RequestContext(
            self.agent_id,
            message,
            task_id,
            context_id,
            None,  # task
            config,
            request.metadata,
            False,  # streaming
            extensions,
            {},  # extras
            functools.partial(self._load_context, context_id, task_id, owner),
            owner,
        )
        if task_id in self:
            self.refuse_if_running(task_id, caller)
        claimed = await self._claim(owner, key, message, task_id, 0, digest)
        if claimed is not None:
            return claimed
        if task_id in self:  # opened meanwhile, by another request
            try:
                self.refuse_if_running(task_id, caller)
            except BaseException:
                self._claimed.pop(task_id, None)
                raise
        return self._add(ctx, owner, None, 0, new_task_id is not None)

    def claimed(self, task_id: str) -> tuple[tuple[str | None, str], MessageClaim] | None:
        """The (owner, claim key) its run's message was claimed under, and the claim, if
        it was."""
        return self._claimed.get(task_id)

    async def _claim(
        self, owner: str | None, key: str, message: Message, task_id: str, seq: int, digest: str
    ) -> MessageClaim | None:
        """Claim ``key`` for ``task_id`` (see :meth:`open`)."""
        if self.claims is None:
            return None
        claim, found = await self.claims.claim(owner, key, task_id, seq, digest)
        if found is None:
            self._claimed[task_id] = ((owner, key), claim)
        elif found.digest and found.digest != digest:
            raise key_reused(key, message.message_id)
        return found

    def _continue(
        self,
        record: StoredTask,
        message: Message,
        request: SendMessageRequest,
        caller: Caller,
        extensions: frozenset[str],
    ) -> TaskRun:
        task, seq, owner = record
        check_continuation(task, message)
        message = msgspec.structs.replace(message, task_id=task.id, context_id=task.context_id)
        ctx = RequestContext(
            agent_id=self.agent_id,
            message=message,
            task_id=task.id,
            context_id=task.context_id,
            task=task,
            configuration=request.configuration,
            metadata=request.metadata,
            extensions=extensions,
            context_loader=self._context_loader(task.context_id, task.id, owner),
            owner=owner,
        )
        self.refuse_if_running(task.id, caller)
        live = msgspec.structs.replace(
            task,
            history=list(task.history or []),
            artifacts=None if task.artifacts is None else list(task.artifacts),
        )
        run = self._add(ctx, owner, live, seq)
        run.emit(StreamResponse(message=message))
        return run

    def adopt(self, record: StoredTask, message: Message) -> TaskRun:
        """The run of a turn an API node handed over (a worker's): the stored task, with
        ``message`` written already; no claim (the API node made it) and no lease
        (the worker tier watches its workers)."""
        task, seq, owner = record
        if task.id in self:
            raise UnsupportedOperationError(f"Task {task.id} is running here already")
        ctx = RequestContext(
            agent_id=self.agent_id,
            message=message,
            task_id=task.id,
            context_id=task.context_id,
            task=before_message(task, message),
            context_loader=self._context_loader(task.context_id, task.id, owner),
            owner=owner,
        )
        live = msgspec.structs.replace(
            task,
            history=list(task.history or []),
            artifacts=None if task.artifacts is None else list(task.artifacts),
        )
        return self._add(ctx, owner, live, seq, leased=False)

    def _add(
        self,
        ctx: RequestContext,
        owner: str | None,
        task: Task | None = None,
        seq: int = 0,
        bound: bool = False,
        *,
        leased: bool = True,
    ) -> TaskRun:
        run = TaskRun(
            ctx,
            self.executor,
            self.store,
            self.pubsub,
            self.flusher,
            self,
            self.cluster if leased else None,
            owner,
            task,
            seq,
            bound,
        )
        task_id = ctx.task_id
        self[task_id] = run
        notes = metrics.request_notes.get()
        if notes is not None:
            notes.setdefault("task_id", task_id)
        began = self._metrics.began()
        if began is not None:
            self._began[task_id] = began
        return run

    def __delitem__(self, task_id: str) -> None:
        run = self[task_id]
        dict.__delitem__(self, task_id)  # (no super object made per call)
        self._claimed.pop(task_id, None)
        if self.running is not None:
            self.running.ended(task_id)
        began = self._began.pop(task_id, None)
        if began is not None:
            self._metrics.ended(began, run.task)

    def _context_loader(
        self, context_id: str, task_id: str, owner: str | None
    ) -> Callable[[], Awaitable[list[Task]]]:
        """Loads the earlier tasks of the conversation, those the task's owner may see."""
        return functools.partial(self._load_context, context_id, task_id, owner)

    async def _load_context(self, context_id: str, task_id: str, owner: str | None) -> list[Task]:
        query = TaskQuery(context_id=context_id, owner=owner, page_size=MAX_PAGE_SIZE)
        page = await self.store.list_tasks(self.agent_id, query)
        return [t for t in reversed(page.tasks) if t.id != task_id]

    def refuse_if_running(self, task_id: str, caller: Caller) -> None:
        """Refuse a message for a task whose executor works on it right now."""
        run = self.get(task_id)
        if run is not None:
            if not caller.sees(run.owner):
                raise not_found(task_id, CONTINUE_HINT)
            raise UnsupportedOperationError(
                f"Task {task_id} is still working; send the next message once it asks for input",
                data={"taskId": task_id},
            )

    async def stop(self, wait: float = 5.0) -> None:
        """Stop every running executor (their tasks end ``failed``) and wait up to ``wait``
        seconds for each run to finish."""
        runs = list(self.values())
        for run in runs:
            if run.executing:
                run.stop()
        for run in runs:
            await asyncio.wait([run.finished], timeout=wait)
        # runs still writing their end after an outage give up: their leases lapse and
        # another instance fails their tasks as orphaned
        tails = [run.tail for run in runs if run.tail is not None and not run.tail.done()]
        for tail in tails:
            tail.cancel()
        if tails:
            await asyncio.wait(tails, timeout=wait)
