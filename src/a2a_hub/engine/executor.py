"""What an agent author writes: an :class:`AgentExecutor` and the calls it may make.

An executor receives a :class:`RequestContext` (the incoming message, the task
it continues with its whole history, the context id) and a :class:`TaskUpdater`
through which it answers.  It answers in one of two ways:

* **a message** — ``await updater.reply("hello")``: an immediate answer, no
  task is created (seed 000's first flow);
* **a task** — ``start()`` (or ``submit()``: the task exists, not yet working), then any
  number of ``working()`` / ``artifact()`` calls, then one of ``complete()``, ``fail()``,
  ``reject()``, ``canceled()`` (terminal) or
  ``require_input()`` / ``require_auth()`` (the turn ends; the client continues
  the task by sending a message with its ``taskId``).

Rules (enforced; breaking one raises :class:`InvalidTransitionError`, which
fails the task with a message saying which rule):

* ``reply()`` is only an immediate answer when no task exists yet.  Once the
  request is bound to a task (a continued task, a non-blocking send, or after
  ``start()``), ``reply(m)`` completes the task with ``m`` as its final message.
* Nothing may follow a terminal call.  ``require_input()``/``require_auth()``
  end the turn: return from ``execute`` after them.
* If ``execute`` returns while the task is still ``submitted``/``working`` the
  task is failed ("the agent stopped without finishing"); if it raises, the task
  is failed with the error's text.
* ``cancel`` is called when a client cancels the task while ``execute`` runs;
  the engine then cancels ``execute`` (asyncio cancellation) and marks the task
  ``canceled``.  Override ``cancel`` to stop work that asyncio cannot reach.
* ``cancel_waiting`` is called after a client canceled a task that waited for input
  or auth (no ``execute`` runs then, so ``cancel`` is not called), with the task as it
  was stored: stop work held elsewhere there (the ``remote`` kind cancels the remote
  task it waits on).  The local cancel stands whatever it does; errors are logged.
* ``close`` is called once when the hub stops serving the executor (the hub closes,
  or the agent is removed and its last task has ended): release connections there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from a2a_hub.engine.state import new_id
from a2a_hub.protocol.types import (
    Artifact,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    Task,
    TaskState,
)

__all__ = [
    "PROGRESS_KEY",
    "TOOL_CALL_KIND",
    "TOOL_RESPONSE_KIND",
    "AgentExecutor",
    "RequestContext",
    "TaskUpdater",
    "text_of",
    "tool_call_part",
    "tool_response_part",
]

# Enum members read once: ``TaskState.WORKING`` goes through the enum metaclass's
# ``__getattr__`` hook on every read (Python 3.11), a module global does not.
_AGENT = Role.AGENT
_WORKING, _COMPLETED, _FAILED = TaskState.WORKING, TaskState.COMPLETED, TaskState.FAILED
_INPUT_REQUIRED, _AUTH_REQUIRED = TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED
_REJECTED, _CANCELED = TaskState.REJECTED, TaskState.CANCELED

#: The status-message metadata key carrying ``updater.working(progress=...)``.
PROGRESS_KEY = "progress"

#: ``kind`` of a data part showing a tool call: ``{"kind", "tool_call_id", "tool_id",
#: "params"}`` (the ``tool_call`` event of seed 003).  One shape for every writer: a
#: client-side tool (:meth:`TaskUpdater.call_client_tool`) and a server-side one (an llm
#: agent's tool loop, :mod:`a2a_hub.tools`); the WebSocket and AG-UI read it.
TOOL_CALL_KIND = "tool_call"
#: ``kind`` of a data part carrying a tool's result: ``{"kind", "tool_call_id", "result":
#: {"status": "success"|"error", "data", "error_message"}}`` (and ``tool_id`` when known).
TOOL_RESPONSE_KIND = "tool_response"


def tool_call_part(call_id: str, tool_id: str, params: dict[str, Any]) -> dict[str, Any]:
    """The data part content showing a call of ``tool_id``."""
    return {"kind": TOOL_CALL_KIND, "tool_call_id": call_id, "tool_id": tool_id,
            "params": params}  # fmt: skip


def tool_response_part(
    call_id: str, result: dict[str, Any], tool_id: str | None = None
) -> dict[str, Any]:
    """The data part content carrying the result of call ``call_id``."""
    data: dict[str, Any] = {"kind": TOOL_RESPONSE_KIND, "tool_call_id": call_id}
    if tool_id is not None:
        data["tool_id"] = tool_id
    data["result"] = result
    return data


def text_of(parts: Sequence[Part]) -> str:
    """The text parts of a message or artifact, joined by newlines."""
    if len(parts) == 1:  # the common case, without a generator
        text = parts[0].text
        return "" if text is None else text
    return "\n".join(p.text for p in parts if p.text is not None)


@dataclass(slots=True)
class RequestContext:
    """Everything an executor knows about the request it serves.

    (The engine builds it with positional arguments, the cheaper call: keep the order of
    the fields, or change :meth:`a2a_hub.engine.runs.Runs.open` with it.)"""

    agent_id: str
    message: Message
    task_id: str
    context_id: str
    #: The task this message continues, as it was before the message (``None`` for a new task).
    task: Task | None = None
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None
    #: True when the client follows this turn as a stream (stream text as artifact chunks).
    streaming: bool = False
    #: URIs of the extensions active for this request: those the client asked for
    #: (``A2A-Extensions``) among those the agent declares.
    extensions: frozenset[str] = frozenset()
    extras: dict[str, Any] = field(default_factory=dict)
    #: Loads the earlier tasks of the context (set by the engine).
    context_loader: Callable[[], Awaitable[list[Task]]] | None = None
    #: The principal whose task this is (``None``: anonymous), set by the engine.
    owner: str | None = None

    @property
    def text(self) -> str:
        """The text of the incoming message."""
        return text_of(self.message.parts)

    @property
    def history(self) -> list[Message]:
        """Every message of this task so far, the incoming one last."""
        previous = self.task.history if self.task is not None and self.task.history else []
        return [*previous, self.message]

    def tool_response(self, tool_call_id: str | None = None) -> dict[str, Any] | None:
        """The result a client sent for a tool call (``{"status", "data", "error_message"}``),
        from the incoming message's ``tool_response`` data part; ``None`` if there is none."""
        for part in self.message.parts:
            data = part.data
            if (
                isinstance(data, dict)
                and data.get("kind") == TOOL_RESPONSE_KIND
                and (tool_call_id is None or data.get("tool_call_id") == tool_call_id)
            ):
                result = data.get("result")
                return result if isinstance(result, dict) else {"status": "success", "data": result}
        return None

    async def context_history(self) -> list[Message]:
        """The messages of the earlier tasks of this context (oldest first), then :attr:`history`.

        This is what an agent needs to hold a conversation across several tasks.
        """
        earlier: list[Message] = []
        if self.context_loader is not None:
            for task in await self.context_loader():
                earlier.extend(task.history or [])
        return [*earlier, *self.history]


class _Run(Protocol):
    """What the updater drives: the task's run (:class:`a2a_hub.engine.run.TaskRun`)."""

    @property
    def task_id(self) -> str: ...

    @property
    def context_id(self) -> str: ...

    async def reply(self, content: str | Sequence[Part] | Message) -> None: ...

    async def start(self) -> None: ...

    def ensure_task(self) -> Task: ...

    async def set_status(
        self, state: TaskState, content: str | Sequence[Part] | Message | None
    ) -> None: ...

    def add_artifact(self, artifact: Artifact, *, append: bool, last_chunk: bool) -> None: ...


class TaskUpdater:
    """The executor's handle to answer; every method is a coroutine.

    Text arguments become an agent message; pass a :class:`Message` or a list
    of :class:`Part` for anything richer.
    """

    __slots__ = ("_run",)

    def __init__(self, run: _Run) -> None:
        self._run = run

    @property
    def task_id(self) -> str:
        """Id of the task this request is bound to (or would create)."""
        return self._run.task_id

    @property
    def context_id(self) -> str:
        """Context id of the conversation."""
        return self._run.context_id

    def message(
        self, content: str | Sequence[Part] | Message, *, with_task: bool = True
    ) -> Message:
        """Build an agent message in this conversation (not sent)."""
        if isinstance(content, Message):
            return content
        parts = [Part(text=content)] if isinstance(content, str) else list(content)
        return Message(
            message_id=new_id(),
            role=_AGENT,
            parts=parts,
            context_id=self._run.context_id,
            task_id=self._run.task_id if with_task else None,
        )

    async def reply(self, content: str | Sequence[Part] | Message) -> None:
        """Answer with a message: immediate (no task) if none exists, else complete the task."""
        await self._run.reply(content)

    async def start(self) -> None:
        """Create the task if needed and move it to ``working``."""
        await self._run.start()

    async def submit(self) -> None:
        """Create the task (state ``submitted``, the incoming message as its history) if it
        does not exist yet, without starting it: the first thing a streaming client sees.
        (:meth:`start` and the other calls create it too; this is for agents that announce
        the task before they know what comes next, as an a2a-sdk executor does.)"""
        self._run.ensure_task()

    async def working(
        self,
        content: str | Sequence[Part] | Message | None = None,
        *,
        progress: float | None = None,
    ) -> None:
        """Report progress (state ``working``, optionally with a message).

        ``progress`` (0 to 1) is carried in the status message's metadata
        (``{"progress": 0.75}``), which every binding forwards; the WebSocket
        channel shows it as ``task_status_update.progress``.
        """
        if progress is not None:
            if not 0.0 <= progress <= 1.0:
                raise ValueError(f"progress must be between 0 and 1, not {progress!r}")
            message = self.message("" if content is None else content)
            metadata = {**(message.metadata or {}), PROGRESS_KEY: float(progress)}
            content = msgspec.structs.replace(message, metadata=metadata)
        await self._run.set_status(_WORKING, content)

    async def artifact(
        self,
        content: str | Sequence[Part],
        *,
        name: str | None = None,
        artifact_id: str | None = None,
        append: bool = False,
        last_chunk: bool = False,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Publish an artifact (or, with ``append``, a further chunk of one); returns its id."""
        parts = [Part(text=content)] if isinstance(content, str) else list(content)
        art = Artifact(
            artifact_id=artifact_id or new_id(),
            parts=parts,
            name=name,
            description=description,
            metadata=metadata,
        )
        self._run.add_artifact(art, append=append, last_chunk=last_chunk)
        return art.artifact_id

    async def require_input(self, content: str | Sequence[Part] | Message | None = None) -> None:
        """Ask the client for more input (``input-required``); then return from ``execute``."""
        await self._run.set_status(_INPUT_REQUIRED, content)

    async def call_client_tool(
        self,
        tool_id: str,
        params: dict[str, Any] | None = None,
        *,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Ask the client to run a tool; returns the call id.  Then return from ``execute``.

        The task goes ``input-required`` with a data part
        ``{"kind": "tool_call", "tool_call_id", "tool_id", "params"}`` (visible over
        every binding; the WebSocket sends it as a ``tool_call`` event).  The
        client's answer continues the task with a message holding a data part
        ``{"kind": "tool_response", "tool_call_id", "result": {"status", "data",
        "error_message"}}``: read it in the next turn with
        :meth:`RequestContext.tool_response`.  ``metadata`` goes on the status message
        (what the executor needs to carry on in the next turn, e.g. a model's tool loop).
        """
        call_id = new_id()
        call = tool_call_part(call_id, tool_id, dict(params or {}))
        parts = [Part(text=text)] if text else []
        parts.append(Part(data=call))
        question = self.message(parts)
        if metadata:
            question.metadata = {**(question.metadata or {}), **metadata}
        await self._run.set_status(_INPUT_REQUIRED, question)
        return call_id

    async def require_auth(self, content: str | Sequence[Part] | Message | None = None) -> None:
        """Ask the client to authenticate (``auth-required``); then return from ``execute``."""
        await self._run.set_status(_AUTH_REQUIRED, content)

    async def complete(self, content: str | Sequence[Part] | Message | None = None) -> None:
        """Finish the task successfully (terminal)."""
        await self._run.set_status(_COMPLETED, content)

    async def fail(self, content: str | Sequence[Part] | Message | None = None) -> None:
        """Finish the task with an error (terminal)."""
        await self._run.set_status(_FAILED, content)

    async def reject(self, content: str | Sequence[Part] | Message | None = None) -> None:
        """Decline the task (terminal)."""
        await self._run.set_status(_REJECTED, content)

    async def canceled(self, content: str | Sequence[Part] | Message | None = None) -> None:
        """End the task as ``canceled`` (terminal) on the agent's own account (a client's
        CancelTask needs no call: the engine ends the task itself)."""
        await self._run.set_status(_CANCELED, content)


class AgentExecutor(ABC):
    """Base class of agent logic.  See the module docstring for the rules.

    Class attributes ``name``, ``description`` and ``skills`` (dicts with
    ``id``, ``name``, ``description``, ``tags``) feed the agent card when the
    configuration does not say otherwise.  ``extensions`` (dicts with ``uri`` and
    optionally ``description``, ``required``, ``params``) are listed in the card's
    ``capabilities.extensions``; the ones a request activates are ``ctx.extensions``.
    """

    name: str | None = None
    description: str | None = None
    skills: list[dict[str, Any]] | None = None
    extensions: list[dict[str, Any]] | None = None
    streaming: bool = True

    @abstractmethod
    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        """Handle one incoming message (one turn of the conversation)."""

    async def cancel(self, ctx: RequestContext, updater: TaskUpdater) -> None:  # noqa: B027
        """Called when a client cancels the task while ``execute`` runs (optional)."""

    async def cancel_waiting(self, task: Task) -> None:  # noqa: B027 - optional hook
        """Called after a client canceled ``task``, which waited for input or auth (no
        ``execute`` running); ``task`` is as it was stored, interrupted (optional)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the executor holds (connections); called once, when its hub stops
        serving it (optional)."""
