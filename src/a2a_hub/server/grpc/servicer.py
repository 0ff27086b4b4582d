"""The ``lf.a2a.v1.A2AService`` servicer: each RPC on the engine the other bindings use.

Per call:

* **agent** — the request's ``tenant`` field names the agent (each card's GRPC interface
  carries ``tenant: <agent id>``, and clients copy it into every request); a request
  without a tenant may name it in the metadata key ``x-a2a-hub-agent``; with neither, the
  hub's default agent answers.  When both are set, ``tenant`` wins.
* **version** — metadata ``a2a-version``: absent or ``1.x`` is served, anything else is
  ``VersionNotSupportedError`` (this binding is A2A 1.0, plus the 1.1 preview: with
  ``a2a-version: 1.1`` tasks and events carry ``generation``, ``GetTask`` long-polls with
  ``current_generation``, and ``if_generation_match`` on a send is checked: ``ABORTED``).
* **extensions** — metadata ``a2a-extensions`` (see :mod:`a2a_hub.server.extensions`);
  the activated ones go back in the initial metadata ``a2a-extensions``.
* **caller** — an API key in the metadata ``x-api-key`` or ``authorization: Bearer KEY``,
  checked as over HTTP: ``UNAUTHENTICATED`` without one (on an agent that requires keys)
  or with a bad one, ``PERMISSION_DENIED`` for a key of other agents or scopes.
* **safe retries** — metadata ``idempotency-key`` is the claim key of a send in place of
  its ``messageId`` (as the ``Idempotency-Key`` header over HTTP): a repeat runs nothing
  and gets what the first produced; a repeat with another message is ``INVALID_ARGUMENT``
  (reason ``IDEMPOTENCY_KEY_REUSED``).
* **resuming** — ``SubscribeToTask`` with metadata ``last-event-id: N`` replays the events
  after ``N`` first, like ``Last-Event-ID`` on SSE.
* **the caller going away** — a blocking ``SendMessage`` whose call is cancelled (the client
  cancels, its deadline passes, the connection drops) does not stop the task, as an HTTP
  client that disconnects does not: ``CancelTask`` is how a task is cancelled.
* **errors** — every :class:`A2AError` becomes its gRPC status with a
  ``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer holding a
  ``google.rpc.ErrorInfo`` (``reason``, domain ``a2a-protocol.org``, ``metadata``), as the
  spec's section 10.6 asks; anything unexpected is logged and answered ``INTERNAL``.  The
  binding's one catch-all is :func:`unary` / :func:`streaming`, the decorators of the
  servicer's methods (through :func:`~a2a_hub.server.errors.protocol_error`, as every
  binding).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import Any, NamedTuple, Never, Protocol, TypeVar

import google.rpc.error_details_pb2 as error_details_pb2
import google.rpc.status_pb2 as status_pb2
import grpc
from google.protobuf import empty_pb2

from a2a_hub.engine.caller import Caller
from a2a_hub.engine.generation import with_generation
from a2a_hub.engine.stream import TaskStream, check_position, is_internal
from a2a_hub.protocol.errors import (
    A2AError,
    InvalidParamsError,
    RateLimitedError,
    UnauthenticatedError,
    VersionNotSupportedError,
)
from a2a_hub.protocol.types import Message, Task
from a2a_hub.server.auth import KeyPolicy
from a2a_hub.server.errors import error_info, protocol_error
from a2a_hub.server.extensions import activate, parse
from a2a_hub.server.grpc import convert
from a2a_hub.server.grpc._generated import a2a_pb2 as pb
from a2a_hub.server.hosted import HostedAgent
from a2a_hub.server.scope import preview
from a2a_hub.settings import Settings

__all__ = ["AGENT_METADATA", "A2AServicer"]

#: Metadata key naming the agent when the request's ``tenant`` is empty.
AGENT_METADATA = "x-a2a-hub-agent"
_DOMAIN = "a2a-protocol.org"
_DETAILS_KEY = "grpc-status-details-bin"

Context = grpc.aio.ServicerContext[object, object]
_S = TypeVar("_S")  # the servicer
_Q = TypeVar("_Q")  # the request message
_R = TypeVar("_R")  # the response message


class _Call(NamedTuple):
    agent: HostedAgent
    caller: Caller
    requested: frozenset[str]
    #: ``a2a-version: 1.1``: the 1.1 preview (``generation``).
    v11: bool
    #: The metadata ``idempotency-key`` (the claim key of a send), if any.
    idempotency_key: str | None = None


def _metadata(context: Context) -> dict[str, str]:
    """The call's text metadata (lower-case keys; repeated keys joined with commas)."""
    found: dict[str, str] = {}
    for key, value in context.invocation_metadata() or ():
        if isinstance(value, bytes):
            continue
        found[key] = f"{found[key]},{value}" if key in found else value
    return found


async def _abort(context: Context, err: A2AError) -> Never:
    """End the call with ``err``'s status and its ErrorInfo detail."""
    code = grpc.StatusCode[err.grpc_status]
    info = error_details_pb2.ErrorInfo(
        reason=err.reason, domain=_DOMAIN, metadata=error_info(err)["metadata"]
    )
    status = status_pb2.Status(code=code.value[0], message=err.message)
    status.details.add().Pack(info)
    trailers: list[tuple[str, str | bytes]] = []
    if isinstance(err, RateLimitedError):
        delay = error_details_pb2.RetryInfo()
        delay.retry_delay.FromNanoseconds(int(err.retry_after * 1e9))
        status.details.add().Pack(delay)
    elif err.http_status == 401 and (err.data or {}).get("resourceMetadata"):
        pointer = (err.data or {})["resourceMetadata"]
        trailers.append(("www-authenticate", f'Bearer resource_metadata="{pointer}"'))
    trailers.append((_DETAILS_KEY, status.SerializeToString()))
    await context.abort(code, err.message, tuple(trailers))


def unary(
    method: Callable[[_S, _Q, Context], Awaitable[_R]],
) -> Callable[[_S, _Q, Context], Coroutine[Any, Any, _R]]:
    """A unary method of the servicer, ending its call with the protocol error of anything
    it raises (the gRPC binding's catch-all)."""
    where = f"gRPC {method.__name__}"

    @functools.wraps(method)
    async def answering(self: _S, request: _Q, context: Context) -> _R:
        try:
            return await method(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await _abort(context, protocol_error(exc, where))

    return answering


def streaming(
    method: Callable[[_S, _Q, Context], Awaitable[TaskStream]],
) -> Callable[[_S, _Q, Context], AsyncIterator[pb.StreamResponse]]:
    """A streaming method of the servicer from the method opening its :class:`TaskStream`:
    the stream's events as protobuf, and the call ended with the protocol error of anything
    raised, before the first event or after (the other half of the catch-all)."""
    name = method.__name__

    @functools.wraps(method)
    async def relaying(self: _S, request: _Q, context: Context) -> AsyncIterator[pb.StreamResponse]:
        stream: TaskStream | None = None
        try:
            stream = await method(self, request, context)
            v11 = preview(_metadata(context).get("a2a-version"))
            try:
                async for event in stream:
                    if not is_internal(event.event):
                        yield convert.stream_response(
                            with_generation(event) if v11 else event.event
                        )
            finally:
                stream.close()
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            where = f"gRPC {name}" if stream is None else f"gRPC {name} of task {stream.task_id}"
            await _abort(context, protocol_error(exc, where))

    return relaying


class ServedHub(Protocol):
    """What the gRPC binding needs of the hub (:class:`a2a_hub.server.hub.Hub`)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def agents(self) -> Mapping[str, HostedAgent]: ...

    @property
    def auth(self) -> KeyPolicy: ...

    def agent(self, agent_id: str) -> HostedAgent: ...

    def default_agent(self) -> HostedAgent: ...


class A2AServicer:
    """Answers ``lf.a2a.v1.A2AService`` for every agent of a hub."""

    def __init__(self, hub: ServedHub) -> None:
        self.hub = hub

    async def _open(self, tenant: str, context: Context) -> _Call:
        """Choose the agent, check the version, read the requested extensions, know the caller."""
        metadata = _metadata(context)
        version = metadata.get("a2a-version", "").strip()
        if version and version.partition(".")[0] != "1":
            raise VersionNotSupportedError(
                f"A2A version {version!r} is not served by the gRPC binding, which speaks 1.0; "
                "use JSON-RPC for 0.3 and 0.1",
                data={"requested": version, "supported": "1.0"},
            )
        name = tenant or metadata.get(AGENT_METADATA, "").strip()
        agent = self.hub.agent(name) if name else self.hub.default_agent()
        requested = parse([metadata.get("a2a-extensions", "")])
        caller = await self._caller(agent, metadata)
        return _Call(agent, caller, requested, preview(version), metadata.get("idempotency-key"))

    async def _caller(self, agent: HostedAgent, metadata: dict[str, str]) -> Caller:
        """Who calls: the one place gRPC authentication plugs in (the counterpart of
        :meth:`a2a_hub.server.caller.CallerMiddleware.identify`).

        ``metadata`` is the call's text metadata (lower-case keys): the API key comes in
        ``x-api-key`` or ``authorization: Bearer KEY``, checked as over HTTP
        (:meth:`a2a_hub.server.auth.KeyPolicy.caller`): :data:`ANONYMOUS` on an open agent
        without a key, else the key's caller, or ``UNAUTHENTICATED`` (no key for an agent
        that needs one, or a bad one) / ``PERMISSION_DENIED`` (a key for other agents).
        """
        key = metadata.get("x-api-key", "").strip() or None
        if key is None:
            scheme, _, token = metadata.get("authorization", "").partition(" ")
            if scheme.lower() == "bearer":
                key = token.strip() or None
        try:
            return await self.hub.auth.caller(agent.id, key)
        except UnauthenticatedError as err:
            pointer = (err.data or {}).get("resourceMetadata")
            if pointer:  # the RFC 9728 metadata's URL, for the www-authenticate trailer
                server = self.hub.settings.server
                root = server.public_url or f"http://{server.host}:{server.port}"
                err.data = {**(err.data or {}), "resourceMetadata": root.rstrip("/") + pointer}
            raise

    @staticmethod
    async def _echo(context: Context, activated: frozenset[str]) -> None:
        if activated:
            await context.send_initial_metadata((("a2a-extensions", ",".join(sorted(activated))),))

    # --- unary ---------------------------------------------------------------------------

    @unary
    async def SendMessage(
        self, request: pb.SendMessageRequest, context: Context
    ) -> pb.SendMessageResponse:
        """``SendMessage``: a Task once it settles, or the agent's direct Message."""
        call = await self._open(request.tenant, context)
        params = convert.send_message_request(request, call.v11)
        activated = activate(call.agent, call.requested)
        engine = call.agent.engine
        # its own task, so that the call being cancelled leaves the agent's task running
        send = asyncio.ensure_future(
            (engine.send_v11 if call.v11 else engine.send)(
                params,
                caller=call.caller,
                extensions=activated,
                idempotency_key=call.idempotency_key,
            )
        )
        send.add_done_callback(_retrieve)
        result = await asyncio.shield(send)
        await self._echo(context, activated)
        return convert.send_message_response(result)

    @unary
    async def GetTask(self, request: pb.GetTaskRequest, context: Context) -> pb.Task:
        """``GetTask``: the newest snapshot of a task."""
        call = await self._open(request.tenant, context)
        params = convert.get_task_request(request)
        engine = call.agent.engine
        if call.v11:  # the 1.1 preview: a long poll with current_generation
            task = await engine.get_task_v11(
                params.id,
                params.history_length,
                caller=call.caller,
                current_generation=params.current_generation,
                wait=self.hub.settings.server.long_poll_timeout,
            )
        else:
            task = await engine.get_task(params.id, params.history_length, caller=call.caller)
        return convert.task_to_pb(task)

    @unary
    async def ListTasks(
        self, request: pb.ListTasksRequest, context: Context
    ) -> pb.ListTasksResponse:
        """``ListTasks``: the agent's tasks, newest first, filtered and paged."""
        call = await self._open(request.tenant, context)
        page = await call.agent.engine.list_tasks(
            convert.list_tasks_request(request), caller=call.caller
        )
        return convert.list_tasks_response(page)

    @unary
    async def CancelTask(self, request: pb.CancelTaskRequest, context: Context) -> pb.Task:
        """``CancelTask``: stop the task and answer its final state."""
        call = await self._open(request.tenant, context)
        task = await call.agent.engine.cancel_task(request.id, caller=call.caller)
        if call.v11:
            task = await call.agent.engine.get_task_v11(request.id, caller=call.caller)
        return convert.task_to_pb(task)

    @unary
    async def CreateTaskPushNotificationConfig(
        self, request: pb.TaskPushNotificationConfig, context: Context
    ) -> pb.TaskPushNotificationConfig:
        """``CreateTaskPushNotificationConfig``: store a webhook for a task (masked answer)."""
        call = await self._open(request.tenant, context)
        if not request.task_id:
            raise InvalidParamsError("task_id is required")
        config = await call.agent.engine.set_push_config(
            convert.push_config_from_pb(request), caller=call.caller
        )
        return convert.push_config_to_pb(config)

    @unary
    async def GetTaskPushNotificationConfig(
        self, request: pb.GetTaskPushNotificationConfigRequest, context: Context
    ) -> pb.TaskPushNotificationConfig:
        """``GetTaskPushNotificationConfig``: one config of a task, masked."""
        call = await self._open(request.tenant, context)
        _need(request.task_id, "task_id")
        _need(request.id, "id")
        config = await call.agent.engine.get_push_config(
            request.task_id, request.id, caller=call.caller
        )
        return convert.push_config_to_pb(config)

    @unary
    async def ListTaskPushNotificationConfigs(
        self, request: pb.ListTaskPushNotificationConfigsRequest, context: Context
    ) -> pb.ListTaskPushNotificationConfigsResponse:
        """``ListTaskPushNotificationConfigs``: every config of a task (one page), masked."""
        call = await self._open(request.tenant, context)
        _need(request.task_id, "task_id")
        configs = await call.agent.engine.list_push_configs(request.task_id, caller=call.caller)
        return pb.ListTaskPushNotificationConfigsResponse(
            configs=[convert.push_config_to_pb(c) for c in configs]
        )

    @unary
    async def DeleteTaskPushNotificationConfig(
        self, request: pb.DeleteTaskPushNotificationConfigRequest, context: Context
    ) -> object:
        """``DeleteTaskPushNotificationConfig``: remove one config of a task."""
        call = await self._open(request.tenant, context)
        _need(request.task_id, "task_id")
        _need(request.id, "id")
        await call.agent.engine.delete_push_config(request.task_id, request.id, caller=call.caller)
        return empty_pb2.Empty()

    @unary
    async def GetExtendedAgentCard(
        self, request: pb.GetExtendedAgentCardRequest, context: Context
    ) -> pb.AgentCard:
        """Refused: no agent here has an extended card (the agent's capability error)."""
        agent = (await self._open(request.tenant, context)).agent
        raise agent.no_extended_card()

    # --- streaming -----------------------------------------------------------------------

    @streaming
    async def SendStreamingMessage(
        self, request: pb.SendMessageRequest, context: Context
    ) -> TaskStream:
        """``SendStreamingMessage``: the events of the turn the message starts."""
        call = await self._open(request.tenant, context)
        call.agent.require_streaming("SendStreamingMessage")
        params = convert.send_message_request(request, call.v11)
        activated = activate(call.agent, call.requested)
        stream = await call.agent.engine.send_stream(
            params,
            caller=call.caller,
            extensions=activated,
            idempotency_key=call.idempotency_key,
        )
        try:
            await self._echo(context, activated)
        except BaseException:
            stream.close()
            raise
        return stream

    @streaming
    async def SubscribeToTask(
        self, request: pb.SubscribeToTaskRequest, context: Context
    ) -> TaskStream:
        """``SubscribeToTask``: a snapshot then live events (a replay with ``last-event-id``)."""
        call = await self._open(request.tenant, context)
        call.agent.require_streaming("SubscribeToTask")
        after = check_position(_metadata(context).get("last-event-id"))
        return await call.agent.engine.subscribe(request.id, after, caller=call.caller)


def _need(value: str, name: str) -> None:
    if not value:
        raise InvalidParamsError(f"{name} is required")


def _retrieve(done: asyncio.Future[Task | Message]) -> None:
    """Mark a send's outcome as seen when its caller left before it came."""
    if not done.cancelled():
        done.exception()
