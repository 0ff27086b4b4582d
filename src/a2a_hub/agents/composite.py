"""Composite kinds: agents made of other agents — ``sequential``, ``parallel`` and ``loop``.

Declared in hub.toml with their children, each the id of another agent of the same hub
or the URL of any A2A agent (or a table: ``{ agent = "id" }`` / ``{ url = "…", name = "…",
api_key = "…", headers = {…}, transport = "…" }``)::

    [[agents]]
    id = "pipeline"
    kind = "sequential"
    options = { children = ["researcher", "https://host/a2a/writer"] }

Hosted children are reached in process, through their own engine (each runs a real task
of that agent, visible at its ``/a2a/{id}``); remote ones through our A2A client (see
:mod:`a2a_hub.agents.peer`).  While a composite runs, a ``working`` status says which
child is working (message metadata ``child``, ``step``, ``iteration``) and the children's
own progress messages pass through (metadata ``child``).  Every child's result becomes an
artifact named after the child.  Cancelling the composite cancels every running child, and
the child a paused chain waits on.

* ``sequential`` — each child gets the previous child's output (the first gets the
  client's message).  A child that asks for input pauses the chain: the composite asks the
  client the child's question (``input-required``), and the client's answer goes to that
  child and the chain resumes where it stopped.  A failing child fails the composite.
* ``parallel`` — the children get the client's message at once.  ``on_failure = "fail"``
  (default): the first child that fails cancels the others and fails the whole;
  ``"report"``: every child runs to its end, failures are reported in their artifacts and
  the composite completes.  A child that asks for input is not a failure: once the others
  are done the composite asks the client that child's question (``input-required``,
  ``<child> asks: …``, metadata ``child``); the answer goes to that child's task, and when
  no child waits any more the composite completes (several waiting children are asked
  one after the other, in the order of the children).
* ``loop`` — runs its children in order, again and again, each getting the previous
  output, until a child's output carries the data part ``{"done": true}`` (an ``llm``
  child with ``exit_tool = true`` does so when its model calls ``exit``) or
  ``max_iterations`` (default 3) iterations have run.  Interruptions pause it like
  ``sequential``.

With ``share_state`` (default true) each child's message also carries a data part
``{"state": {"input": <the client's text>, "outputs": {<child>: <its output text>}}}``.
Each child keeps one conversation (context) per conversation with the composite; its ids,
and where a paused chain stopped, travel in the metadata of the composite's messages
(``a2a-hub/composite``).  ``timeout`` bounds each child's turn (seconds, default 300).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import msgspec

from a2a_hub.agents._memo import recall, stamp
from a2a_hub.agents._options import unknown_options
from a2a_hub.agents.hops import with_hop
from a2a_hub.agents.links import HubLinks
from a2a_hub.agents.peer import LocalPeer, Outcome, Peer, PeerError, RemotePeer, run_turn
from a2a_hub.agents.remote import flag
from a2a_hub.client import user_message
from a2a_hub.engine.caller import ANONYMOUS, Caller
from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater, text_of
from a2a_hub.protocol.types import Message, Part, StreamResponse, Task, TaskState

__all__ = [
    "MEMO",
    "ChildSpec",
    "CompositeExecutor",
    "LoopExecutor",
    "ParallelExecutor",
    "SequentialExecutor",
    "parse_children",
]

#: Metadata key of the composite's memory on its messages.
MEMO = "a2a-hub/composite"


@dataclass(frozen=True)
class ChildSpec:
    """One child: a hosted agent (``agent``) or a remote one (``url`` and its options)."""

    name: str
    agent: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    api_key: str | None = None
    bearer: str | None = None
    transport: str | None = None


def parse_children(value: Any) -> list[ChildSpec]:
    """Children from a list (or a comma-separated string) of ids, URLs or tables."""
    items = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ValueError("children must list at least one agent id or A2A URL")
    children: list[ChildSpec] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            item = {"url": item} if item.startswith(("http://", "https://")) else {"agent": item}
        if not isinstance(item, dict):
            raise ValueError(f"children[{i}] must be an agent id, a URL or a table")
        unknown = set(item) - {"agent", "url", "name", "headers", "api_key", "bearer", "transport"}
        if unknown:
            raise ValueError(f"children[{i}] has unknown key(s) {', '.join(sorted(unknown))}")
        agent, url = item.get("agent"), item.get("url")
        if (agent is None) == (url is None):
            raise ValueError(f"children[{i}] needs exactly one of agent = 'id' or url = '…'")
        if url is not None and not str(url).startswith(("http://", "https://")):
            raise ValueError(f"children[{i}].url must be http(s)://…, not {url!r}")
        name = item.get("name") or agent or str(url).rstrip("/").rsplit("/", 1)[-1]
        taken = {c.name for c in children}
        base, n = str(name), 2
        while name in taken:
            name, n = f"{base}#{n}", n + 1
        children.append(
            ChildSpec(
                name=str(name),
                agent=agent,
                url=url,
                headers=item.get("headers"),
                api_key=item.get("api_key"),
                bearer=item.get("bearer"),
                transport=item.get("transport"),
            )
        )
    return children


class _Stop(Exception):
    """A child's turn ended the composite's turn (the updater was told why)."""


class CompositeExecutor(AgentExecutor):
    """Base of the composites: children, their peers, progress, cancel."""

    kind = "composite"

    def __init__(
        self,
        children: Any = None,
        share_state: bool | str = True,
        timeout: float | str = 300.0,
        links: HubLinks | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise unknown_options(type(self), CompositeExecutor, unknown)
        self.children = parse_children(children)
        self.share_state = flag(share_state)
        self.timeout = float(timeout)
        if self.timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        self.links = links or HubLinks()
        self._remotes: dict[str, RemotePeer] = {}
        #: local task id → child name → (peer, child task id), while children run
        self._running: dict[str, dict[str, tuple[Peer, str | None]]] = {}
        self._canceling: set[str] = set()
        names = ", ".join(c.name for c in self.children)
        self.description = f"A {self.kind} composite of {names}."

    async def admit(self) -> None:
        """The check of registration: remote children's URLs pass the outbound policy
        (unless the operator wrote them).  Raises ``ValueError`` saying why."""
        policy = self.links.outbound
        if policy is None or self.links.configured:
            return
        for child in self.children:
            if child.url is not None:
                await policy.check_url(child.url, f"remote child {child.name!r} URL")

    async def close(self) -> None:
        """Close the connections to the remote children."""
        remotes, self._remotes = list(self._remotes.values()), {}
        for remote in remotes:
            await remote.close()

    # --- children --------------------------------------------------------------------

    def peer(self, child: ChildSpec, ctx: RequestContext) -> Peer:
        """The peer of a child (a hosted agent looked up now, or a remote one)."""
        return self._peer(child, ctx.agent_id, getattr(ctx, "caller", ANONYMOUS))

    def _peer(self, child: ChildSpec, agent_id: str | None, caller: Caller) -> Peer:
        if child.url is not None:
            remote = self._remotes.get(child.name)
            if remote is None:
                remote = self._remotes[child.name] = RemotePeer(
                    child.url,
                    name=child.name,
                    headers=child.headers,
                    api_key=child.api_key,
                    bearer=child.bearer,
                    transport=child.transport,
                    policy=self.links.outbound,
                    trusted=self.links.configured,
                )
            return remote
        assert child.agent is not None
        if child.agent == agent_id:
            raise PeerError(f"agent {agent_id!r} cannot be its own child")
        engine = self.links.agents(child.agent)
        if engine is None:
            known = ", ".join(self.links.agent_ids()) or "none"
            raise PeerError(f"no hosted agent {child.agent!r} (agents here: {known})")
        return LocalPeer(child.name, engine, caller)

    async def child_turn(
        self,
        ctx: RequestContext,
        updater: TaskUpdater,
        child: ChildSpec,
        message: Message,
        where: dict[str, Any],
    ) -> Outcome:
        """One turn of a child, with progress shown; cancels the child if cut short."""
        progress = updater.message(f"{child.name} is working")
        progress.metadata = {"child": child.name, **where}
        await updater.working(progress)
        running = self._running.setdefault(ctx.task_id, {})
        message = with_hop(message, ctx, child.name)
        peer = self.peer(child, ctx)
        running[child.name] = (peer, message.task_id)

        async def relay(event: StreamResponse, outcome: Outcome) -> None:
            running[child.name] = (peer, outcome.task_id)
            update = event.status_update
            if update is not None and update.status.state is TaskState.WORKING:
                said = update.status.message
                if said is not None and said.parts:
                    forwarded = updater.message(list(said.parts))
                    forwarded.metadata = {"child": child.name}
                    await updater.working(forwarded)

        try:
            async with asyncio.timeout(self.timeout):
                return await run_turn(peer, message, on_event=relay)
        except TimeoutError:
            await self._cancel_child(peer, running.get(child.name, (peer, None))[1])
            raise PeerError(f"{child.name} did not answer within {self.timeout:g} s") from None
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await asyncio.shield(
                    self._cancel_child(peer, running.get(child.name, (peer, None))[1])
                )
            raise
        finally:
            running.pop(child.name, None)

    @staticmethod
    async def _cancel_child(peer: Peer, task_id: str | None) -> None:
        if task_id is not None:
            await peer.cancel(task_id)

    def message_for(
        self,
        parts: list[Part],
        state: dict[str, Any],
        *,
        context_id: str | None,
        task_id: str | None = None,
    ) -> Message:
        """The message a child gets: ``parts`` and, with ``share_state``, the state."""
        payload = [p for p in parts if not _control(p)]
        if self.share_state:
            payload.append(Part(data={"state": state}))
        if not payload:
            payload = [Part(text="")]
        return user_message(payload, context_id=context_id, task_id=task_id)

    def canceled(self, ctx: RequestContext) -> bool:
        """True when the client canceled this task (the engine ends it canceled)."""
        return ctx.task_id in self._canceling

    async def cancel(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        """Cancel every child that runs for this task."""
        self._canceling.add(ctx.task_id)
        running = list(self._running.get(ctx.task_id, {}).values())
        await asyncio.gather(*(self._cancel_child(p, t) for p, t in running))

    async def cancel_waiting(self, task: Task) -> None:
        """The composite's task, paused on a child's question, was canceled: cancel the
        child task that waits (named in the question's metadata)."""
        memo = recall([task.status.message], MEMO) if task.status.message else None
        pending = (memo or {}).get("pending") or {}
        for held in pending.get("waiting") or [pending]:  # parallel: several may wait
            child = next((c for c in self.children if c.name == held.get("child")), None)
            if child is None or not held.get("taskId"):
                continue
            try:
                peer = self._peer(child, None, ANONYMOUS)
            except PeerError:
                continue  # the child agent is gone: nothing waits any more
            await self._cancel_child(peer, str(held["taskId"]))

    def finish(self, ctx: RequestContext) -> None:
        """Forget the task's bookkeeping (call when ``execute`` ends)."""
        self._running.pop(ctx.task_id, None)
        self._canceling.discard(ctx.task_id)


def _control(part: Part) -> bool:
    """A data part that steers composites (``done``, ``state``) rather than carries output."""
    return isinstance(part.data, dict) and bool({"done", "state"} & set(part.data))


def _memo_message(updater: TaskUpdater, parts: list[Part] | str, memo: dict[str, Any]) -> Message:
    return stamp(updater.message(parts), MEMO, memo)


class SequentialExecutor(CompositeExecutor):
    """Runs its children one after another (see the module docstring)."""

    kind = "sequential"
    name = "Sequential composite"
    #: How many times the chain runs at most (1 for ``sequential``).
    max_iterations = 1

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        try:
            await self._chain(ctx, updater)
        finally:
            self.finish(ctx)

    async def _chain(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        memo = recall(await ctx.context_history(), MEMO) or {}
        contexts: dict[str, str] = dict(memo.get("contexts") or {})
        pending: dict[str, Any] = {}
        if ctx.task is not None and ctx.task.status.message is not None:
            pending = (recall([ctx.task.status.message], MEMO) or {}).get("pending") or {}
        await updater.start()
        if pending:
            iteration, step = int(pending["iteration"]), int(pending["step"])
            outputs: dict[str, str] = dict(pending.get("outputs") or {})
            original = str(pending.get("input", ""))
            child_task: str | None = pending.get("taskId")
            carry = list(ctx.message.parts)
        else:
            iteration, step, outputs = 1, 0, {}
            original, child_task = ctx.text, None
            carry = list(ctx.message.parts)
        last: Outcome | None = None
        while iteration <= self.max_iterations:
            while step < len(self.children):
                child = self.children[step]
                where = {"step": step + 1, "iteration": iteration}
                state = {"input": original, "outputs": outputs}
                message = self.message_for(
                    carry, state, context_id=contexts.get(child.name), task_id=child_task
                )
                child_task = None
                try:
                    outcome = await self.child_turn(ctx, updater, child, message, where)
                except PeerError as exc:
                    if not self.canceled(ctx):
                        await updater.fail(_memo_message(updater, str(exc), {"contexts": contexts}))
                    return
                if self.canceled(ctx):
                    return
                if outcome.context_id:
                    contexts[child.name] = outcome.context_id
                state_ = outcome.state
                if state_ is not None and state_.interrupted:
                    question = list(outcome.message.parts) if outcome.message else []
                    held = {
                        "contexts": contexts,
                        "pending": {
                            **where,
                            "step": step,
                            "child": child.name,
                            "taskId": outcome.task_id,
                            "outputs": outputs,
                            "input": original,
                        },
                    }
                    ask = _memo_message(updater, question or f"{child.name} needs input", held)
                    ask.metadata = {**(ask.metadata or {}), "child": child.name}
                    if state_ is TaskState.AUTH_REQUIRED:
                        await updater.require_auth(ask)
                    else:
                        await updater.require_input(ask)
                    return
                if state_ is not None and state_.terminal and state_ is not TaskState.COMPLETED:
                    reason = outcome.reason or "no reason given"
                    await updater.fail(
                        _memo_message(
                            updater,
                            f"{child.name} {state_.label}: {reason}",
                            {"contexts": contexts},
                        )
                    )
                    return
                outputs[child.name] = outcome.text
                await updater.artifact(
                    outcome.parts or [Part(text="")],
                    name=child.name,
                    artifact_id=f"{self.kind}-{step + 1}-{child.name}",
                    metadata={"child": child.name, **where},
                )
                last = outcome
                carry = outcome.parts
                step += 1
                if outcome.done and self.max_iterations > 1:
                    await self._complete(updater, last, contexts, f"{child.name} said done")
                    return
            step = 0
            iteration += 1
        await self._complete(updater, last, contexts, None)

    async def _complete(
        self,
        updater: TaskUpdater,
        last: Outcome | None,
        contexts: dict[str, str],
        why: str | None,
    ) -> None:
        parts = [p for p in (last.parts if last is not None else []) if not _control(p)]
        answer = _memo_message(updater, parts or "(no output)", {"contexts": contexts})
        if why is not None:
            answer.metadata = {**(answer.metadata or {}), "stopped": why}
        await updater.complete(answer)


class LoopExecutor(SequentialExecutor):
    """Repeats its children until one says done, or ``max_iterations`` (default 3)."""

    kind = "loop"
    name = "Loop composite"

    def __init__(self, max_iterations: int | str = 3, **options: Any) -> None:
        super().__init__(**options)
        self.max_iterations = int(max_iterations)
        if self.max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")


class ParallelExecutor(CompositeExecutor):
    """Runs its children at once (see the module docstring)."""

    kind = "parallel"
    name = "Parallel composite"

    def __init__(self, on_failure: str = "fail", **options: Any) -> None:
        if on_failure not in ("fail", "report"):
            raise ValueError(f"on_failure must be 'fail' or 'report', not {on_failure!r}")
        super().__init__(**options)
        self.on_failure = on_failure

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        try:
            await self._run(ctx, updater)
        finally:
            self.finish(ctx)

    async def _run(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        memo = recall(await ctx.context_history(), MEMO) or {}
        contexts: dict[str, str] = dict(memo.get("contexts") or {})
        if ctx.task is not None and ctx.task.status.message is not None:
            held = (recall([ctx.task.status.message], MEMO) or {}).get("pending") or {}
            if held.get("waiting"):
                await updater.start()
                await self._answer(ctx, updater, contexts, held)
                return
        await updater.start()
        names = ", ".join(c.name for c in self.children)
        await updater.working(f"running {names} at once")
        state = {"input": ctx.text, "outputs": {}}
        jobs: dict[asyncio.Task[Outcome], tuple[int, ChildSpec]] = {}
        for i, child in enumerate(self.children):
            message = self.message_for(
                list(ctx.message.parts), state, context_id=contexts.get(child.name)
            )
            job = asyncio.create_task(
                self.child_turn(ctx, updater, child, message, {"step": i + 1})
            )
            jobs[job] = (i, child)
        tally = _Tally()
        failure: str | None = None
        try:
            pending = set(jobs)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for job in sorted(done, key=lambda j: jobs[j][0]):
                    i, child = jobs[job]
                    problem, outcome = _problem(child.name, job)
                    if outcome is not None and outcome.context_id:
                        contexts[child.name] = outcome.context_id
                    if self.canceled(ctx):
                        return
                    failure = await self._settle(
                        ctx, updater, contexts, tally, i, child, problem, outcome
                    )
                    if failure is not None:
                        pending = set()
                        break
        finally:
            # the other children stop (their tasks end canceled) before the composite ends
            for job in jobs:
                if not job.done():
                    job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)
        if failure is not None:  # fail-fast: waiting children end too, then the whole fails
            await self._cancel_waiting_children(ctx, tally)
            await updater.fail(_memo_message(updater, failure, {"contexts": contexts}))
            return
        await self._next(updater, contexts, tally)

    async def _settle(
        self,
        ctx: RequestContext,
        updater: TaskUpdater,
        contexts: dict[str, str],
        tally: _Tally,
        i: int,
        child: ChildSpec,
        problem: str | None,
        outcome: Outcome | None,
    ) -> str | None:
        """Account for one child's turn; the problem that fails the composite (fail-fast),
        else ``None``."""
        artifact_id = f"parallel-{i + 1}-{child.name}"
        waiting = _waiting_task(outcome)
        if problem is None and waiting is not None:
            assert outcome is not None  # a child's question: asked once the others are done
            question = text_of(outcome.message.parts) if outcome.message else ""
            tally.waiting.append(
                {"child": child.name, "index": i, "taskId": waiting, "question": question}
            )
            return None
        if problem is not None:
            if self.on_failure == "fail":
                return problem
            tally.failures.append(problem)
            await updater.artifact(
                problem,
                name=child.name,
                artifact_id=artifact_id,
                metadata={"child": child.name, "state": "failed"},
            )
            return None
        assert outcome is not None
        tally.answered += 1
        await updater.artifact(
            outcome.parts or [Part(text="")],
            name=child.name,
            artifact_id=artifact_id,
            metadata={"child": child.name},
        )
        return None

    async def _next(self, updater: TaskUpdater, contexts: dict[str, str], tally: _Tally) -> None:
        """Ask the next waiting child's question, or complete with the summary."""
        if tally.waiting:
            first = tally.waiting[0]
            held = {"contexts": contexts, "pending": msgspec.to_builtins(tally)}
            question = first["question"] or f"{first['child']} needs input"
            ask = _memo_message(updater, f"{first['child']} asks: {question}", held)
            ask.metadata = {**(ask.metadata or {}), "child": first["child"]}
            await updater.require_input(ask)
            return
        summary = f"{tally.answered} of {len(self.children)} children answered"
        if tally.failures:
            summary += "; " + "; ".join(tally.failures)
        await updater.complete(_memo_message(updater, summary, {"contexts": contexts}))

    async def _answer(
        self, ctx: RequestContext, updater: TaskUpdater, contexts: dict[str, str], held: Any
    ) -> None:
        """The client answered the question of the first waiting child: pass it on."""
        tally = msgspec.convert(held, _Tally)
        first = tally.waiting.pop(0)
        child = next((c for c in self.children if c.name == first["child"]), None)
        if child is None:
            await updater.fail(f"no child {first['child']!r} in this composite any more")
            return
        i = int(first["index"])
        message = self.message_for(
            list(ctx.message.parts),
            {"input": ctx.text, "outputs": {}},
            context_id=contexts.get(child.name),
            task_id=first["taskId"],
        )
        job = asyncio.ensure_future(self.child_turn(ctx, updater, child, message, {"step": i + 1}))
        await asyncio.wait([job])
        if self.canceled(ctx):
            return
        problem, outcome = _problem(child.name, job)
        if outcome is not None and outcome.context_id:
            contexts[child.name] = outcome.context_id
        again = _waiting_task(outcome) if problem is None else None
        if again is not None:  # it asks again: its question goes first
            assert outcome is not None
            question = text_of(outcome.message.parts) if outcome.message else ""
            tally.waiting.insert(0, {**first, "taskId": again, "question": question})
        else:
            failure = await self._settle(ctx, updater, contexts, tally, i, child, problem, outcome)
            if failure is not None:  # fail-fast: no other child runs now; waiting ones end
                await self._cancel_waiting_children(ctx, tally)
                await updater.fail(_memo_message(updater, failure, {"contexts": contexts}))
                return
        await self._next(updater, contexts, tally)

    async def _cancel_waiting_children(self, ctx: RequestContext, tally: _Tally) -> None:
        """End the tasks of children left waiting for input (nobody will answer them)."""
        for held in tally.waiting:
            child = next((c for c in self.children if c.name == held["child"]), None)
            if child is not None:
                with contextlib.suppress(PeerError):
                    await self.peer(child, ctx).cancel(str(held["taskId"]))
        tally.waiting.clear()


class _Tally(msgspec.Struct):
    """Where a parallel run stands: answered, failures, children waiting for input."""

    answered: int = 0
    failures: list[str] = msgspec.field(default_factory=list)
    waiting: list[dict[str, Any]] = msgspec.field(default_factory=list)


def _waiting_task(outcome: Outcome | None) -> str | None:
    """The id of a child task left waiting for input, if that is how the turn ended."""
    if outcome is None or outcome.state is None or not outcome.state.interrupted:
        return None
    return outcome.task_id


def _problem(name: str, job: asyncio.Task[Outcome]) -> tuple[str | None, Outcome | None]:
    """What went wrong with a child's turn (``None`` if it completed or asks for input),
    and its outcome."""
    if job.cancelled():
        return f"{name} was canceled", None
    exc = job.exception()
    if exc is not None:
        return (str(exc) if isinstance(exc, PeerError) else f"{name} failed: {exc}"), None
    outcome = job.result()
    state = outcome.state
    if state is None or state is TaskState.COMPLETED:
        return None, outcome
    if state.interrupted:
        return None, outcome  # a question, not a failure: the composite relays it
    reason = outcome.reason or "no reason given"
    return f"{name} {state.label}: {reason}", outcome
