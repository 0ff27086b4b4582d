"""The task engine of one agent: send, get, list, cancel, follow.

It knows nothing of protocol versions: the transports decode requests into the
canonical 1.0 types, call these methods, and encode what they return.  It checks
each request and its caller, then hands the work to its pieces: the
:class:`Runs` (a :class:`TaskRun` per running task, opened from a message), the
:class:`PubSub` (per-task topics and the agent-wide feed), the :class:`TaskLog`,
the :class:`Flusher` and the steps that end a stored task
(:mod:`a2a_hub.engine.ending`).

Every method takes the ``caller``.  A task records the owner of the caller that
created it; a caller who may not see a task (:meth:`Caller.sees`) gets exactly
the answer for an unknown task, before anything could reveal that it exists.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from a2a_hub.engine.caller import ANONYMOUS, Caller
from a2a_hub.engine.claims import Claims, claim_key
from a2a_hub.engine.cluster import Cluster
from a2a_hub.engine.ending import cancel_stored_task, wait_until_ended
from a2a_hub.engine.executor import AgentExecutor
from a2a_hub.engine.flusher import Flusher
from a2a_hub.engine.gate import Gate, RunningCount
from a2a_hub.engine.generation import stamped
from a2a_hub.engine.log import LogTrimmedError, TaskLog, not_found
from a2a_hub.engine.pubsub import DEFAULT_FEED_BUFFER, Feed, FeedItem, PubSub
from a2a_hub.engine.push import PushConfigs, masked
from a2a_hub.engine.requests import (
    check_follow,
    check_history_length,
    check_idempotency_key,
    task_query,
)
from a2a_hub.engine.run import TaskRun
from a2a_hub.engine.runs import Runs
from a2a_hub.engine.state import trim_history
from a2a_hub.engine.stream import TaskStream
from a2a_hub.engine.turns import TurnDispatch, follow_turn, hand_off, turn_message
from a2a_hub.protocol.errors import (
    InvalidParamsError,
    PermissionDeniedError,
    TaskNotCancelableError,
    UnsupportedOperationError,
)
from a2a_hub.protocol.types import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a_hub.stores.base import MessageClaim, Store, StoredTask
from a2a_hub.stores.coordinator import CANCEL_SIGNAL, PUSH_CONFIG_SIGNAL, Signal

log = logging.getLogger("a2a_hub.engine")

__all__ = ["TaskEngine"]


class TaskEngine:
    """Runs one agent's executor over the tasks kept in ``store``."""

    def __init__(
        self,
        agent_id: str,
        executor: AgentExecutor,
        store: Store,
        *,
        cluster: Cluster | None = None,
        cancel_wait: float = 10.0,
    ) -> None:
        self.agent_id = agent_id
        self.executor = executor
        self.store = store
        #: Leases and signals shared with other instances (None: this process only).
        self.cluster = cluster
        self.cancel_wait = cancel_wait
        #: Every event as it happens: per-task topics and the agent-wide feed.
        self.pubsub = PubSub()
        #: Writes the runs that keep working, as soon as they have new events.
        self.flusher = Flusher()
        self._runs = Runs(agent_id, executor, store, self.pubsub, self.flusher, cluster)
        #: Each task's events after a given seq (the store's: events are shown once written).
        coordinator = None if cluster is None else cluster.coordinator
        self.log = TaskLog(agent_id, store, self._runs, coordinator)
        #: Idempotent sends: each message id (or Idempotency-Key) of a caller runs once.
        self.claims = Claims(agent_id, store, self._runs, self.log, self.pubsub, cluster)
        self._runs.claims = self.claims
        #: The tasks' push notification configs (the hub sets ``push.check_url``).
        self.push = PushConfigs(agent_id, store)
        #: Where the turns run when not here: an API node's worker tier (``None``: here).
        self.dispatch: TurnDispatch | None = None
        #: Rate limits and running-task caps (:mod:`a2a_hub.engine.gate`); ``None``: none.
        self.gate: Gate | None = None
        if cluster is not None:
            cluster.engines[agent_id] = self

    # --- send ---------------------------------------------------------------------------

    async def send(
        self,
        request: SendMessageRequest,
        *,
        new_task_id: str | None = None,
        caller: Caller = ANONYMOUS,
        extensions: frozenset[str] = frozenset(),
        idempotency_key: str | None = None,
    ) -> Task | Message:
        """Handle ``SendMessage``: answer with a Message, or a Task once it settles.

        ``new_task_id`` is the id a new task gets (0.1 clients choose their own);
        if a task with that id exists, the message continues it.  ``extensions`` are
        the activated extensions (the executor's ``ctx.extensions``).  The message is
        claimed under ``idempotency_key`` (the request's ``Idempotency-Key``) if given,
        else under its message id; a key the caller already used is answered with what
        its first request produced, or refused if that request was another message
        (:mod:`a2a_hub.engine.claims`).
        """
        if self.gate is not None:
            await self.gate.admit(caller, "SendMessage")
        return await self._send(
            request, new_task_id, caller, extensions, idempotency_key, generation=False
        )

    async def send_v11(
        self,
        request: SendMessageRequest,
        *,
        caller: Caller = ANONYMOUS,
        extensions: frozenset[str] = frozenset(),
        idempotency_key: str | None = None,
    ) -> Task | Message:
        """A2A 1.1 preview of :meth:`send`: a task is answered with its ``generation`` (the
        seq it was answered at); ``configuration.ifGenerationMatch`` (a
        :class:`~a2a_hub.protocol.types.SendMessageConfigurationV11`) is checked against a
        continued task's generation before its message is claimed (TaskGenerationMismatch).
        A message id (or ``idempotency_key``) already sent is answered with its task as it
        is now."""
        if self.gate is not None:
            await self.gate.admit(caller, "SendMessage")
        return await self._send(request, None, caller, extensions, idempotency_key, generation=True)

    async def _send(
        self,
        request: SendMessageRequest,
        new_task_id: str | None,
        caller: Caller,
        extensions: frozenset[str],
        idempotency_key: str | None,
        *,
        generation: bool,
    ) -> Task | Message:
        """:meth:`send`, and with ``generation`` :meth:`send_v11` (a task answered is
        stamped with the seq it was answered at)."""
        message_id = request.message.message_id
        key = message_id if idempotency_key is None else claim_key(message_id, idempotency_key)
        opened = await self._open(request, new_task_id, caller, extensions, idempotency_key, key)
        config = request.configuration
        history_length = config.history_length if config is not None else None
        if isinstance(opened, MessageClaim):
            answer = await self.claims.answer(request, caller.owner, key, opened)
            if not generation or isinstance(answer, Message):
                return answer
            now = await self.log.snapshot(answer.id)
            assert now.event.task is not None
            return stamped(trim_history(now.event.task, history_length), now.seq)
        run = opened
        if self.dispatch is not None:  # an API node: a worker runs the turn
            seq = await hand_off(run, self.dispatch)
            if config is not None and config.return_immediately:
                task = trim_history(run.snapshot(), history_length)
                return stamped(task, seq) if generation else task
            task = trim_history(
                await follow_turn(self.log, self.pubsub, run.task_id, seq), history_length
            )
            return stamped(task, (await self.log.snapshot(task.id)).seq) if generation else task
        if config is not None and config.return_immediately:
            run.ensure_task()
            try:
                await run.flush()
            finally:
                # Written or not, the task runs: the claim makes a retry of this message
                # find it (and the flusher writes it, with its lease, once it can).
                run.driver = asyncio.ensure_future(self._drive(run))
            task = trim_history(run.snapshot(), history_length)
            return stamped(task, run.seq) if generation else task
        # Blocking: run the executor right here, in the request's own asyncio task (no
        # task to create, no hop through the loop).  A CancelTask cancels this task;
        # drive() absorbs that cancellation and leaves the task canceled.
        run.driver = asyncio.current_task()
        await self._drive(run, answer=True)
        result = run.settled.result()
        if isinstance(result, Task):
            task = result if history_length is None else trim_history(result, history_length)
            return stamped(task, run.settled_seq) if generation else task
        return result

    async def begin(
        self,
        request: SendMessageRequest,
        *,
        new_task_id: str | None = None,
        caller: Caller = ANONYMOUS,
        extensions: frozenset[str] = frozenset(),
        idempotency_key: str | None = None,
    ) -> TaskRun:
        """Validate a send and prepare its run (not started): shared by send and stream.

        A claim key the caller already used is refused here (it has no run to start)."""
        key = claim_key(request.message.message_id, idempotency_key)
        opened = await self._open(
            request, new_task_id, caller, extensions, idempotency_key, key, register=False
        )
        if isinstance(opened, MessageClaim):
            what = "Message" if idempotency_key is None else "The message of this Idempotency-Key"
            raise UnsupportedOperationError(
                f"{what} {request.message.message_id} was already sent "
                f"(task {opened.task_id}); follow that task",
                data={"messageId": request.message.message_id, "taskId": opened.task_id},
            )
        return opened

    async def send_stream(
        self,
        request: SendMessageRequest,
        *,
        new_task_id: str | None = None,
        caller: Caller = ANONYMOUS,
        extensions: frozenset[str] = frozenset(),
        idempotency_key: str | None = None,
    ) -> TaskStream:
        """``SendStreamingMessage``: the events of the turn this message starts, live (for
        a claim key already used, ``idempotency_key`` or the message id: those of its first
        request's turn; refused if that request was another message)."""
        if self.gate is not None:
            await self.gate.admit(caller, "SendStreamingMessage")
        key = claim_key(request.message.message_id, idempotency_key)
        opened = await self._open(request, new_task_id, caller, extensions, idempotency_key, key)
        if isinstance(opened, MessageClaim):
            return await self.claims.stream(request, caller.owner, key, opened)
        run = opened
        run.ctx.streaming = True
        fresh = run.task is None  # else a continued task: from its snapshot, new message included
        if self.dispatch is not None:  # an API node: a worker runs the turn, followed here
            await hand_off(run, self.dispatch)
            stream = TaskStream(self.log, self.pubsub, run.task_id, after=0 if fresh else None)
            return await stream.start()
        if not fresh:
            await run.flush()  # streams show only what is written: the new message first
        stream = TaskStream(self.log, self.pubsub, run.task_id, after=0 if fresh else None)
        await stream.start(fresh=fresh)
        run.driver = asyncio.ensure_future(self._drive(run))
        return stream

    async def _open(
        self,
        request: SendMessageRequest,
        new_task_id: str | None,
        caller: Caller,
        extensions: frozenset[str],
        idempotency_key: str | None,
        key: str,
        *,
        register: bool = True,
    ) -> TaskRun | MessageClaim:
        """Open the run of a send (its message claimed under ``key``, the message id or
        its checked ``idempotency_key``) with its push configs loaded and, with
        ``register``, the request's inline push config registered; or the claim of the
        first request of a key already used.

        A run that fails to be prepared is dropped when it has no task yet (nothing was
        written, the agent never ran); a task that exists runs anyway, so that the claim
        leads a retry to it (and it never stays submitted)."""
        if caller is not ANONYMOUS:  # anonymous callers (an open hub) may invoke
            _check_invoke(caller)
        if idempotency_key is not None:
            check_idempotency_key(idempotency_key)
        config = request.configuration
        inline = config.task_push_notification_config if config is not None else None
        if register and inline is not None:
            await self.push.check(inline)  # bad input fails before the message is claimed
        cap = None if self.gate is None else self.gate.max_running(caller)
        if cap is None:
            opened = await self._runs.open(
                request, new_task_id=new_task_id, caller=caller, extensions=extensions, key=key
            )
        else:
            opened = await self._open_capped(request, new_task_id, caller, extensions, key, cap)
        if isinstance(opened, MessageClaim):
            return opened
        try:
            # a new task has no push config yet: nothing to load
            run = opened if opened.task is None else await self.push.load(opened)
            if register and inline is not None:
                await self.push.register_inline(run, inline)
        except BaseException:
            if opened.task is not None and self.dispatch is not None:
                opened.driver = asyncio.ensure_future(_handed(opened, self.dispatch))
            elif opened.task is not None:
                opened.driver = asyncio.ensure_future(self._drive(opened))
            elif self._runs.get(opened.task_id) is opened:
                del self._runs[opened.task_id]
            raise
        return run

    async def _open_capped(
        self,
        request: SendMessageRequest,
        new_task_id: str | None,
        caller: Caller,
        extensions: frozenset[str],
        key: str,
        cap: int,
    ) -> TaskRun | MessageClaim:
        """:meth:`Runs.open` under the caller's ``max_running`` cap: a reservation taken
        before the message is claimed (refused past the cap: nothing claimed), kept by the
        run it opens, released when that run leaves the table."""
        counter = self._runs.running
        if counter is None:
            counter = self._runs.running = RunningCount()
        owner = caller.owner
        counter.reserve(owner, cap, self.agent_id)
        try:
            opened = await self._runs.open(
                request, new_task_id=new_task_id, caller=caller, extensions=extensions, key=key
            )
        except BaseException:
            counter.cancel(owner)
            raise
        if isinstance(opened, MessageClaim):
            counter.cancel(owner)
        else:
            counter.keep(owner, opened.task_id)
        return opened

    async def _drive(self, run: TaskRun, *, answer: bool = False) -> None:
        """Drive ``run``; a direct reply of the agent is kept with the message's claim
        (before the request is answered, with ``answer``)."""
        claimed = self._runs.claimed(run.task_id)
        await run.drive()
        if claimed is None or not run.settled.done() or run.settled.exception() is not None:
            return
        reply = run.settled.result()
        if isinstance(reply, Message):
            (owner, key), claim = claimed
            try:
                await self.claims.record_reply(owner, key, claim, reply)
            except Exception as exc:
                if answer:
                    raise
                log.warning("could not keep the reply to message %s: %s", key, exc)

    async def subscribe(
        self, task_id: str, after: int | None = None, *, caller: Caller = ANONYMOUS
    ) -> TaskStream:
        """``SubscribeToTask``: a snapshot then live events, or with ``after`` a replay first.

        Without ``after`` a terminal task is refused (UnsupportedOperation); with it, the
        missed tail of any task is delivered, or, when the store no longer holds all of it
        (trimmed, evicted), the gap error :class:`~a2a_hub.engine.log.LogTrimmedError`
        naming the oldest event still held: never part of it.  The stream stays open
        through interrupted states (input-required, auth-required: the task is continued
        by a later message) and ends at a terminal state (A2A 1.0 §3.1.6).
        """
        if self.gate is not None:
            await self.gate.admit(caller, "SubscribeToTask")
        run = self._runs.get(task_id)
        stream = TaskStream(self.log, self.pubsub, task_id, after=after)
        stream.until_terminal = True
        try:
            if run is not None and run.task is not None:
                _check_sees(caller, run.owner, task_id)
                last, state, written = run.seq, run.task.status.state, run.written_seq
            else:
                task, last, _ = await self._record(task_id, caller)
                state, written = task.status.state, last
                stream.finite = state.terminal
            check_follow(task_id, state, last, after)
        except BaseException:
            stream.close()
            raise
        return await stream.start(written=written)

    def feed(
        self,
        buffer: int = DEFAULT_FEED_BUFFER,
        *,
        caller: Caller = ANONYMOUS,
        keep: Callable[[FeedItem], bool] | None = None,
    ) -> Feed:
        """Every event of every task of this agent that ``caller`` may see, from now on, or
        those of them ``keep`` accepts (see :class:`~a2a_hub.engine.pubsub.Feed`; close it
        when done)."""
        return self.pubsub.feed(buffer, viewer=caller, keep=keep)

    def live(self, task_id: str) -> TaskRun | None:
        """The running execution of a task in this process, if any."""
        return self._runs.get(task_id)

    @property
    def runs(self) -> Mapping[str, TaskRun]:
        """The tasks whose executor runs in this process: task id -> run (do not change)."""
        return self._runs

    async def _record(self, task_id: str, caller: Caller) -> StoredTask:
        """The stored task, or not-found when there is none or ``caller`` may not see it."""
        record = await self.store.get_task_record(self.agent_id, task_id)
        if record is None or not caller.sees(record.owner):
            raise not_found(task_id)
        return record

    # --- get / list / cancel ------------------------------------------------------------

    async def get_task(
        self, task_id: str, history_length: int | None = None, *, caller: Caller = ANONYMOUS
    ) -> Task:
        """``GetTask``: the newest snapshot, history trimmed to ``history_length``."""
        if self.gate is not None:
            await self.gate.admit(caller, "GetTask")
        check_history_length(history_length)
        run = self._runs.get(task_id)
        written = None if run is None else run.stored()  # what is shown is in the store
        if run is not None and written is not None:
            _check_sees(caller, run.owner, task_id)
            return trim_history(written, history_length)
        task = (await self._record(task_id, caller)).task
        return trim_history(task, history_length)

    async def get_task_v11(
        self,
        task_id: str,
        history_length: int | None = None,
        *,
        caller: Caller = ANONYMOUS,
        current_generation: int | None = None,
        wait: float = 30.0,
    ) -> Task:
        """A2A 1.1 preview of :meth:`get_task`: the task with its ``generation``.

        With ``current_generation``, a long poll: answered at once when the task's generation
        is already past it (or the task is terminal: it never moves again), else when it
        moves past it, or after ``wait`` seconds with the task as it is.  It waits on the
        task's topic (and, for a task running on another instance, on the coordinator's
        event wake-ups), as a subscription does."""
        if self.gate is not None:
            await self.gate.admit(caller, "GetTask")
        check_history_length(history_length)
        if current_generation is not None and current_generation < 0:
            raise InvalidParamsError("currentGeneration must be 0 or more")
        await self._visible_now(task_id, caller)
        now = await self.log.snapshot(task_id)
        task = now.event.task
        assert task is not None
        if current_generation is None or now.seq > current_generation or _ended(task):
            return stamped(trim_history(task, history_length), now.seq)
        stream = TaskStream(self.log, self.pubsub, task_id, after=now.seq)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        try:
            await stream.start()  # what was written since the snapshot, then live events
            while (left := deadline - loop.time()) > 0:
                event = await stream.next(left)
                if event is None or event.seq > current_generation:
                    break
        except (StopAsyncIteration, LogTrimmedError):
            pass  # the task moved on (or its log was trimmed): answer what it is now
        finally:
            stream.close()
        now = await self.log.snapshot(task_id)
        assert now.event.task is not None
        return stamped(trim_history(now.event.task, history_length), now.seq)

    async def _visible_now(self, task_id: str, caller: Caller) -> None:
        """Refuse (not found) a task that does not exist or ``caller`` may not see."""
        run = self._runs.get(task_id)
        if run is not None and run.stored() is not None:
            _check_sees(caller, run.owner, task_id)
        else:
            await self._record(task_id, caller)

    async def list_tasks(
        self, request: ListTasksRequest, *, caller: Caller = ANONYMOUS
    ) -> ListTasksResponse:
        """``ListTasks``: newest first, filtered, paged; only the caller's own tasks unless
        it sees every task."""
        if self.gate is not None:
            await self.gate.admit(caller, "ListTasks")
        query = task_query(request, None if caller.sees_all else caller.owner)
        page = await self.store.list_tasks(self.agent_id, query)
        include = bool(request.include_artifacts)
        tasks = []
        for task in page.tasks:
            run = self._runs.get(task.id)
            written = None if run is None else run.stored()
            if written is not None:
                task = written
            tasks.append(trim_history(task, request.history_length, include_artifacts=include))
        return ListTasksResponse(
            tasks=tasks,
            next_page_token=page.next_page_token,
            page_size=query.page_size,
            total_size=page.total_size,
        )

    async def cancel_task(self, task_id: str, *, caller: Caller = ANONYMOUS) -> Task:
        """``CancelTask``: stop the executor if it runs, and end the task ``canceled``."""
        if self.gate is not None:
            await self.gate.admit(caller, "CancelTask")
        _check_invoke(caller)
        if self.dispatch is not None:
            return await self._cancel_elsewhere(task_id, caller, self.dispatch)
        run = self._runs.get(task_id)
        if run is not None and run.task is not None and not run.task.status.state.terminal:
            _check_sees(caller, run.owner, task_id)
            return await run.cancel()
        record = await self._record(task_id, caller)
        task = await cancel_stored_task(
            self.store,
            self.agent_id,
            record,
            self.pubsub,
            instance=self.cluster,
            wait=self.cancel_wait,
        )
        if record.task.status.state.interrupted:
            # no execute runs to be told: the executor hears of it through its hook
            try:
                await self.executor.cancel_waiting(record.task)
            except Exception:
                log.exception("cancel_waiting of agent %s, task %s", self.agent_id, task_id)
        return task

    async def _cancel_elsewhere(self, task_id: str, caller: Caller, dispatch: TurnDispatch) -> Task:
        """``CancelTask`` on an API node: the worker tier cancels the task wherever it is
        (running, queued or waiting for input); the task as it ended."""
        record = await self._record(task_id, caller)
        state = record.task.status.state
        if state.terminal:
            raise TaskNotCancelableError(
                f"Task {task_id} is already {state.label} and cannot be canceled",
                data={"taskId": task_id, "state": state.value},
            )
        cluster = self.cluster
        if cluster is not None and state is TaskState.WORKING:
            # the fast path: the worker running it hears of it at once (its cluster listens);
            # Temporal's cancel reaches it too, with its next heartbeat, and a queued or
            # waiting task that no worker runs
            await cluster.coordinator.publish(
                Signal(CANCEL_SIGNAL, self.agent_id, task_id, cluster.id)
            )
        if not await dispatch.cancel(self.agent_id, task_id):  # nobody holds it: end it here
            return await cancel_stored_task(self.store, self.agent_id, record, self.pubsub)
        coordinator = self.log.coordinator
        assert coordinator is not None  # a worker tier needs a shared store
        return await wait_until_ended(
            self.store, coordinator, self.agent_id, task_id, record.seq, self.cancel_wait
        )

    # --- turns handed over by an API node (a worker's side) -----------------------------

    async def open_turn(self, task_id: str, seq: int, *, note: str | None = None) -> TaskRun | None:
        """A worker's run of the turn an API node stored up to event ``seq`` (not started),
        or ``None`` when that turn is over already (a duplicate, or run again after it
        ended).  ``note`` (a turn run again after its worker was lost) is written first as
        a ``working`` status: after it, the lost attempt can write nothing more."""
        record = await self.store.get_task_record(self.agent_id, task_id)
        if record is None:
            return None
        state = record.task.status.state
        if state.terminal or (state.interrupted and record.seq > seq):
            return None
        message = await turn_message(self.store, self.agent_id, record, seq)
        run = await self.push.load(self._runs.adopt(record, message))
        if note is not None:
            try:
                await run.set_status(TaskState.WORKING, note)
                await run.flush()
            except BaseException:
                await run.leave()
                raise
        return run

    async def drive_turn(self, run: TaskRun) -> None:
        """Run a turn opened by :meth:`open_turn` to its end."""
        await self._drive(run)

    # --- push notification configs --------------------------------------------------

    async def _visible(self, task_id: str, caller: Caller) -> None:
        """Refuse (not found) a task that does not exist or ``caller`` may not see; a
        running task is written first, so that the store knows it."""
        run = self._runs.get(task_id)
        if run is not None and run.task is not None:
            _check_sees(caller, run.owner, task_id)
            if run.dirty:
                await run.flush()
            return
        await self._record(task_id, caller)

    async def set_push_config(
        self, config: TaskPushNotificationConfig, *, caller: Caller = ANONYMOUS
    ) -> TaskPushNotificationConfig:
        """``CreateTaskPushNotificationConfig`` for ``config.task_id`` (an id is given if it
        has none); returns the stored config, masked."""
        if self.gate is not None:
            await self.gate.admit(caller, "CreateTaskPushNotificationConfig")
        _check_invoke(caller)
        task_id = config.task_id or ""
        await self.push.check(config)
        await self._visible(task_id, caller)
        stored = await self.push.set(task_id, config)
        run = self._runs.get(task_id)
        await self.push.registered(run, task_id, stored)
        cluster = self.cluster
        if run is None and cluster is not None and cluster.coordinator.shared:
            # it may run on another instance: that one registers the config now, not next turn
            await cluster.coordinator.publish(
                Signal(PUSH_CONFIG_SIGNAL, self.agent_id, task_id, cluster.id)
            )
        return masked(stored)

    async def push_configs_changed(self, task_id: str) -> None:
        """Another instance stored a push config of a task that runs here: register the new
        configs with the run (each gets the task's snapshot first)."""
        run = self._runs.get(task_id)
        if run is None:
            return
        for config in await self.store.list_push_configs(self.agent_id, task_id):
            if (config.id or task_id) not in run.push_configs:
                await self.push.registered(run, task_id, config)

    async def get_push_config(
        self, task_id: str, config_id: str, *, caller: Caller = ANONYMOUS
    ) -> TaskPushNotificationConfig:
        """``GetTaskPushNotificationConfig``, masked; unknown ids answer not found."""
        if self.gate is not None:
            await self.gate.admit(caller, "GetTaskPushNotificationConfig")
        await self._visible(task_id, caller)
        config = await self.store.get_push_config(self.agent_id, task_id, config_id)
        if config is None:
            raise not_found(task_id, f"it has no push notification config {config_id!r}")
        return masked(config)

    async def list_push_configs(
        self, task_id: str, *, caller: Caller = ANONYMOUS
    ) -> list[TaskPushNotificationConfig]:
        """``ListTaskPushNotificationConfigs``, in creation order, masked."""
        if self.gate is not None:
            await self.gate.admit(caller, "ListTaskPushNotificationConfigs")
        await self._visible(task_id, caller)
        return [masked(c) for c in await self.store.list_push_configs(self.agent_id, task_id)]

    async def delete_push_config(
        self, task_id: str, config_id: str, *, caller: Caller = ANONYMOUS
    ) -> None:
        """``DeleteTaskPushNotificationConfig``; deleting an unknown config is not found."""
        if self.gate is not None:
            await self.gate.admit(caller, "DeleteTaskPushNotificationConfig")
        _check_invoke(caller)
        await self._visible(task_id, caller)
        if not await self.store.delete_push_config(self.agent_id, task_id, config_id):
            raise not_found(task_id, f"it has no push notification config {config_id!r}")
        run = self._runs.get(task_id)
        if run is not None:
            run.push_configs = tuple(c for c in run.push_configs if c != config_id)

    async def close(self) -> None:
        """Stop every running executor; their tasks end ``failed`` (server shutting down).

        Feeds deliver what they hold, then end."""
        await self.flusher.close()
        await self._runs.stop()
        self.pubsub.close()


async def _handed(run: TaskRun, dispatch: TurnDispatch) -> None:
    await hand_off(run, dispatch)


def _check_invoke(caller: Caller) -> None:
    if not caller.may_invoke:
        raise PermissionDeniedError(
            "This API key may read tasks but not call the agent: it needs the invoke scope",
            data={"scopes": sorted(caller.scopes)},
        )


def _ended(task: Task) -> bool:
    return task.status.state.terminal


def _check_sees(caller: Caller, owner: str | None, task_id: str) -> None:
    if not caller.sees(owner):
        raise not_found(task_id)
