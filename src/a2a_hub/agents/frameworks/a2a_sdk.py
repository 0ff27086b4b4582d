"""Host an official a2a-sdk ``AgentExecutor`` unchanged (the ``a2a-sdk`` extra).

``--agent pizza=examples.a2a_sdk_pizza:PizzaExecutor`` names an SDK executor class (built
with the agent's options as keyword arguments) or instance.  For each turn the adapter builds
what the SDK's own ``DefaultRequestHandler`` would hand it:

* a ``RequestContext`` with the request (the incoming message, the send's configuration and
  metadata), the task id and context id the hub chose, the stored task (its history ending
  with the incoming message, as the SDK's handler keeps it), and a ``ServerCallContext`` whose
  ``user`` is the hub's caller (the API key's principal, or unauthenticated) and whose
  ``requested_extensions`` are the extensions active for the request (made when first read:
  :class:`HubRequestContext` sets what the SDK's ``RequestContext.__init__`` sets, at once);
* an ``EventQueue`` (:class:`HubEventQueue`) whose ``enqueue_event`` turns each SDK event
  into the hub's :class:`~a2a_hub.engine.executor.TaskUpdater` call, in order, at once:
  a ``Message`` is the answer (immediate when no task exists, else it completes the task);
  a ``Task`` creates the task (``submitted``) and applies its state and artifacts;
  a ``TaskStatusUpdateEvent`` is the state change with its message (``input-required`` and
  ``auth-required`` end the turn; the next message continues the task); a
  ``TaskArtifactUpdateEvent`` is an artifact or a chunk of one (``append``, ``lastChunk``).

So an SDK executor gets everything the hub gives its own agents (durable tasks on every
store, replay, push, API keys, several instances).  On CancelTask the SDK executor's
``cancel(context, event_queue)`` is called (then its ``execute`` is cancelled, as the SDK
does); its ``canceled`` status becomes the task's end.  A task canceled while it waited for
input gets the same call, its events then having nowhere to go.
"""

from __future__ import annotations

import logging
from typing import Any

from a2a.auth.user import UnauthenticatedUser, User
from a2a.server.agent_execution import AgentExecutor as SdkAgentExecutor
from a2a.server.agent_execution import RequestContext as SdkRequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.id_generator import UUIDGenerator
from a2a.types import a2a_pb2 as pb

from a2a_hub.agents.frameworks._sdk_convert import (
    STATE_FROM_PB,
    configuration_into_pb,
    message_from_pb,
    message_into_pb,
    parts_from_pb,
    state_from_pb,
    struct_from_pb,
    task_to_pb,
)
from a2a_hub.agents.links import HubLinks
from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_hub.protocol.types import Message, Task, TaskState
from a2a_hub.settings import AgentSpec, SettingsError

__all__ = ["HubEventQueue", "HubRequestContext", "SdkExecutor", "adapt", "call_context"]

log = logging.getLogger(__name__)

_UNAUTHENTICATED = UnauthenticatedUser()
_IDS = UUIDGenerator()


class HubUser(User):
    """The hub's caller as the SDK's ``User``: the principal of the request's API key."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


def call_context(ctx: RequestContext) -> ServerCallContext:
    """The SDK's ``ServerCallContext`` of a turn: the caller, the active extensions."""
    # model_construct: the fields are right by construction, pydantic's check is skipped
    return ServerCallContext.model_construct(
        user=HubUser(ctx.owner) if ctx.owner is not None else _UNAUTHENTICATED,
        requested_extensions=set(ctx.extensions),
        state={"agent_id": ctx.agent_id},
        tenant="",
    )


class HubRequestContext(SdkRequestContext):
    """The SDK's ``RequestContext`` of a turn, with what its ``__init__`` sets when given the
    ids and the task (a test holds the two to the same attributes), set at once; its
    ``call_context`` is made when first read (most executors never read it)."""

    def __init__(
        self, ctx: RequestContext, request: pb.SendMessageRequest, task: pb.Task | None
    ) -> None:  # no super().__init__(): its checks hold by construction, its defaults unused
        self._hub_ctx = ctx
        self._params = request
        self._task_id = ctx.task_id
        self._context_id = ctx.context_id
        self._current_task = task
        self._related_tasks: list[pb.Task] = []
        self._task_id_generator = _IDS  # never used (the ids are given)
        self._context_id_generator = _IDS

    def __getattr__(self, name: str) -> Any:  # only for attributes not set yet
        if name == "_call_context":
            self._call_context = made = call_context(self._hub_ctx)
            return made
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class HubEventQueue(EventQueue):
    """The SDK executor's event queue: each event becomes a hub updater call, in order."""

    def __init__(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        self._ctx = ctx
        self._updater = updater
        # a task exists (continued, or made at once for a non-blocking send): messages are its
        config = ctx.configuration
        self._bound = ctx.task is not None or (config is not None and config.return_immediately)

    def _message(self, message: pb.Message) -> Message:
        task_id = self._ctx.task_id if self._bound else None
        return message_from_pb(message, task_id=task_id, context_id=self._ctx.context_id)

    async def enqueue_event(self, event: Any) -> None:
        # the usual events first: a TaskUpdater sends statuses and artifacts
        if isinstance(event, pb.TaskStatusUpdateEvent):
            await self._status(event.status)
        elif isinstance(event, pb.TaskArtifactUpdateEvent):
            await self._artifact(event.artifact, append=event.append, last_chunk=event.last_chunk)
        elif isinstance(event, pb.Task):
            await self._task(event)
        elif isinstance(event, pb.Message):
            await self._updater.reply(self._message(event))
        else:
            raise TypeError(
                f"an a2a-sdk executor may enqueue a Message, Task, TaskStatusUpdateEvent or "
                f"TaskArtifactUpdateEvent, not a {type(event).__name__}"
            )

    async def _artifact(
        self, artifact: pb.Artifact, *, append: bool = False, last_chunk: bool = False
    ) -> None:
        # read straight into the updater's call (no intermediate hub Artifact)
        await self._updater.artifact(
            parts_from_pb(artifact.parts),
            name=artifact.name or None,
            artifact_id=artifact.artifact_id or None,
            append=append,
            last_chunk=last_chunk,
            description=artifact.description or None,
            metadata=struct_from_pb(artifact),
        )

    async def _task(self, task: pb.Task) -> None:
        """A ``Task`` event: the task exists; its state and artifacts are applied when they
        differ from the task as the turn found it (an executor re-announcing a continued
        task changes nothing)."""
        self._bound = True
        await self._updater.submit()
        before = self._ctx.task
        state = state_from_pb(task.status.state)
        if state not in (TaskState.SUBMITTED, TaskState.UNSPECIFIED) and (
            before is None or before.status.state is not state
        ):
            await self._status(task.status)
        known = {a.artifact_id for a in (before.artifacts or ())} if before else set()
        for artifact in task.artifacts:
            if artifact.artifact_id not in known:
                await self._artifact(artifact)

    async def _status(self, status: pb.TaskStatus) -> None:
        self._bound = True
        state = STATE_FROM_PB.get(status.state, TaskState.UNSPECIFIED)
        message = self._message(status.message) if status.HasField("message") else None
        updater = self._updater
        if state is TaskState.WORKING:
            await updater.working(message)
        elif state is TaskState.INPUT_REQUIRED:
            await updater.require_input(message)
        elif state is TaskState.AUTH_REQUIRED:
            await updater.require_auth(message)
        elif state is TaskState.COMPLETED:
            await updater.complete(message)
        elif state is TaskState.FAILED:
            await updater.fail(message)
        elif state is TaskState.REJECTED:
            await updater.reject(message)
        elif state is TaskState.CANCELED:
            await updater.canceled(message)
        elif state is TaskState.SUBMITTED:
            await updater.submit()
        else:
            raise ValueError(f"an a2a-sdk executor sent a status of unknown state {status.state}")


class _Nowhere(EventQueue):
    """The queue of ``cancel`` for a task that waited for input: the hub canceled it
    already, so its events are dropped (logged)."""

    def __init__(self, task_id: str) -> None:
        self._task_id = task_id

    async def enqueue_event(self, event: Any) -> None:
        log.debug("task %s was canceled already: %s dropped", self._task_id, type(event).__name__)


class SdkExecutor(AgentExecutor):
    """A hub executor running an a2a-sdk ``AgentExecutor`` (see the module docstring)."""

    def __init__(self, sdk_executor: SdkAgentExecutor, *, agent_id: str) -> None:
        self.sdk_executor = sdk_executor
        self.agent_id = agent_id
        self.name = getattr(sdk_executor, "name", None)
        doc = (type(sdk_executor).__doc__ or "").strip()
        self.description = getattr(sdk_executor, "description", None) or (
            doc.splitlines()[0] if doc else None
        )

    def request_context(self, ctx: RequestContext) -> SdkRequestContext:
        """What the SDK's own request handler would build for this turn."""
        request = pb.SendMessageRequest()
        message = request.message
        message_into_pb(ctx.message, message)  # written in place: no copy
        # as the SDK's RequestContext does with the ids it is given
        message.task_id = ctx.task_id
        message.context_id = ctx.context_id
        if ctx.configuration is not None:
            configuration_into_pb(ctx.configuration, request.configuration)
        if ctx.metadata:
            request.metadata.update(ctx.metadata)
        task = task_to_pb(ctx.task, ctx.history) if ctx.task is not None else None
        return HubRequestContext(ctx, request, task)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await self.sdk_executor.execute(self.request_context(ctx), HubEventQueue(ctx, updater))

    async def cancel(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        try:
            await self.sdk_executor.cancel(self.request_context(ctx), HubEventQueue(ctx, updater))
        except Exception as exc:  # the task is canceled anyway: say why the agent objected
            log.info("agent %s: cancel() of task %s raised %s: %s (canceled all the same)",
                     self.agent_id, ctx.task_id, type(exc).__name__, exc)  # fmt: skip

    async def cancel_waiting(self, task: Task) -> None:
        context = SdkRequestContext(
            ServerCallContext(state={"agent_id": self.agent_id}),
            task_id=task.id,
            context_id=task.context_id,
            task=task_to_pb(task, list(task.history or ())),
        )
        await self.sdk_executor.cancel(context, _Nowhere(task.id))

    async def close(self) -> None:
        close = getattr(self.sdk_executor, "close", None)
        if close is not None:
            result = close()
            if hasattr(result, "__await__"):
                await result


def adapt(obj: Any, *, spec: AgentSpec, links: HubLinks) -> AgentExecutor:
    """The hub executor running ``obj``, an a2a-sdk ``AgentExecutor`` subclass (built with
    the agent's options) or instance."""
    if isinstance(obj, type) and issubclass(obj, SdkAgentExecutor):
        try:
            obj = obj(**spec.options)
        except TypeError as exc:
            raise SettingsError(
                f"agent {spec.id!r}: cannot build {spec.executor} with options "
                f"{spec.options!r}: {exc}"
            ) from None
    elif spec.options:
        raise SettingsError(
            f"agent {spec.id!r}: {spec.executor} is an instance: it takes no options "
            f"(got {', '.join(map(repr, spec.options))})"
        )
    if not isinstance(obj, SdkAgentExecutor):
        raise SettingsError(
            f"agent {spec.id!r}: {spec.executor} is a {type(obj).__name__} from a2a-sdk, not an "
            "a2a-sdk AgentExecutor (class or instance)"
        )
    return SdkExecutor(obj, agent_id=spec.id)
