"""The WebSocket event channel of seed 003 at ``/a2a/{agent_id}/ws``.

A client offering the subprotocol ``a2a.jsonrpc.v1`` (before ``a2a-hub``) gets the JSON-RPC
binding over the socket instead (:mod:`a2a_hub.server.ws_rpc`, a preview of A2A #1864); the
upgrade's caller, the first-frame key and the socket limits below are shared.

One connection serves one client of one agent, as the caller
:class:`~a2a_hub.server.caller.CallerMiddleware` found for the upgrade request.
Client actions (JSON text frames, see :mod:`a2a_hub.server.ws_events`):

* ``send_message`` starts or continues a task through ``engine.send_stream``;
* ``cancel_task`` cancels through the engine (wherever the task runs);
* ``ping`` is answered with ``pong`` (the client's timestamp echoed);
* ``tool_response`` answers a tool call of a task waiting for it (the task
  continues with a message holding the result); an unknown call id gets an
  ``error`` event and nothing else happens;
* ``sync_state`` replays, from the task log, exactly what the client missed
  (``last_seq`` per task, or the task of ``last_message_id``), then follows the
  tasks live; with nothing known it sends the current state of the open tasks.

Each followed task is one :class:`~a2a_hub.engine.stream.TaskStream` (which
catches up from the log when its buffer overflows); its events become server
events through a :class:`~a2a_hub.server.ws_events.TaskView`, which drops any
event whose seq was already sent.  Limits: frames over ``ws_max_frame_bytes``,
bad JSON, unknown actions and wrong field types get an ``error`` event (the
socket stays open, nothing is stored); ``ws_max_sockets`` per agent and
``ws_max_sockets_per_key`` per API key; a client silent for ``ws_idle_timeout``
seconds is closed; one that does not read an event within ``ws_send_timeout``
seconds is cut loose (code 1013) and resyncs from the log when it comes back.

API keys: the upgrade request goes through the same middleware as every HTTP
request, so a key in a header, the query string (``api_key``) or the
``Sec-WebSocket-Protocol`` (browsers offer ``a2a-hub`` plus ``a2a-key.<key>``) is read
by ``ApiKeyMiddleware.identify`` (a bad one refuses the upgrade with 401 / 403); the
server always answers with the ``a2a-hub`` subprotocol when the client offers it.  A
socket to an agent that requires keys, opened without one, must send it as its first
frame, ``{"action": "authenticate", "api_key": KEY}`` (answered with
``authenticated``); anything else, or a bad key, gets an ``error`` event
(``unauthenticated`` / ``permission_denied``) and close code 1008.  An open agent
never needs a key.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
from collections import Counter, deque
from typing import Any

import msgspec
from starlette.types import Message as AsgiMessage
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from a2a_hub import metrics
from a2a_hub.engine.caller import Caller
from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.pubsub import wheel
from a2a_hub.engine.stream import TaskStream
from a2a_hub.protocol import fieldnames
from a2a_hub.protocol.errors import (
    A2AError,
    InvalidParamsError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    PayloadTooLargeError,
    UnauthenticatedError,
)
from a2a_hub.protocol.types import (
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a_hub.server.auth import KEY_SUBPROTOCOL, authenticate, key_of
from a2a_hub.server.caller import KEY_IN_FIRST_FRAME, caller_of
from a2a_hub.server.detached import detach
from a2a_hub.server.errors import protocol_error
from a2a_hub.server.hub import HostedAgent, Hub
from a2a_hub.server.ws_events import (
    TOOL_CALL_KIND,
    TOOL_RESPONSE_KIND,
    Authenticate,
    Authenticated,
    CancelTask,
    ClientAction,
    Ping,
    Pong,
    SendMessage,
    ServerEvent,
    SyncCompleted,
    SyncState,
    TaskView,
    ToolResponseAction,
    error_event,
    tool_parts,
)
from a2a_hub.server.ws_follow import Follower
from a2a_hub.server.ws_rpc import RPC_SUBPROTOCOL, RpcConnection, error_frame, first_frame_caller
from a2a_hub.server.ws_socket import (
    CLOSE_GOING_AWAY,
    CLOSE_POLICY,
    CLOSE_TRY_AGAIN,
    ServerSocket,
)
from a2a_hub.stores.base import TaskEvent

__all__ = ["RPC_SUBPROTOCOL", "SUBPROTOCOL", "Connection", "websocket_endpoint"]

log = logging.getLogger("a2a_hub.server.ws")

#: The subprotocol the server selects when the client offers it.
SUBPROTOCOL = "a2a-hub"

#: The most tasks one ``sync_state`` may name (a client follows far fewer at once).
MAX_SYNC_TASKS = 1000

_ACTIONS = {"send_message", "cancel_task", "ping", "tool_response", "sync_state", "authenticate"}
#: Frames that may wait for the worker; one more gets an ``error`` event.
_INBOX = 64
#: The close reason of a socket closed for its idle timeout.
_IDLE_REASON = "idle timeout: send ping to stay connected"
#: Seconds a socket to a protected agent, opened without a key, has to send it.
_FIRST_FRAME_TIMEOUT = 10.0
_enc = msgspec.json.Encoder()
_any_dec = msgspec.json.Decoder()


class _Sockets:
    """Open sockets per agent and per key (one per app)."""

    def __init__(self) -> None:
        self.agents: Counter[str] = Counter()
        self.keys: Counter[str] = Counter()


def _sockets(websocket: WebSocket) -> _Sockets:
    state = websocket.app.state
    found: _Sockets | None = getattr(state, "ws_sockets", None)
    if found is None:
        found = state.ws_sockets = _Sockets()
    return found


def _chosen(offered: list[str]) -> str | None:
    """The subprotocol answered: the first of :data:`SUBPROTOCOL` and :data:`RPC_SUBPROTOCOL`
    the client offers (none: the event channel without a subprotocol)."""
    for name in offered:
        if name in (SUBPROTOCOL, RPC_SUBPROTOCOL):
            return name
    return None


async def websocket_endpoint(websocket: WebSocket) -> None:
    """``/a2a/{agent_id}/ws`` (and ``/ws`` for the default agent).

    The subprotocol ``a2a.jsonrpc.v1`` serves the JSON-RPC binding
    (:mod:`a2a_hub.server.ws_rpc`); anything else, the event channel of seed 003.
    """
    hub: Hub = websocket.app.state.hub
    subprotocol = _chosen(websocket.scope.get("subprotocols") or [])
    rpc = subprotocol == RPC_SUBPROTOCOL
    try:
        agent_id = websocket.path_params.get("agent_id")
        agent = hub.default_agent() if agent_id is None else hub.agent(agent_id)
    except A2AError as err:
        await websocket.accept(subprotocol)
        await _send_error_and_close(websocket, err, CLOSE_POLICY, rpc=rpc)
        return
    settings = hub.settings.server
    await websocket.accept(subprotocol)
    api_key: str | None
    if websocket.scope["state"].get(KEY_IN_FIRST_FRAME):
        first = await (
            _first_rpc_frame_caller(websocket, hub, agent)
            if rpc
            else _first_frame_caller(websocket, hub, agent)
        )
        if first is None:
            return
        caller, api_key = first
    else:
        caller, api_key = caller_of(websocket), key_of(websocket.scope)
    sockets = _sockets(websocket)
    key = caller.key_id or caller.principal
    if sockets.agents[agent.id] >= settings.ws_max_sockets or (
        key is not None and sockets.keys[key] >= settings.ws_max_sockets_per_key
    ):
        limit = (
            settings.ws_max_sockets
            if sockets.agents[agent.id] >= settings.ws_max_sockets
            else settings.ws_max_sockets_per_key
        )
        refusal = InvalidRequestError(
            f"too many open WebSockets (limit {limit}); close one or try again later",
            data={"limit": limit},
        )
        await _send_error_and_close(websocket, refusal, CLOSE_TRY_AGAIN, rpc=rpc)
        return
    sockets.agents[agent.id] += 1
    if key is not None:
        sockets.keys[key] += 1
    record = metrics.enabled()
    if record:
        metrics.WEBSOCKETS_OPEN.inc()
    try:
        connection = (RpcConnection if rpc else Connection)(websocket, hub, agent, caller)
        if api_key is not None and caller.key_id is not None:
            connection.recheck = functools.partial(authenticate, hub.auth, agent.id, api_key)
    except BaseException:
        _released(sockets, agent.id, key, record)
        raise
    # its place in the limits is released when it ends
    connection.on_end = functools.partial(_released, sockets, agent.id, key, record)
    # the socket's life runs outside the middleware stack (server/detached.py); the event
    # channel reads no header of the upgrade request from now on (ws_rpc's view of it does)
    if not detach(websocket.scope, connection.run, headers_done=not rpc):
        await connection.run()


def _released(sockets: _Sockets, agent_id: str, key: str | None, record: bool) -> None:
    if record:
        metrics.WEBSOCKETS_OPEN.dec()
    sockets.agents[agent_id] -= 1
    if key is not None:
        sockets.keys[key] -= 1


async def _first_rpc_frame_caller(
    websocket: WebSocket, hub: Hub, agent: HostedAgent
) -> tuple[Caller, str] | None:
    """:func:`_first_frame_caller` for the JSON-RPC subprotocol (its ``authenticate``)."""
    within = min(hub.settings.server.ws_idle_timeout, _FIRST_FRAME_TIMEOUT)
    found = await first_frame_caller(websocket, hub, agent, within)
    if isinstance(found, A2AError):
        await _send_error_and_close(websocket, found, CLOSE_POLICY, rpc=True)
        return None
    return found


async def _first_frame_caller(
    websocket: WebSocket, hub: Hub, agent: HostedAgent
) -> tuple[Caller, str] | None:
    """The caller of a socket to a protected agent opened without a key, and the key: its
    first frame must be ``authenticate`` with a usable key.  Otherwise an ``error`` event
    (401 / 403 equivalent: ``unauthenticated`` / ``permission_denied``), close 1008 and
    ``None``."""
    within = min(hub.settings.server.ws_idle_timeout, _FIRST_FRAME_TIMEOUT)
    try:
        async with asyncio.timeout(within):
            message = await websocket.receive()
    except TimeoutError:
        await _send_error_and_close(
            websocket, UnauthenticatedError(f"no API key within {within:g} s"), CLOSE_POLICY
        )
        return None
    if message["type"] == "websocket.disconnect":
        return None
    data = message.get("text") or message.get("bytes") or b""
    try:
        action = decode_action(data)
    except A2AError:
        action = None
    if not isinstance(action, Authenticate):
        refusal = UnauthenticatedError(
            f"agent {agent.id!r} requires an API key: send it first, "
            '{"action": "authenticate", "api_key": KEY} (or in the X-API-Key header, the '
            f"api_key query parameter or the subprotocol {KEY_SUBPROTOCOL}KEY)"
        )
        await _send_error_and_close(websocket, refusal, CLOSE_POLICY)
        return None
    try:
        caller = await authenticate(hub.auth, agent.id, action.api_key)
    except A2AError as err:
        await _send_error_and_close(websocket, err, CLOSE_POLICY)
        return None
    try:
        await websocket.send_text(_enc.encode(Authenticated(principal=caller.principal)).decode())
    except (WebSocketDisconnect, RuntimeError, OSError):
        return None
    return caller, action.api_key


async def _send_error_and_close(
    websocket: WebSocket, err: A2AError, code: int, *, rpc: bool = False
) -> None:
    frame = error_frame(None, err) if rpc else _enc.encode(error_event(err))
    with contextlib.suppress(Exception):
        await websocket.send_text(frame.decode())
        await websocket.close(code, err.message[:120])


class Connection(ServerSocket):
    """One client's WebSocket: its actions in, its tasks' events out."""

    __slots__ = (
        "_inbox",
        "_worker",
        "agent",
        "caller",
        "due",
        "engine",
        "followers",
        "hub",
        "idle_timeout",
        "max_frame",
        "slot",
        "views",
    )

    def __init__(self, websocket: WebSocket, hub: Hub, agent: HostedAgent, caller: Caller) -> None:
        settings = hub.settings.server
        super().__init__(websocket, settings.ws_send_timeout, "too slow: reconnect and sync_state")
        self.hub = hub
        self.agent = agent
        self.engine: TaskEngine = agent.engine
        self.caller = caller
        self.max_frame = settings.ws_max_frame_bytes
        self.idle_timeout = settings.ws_idle_timeout
        #: When the idle timeout ends the pending receive; its place in the timer wheel.
        self.due = math.inf
        self.slot: tuple[float, int] | None = None
        #: Task id -> what this connection sent of it.
        self.views: dict[str, TaskView] = {}
        #: Task id -> its follower (a callback while the task is quiet).
        self.followers: dict[str, Follower] = {}
        #: Frames received, waiting for the worker (which runs only while there are some).
        self._inbox: deque[str | bytes] | None = None
        self._worker: asyncio.Task[None] | None = None

    # --- sending ------------------------------------------------------------------

    async def send(self, event: ServerEvent) -> None:
        """Send one event; a client too slow to read it is cut loose."""
        if self._closed:
            return
        await self.send_text(_enc.encode(event))

    # --- the receive loop ---------------------------------------------------------

    async def run(self) -> None:
        """Serve actions until the client leaves, goes idle or is cut loose.

        Frames are read here and run one after the other by a worker, so that a
        client leaving is noticed at once even while an action is busy sending.  The
        worker is a task only while frames wait, and so is each followed task's follower
        (:mod:`a2a_hub.server.ws_follow`): an idle socket is this one coroutine.  The idle
        timeout is an entry in the loop's shared timer wheel (re-armed by each receive, no
        timer of its own), which ends the receive through :meth:`expire`.  No local holds
        the last frame while the next is awaited.
        """
        message: AsgiMessage | None
        try:
            while not self._closed:
                wheel().arm(self, self.idle_timeout)
                try:
                    async with asyncio.timeout(None) as self._receiving:
                        message = await self.ws.receive()
                except TimeoutError:
                    if not self._closed:  # else: cut loose while waiting
                        await self.close(CLOSE_GOING_AWAY, _IDLE_REASON)
                    break
                finally:
                    self._receiving = None
                taken, message = await self._take(message), None
                if not taken:
                    break
        except (WebSocketDisconnect, RuntimeError):
            self._closed = True
        finally:
            try:
                await self._wind_up()
            finally:
                self.ended()

    async def _wind_up(self) -> None:
        """Stop the worker and the followers; close the socket unless it is closed."""
        self._closed = True
        wheel().disarm(self)
        worker = self._worker
        if worker is not None:
            worker.cancel()
            with contextlib.suppress(BaseException):
                await worker
        for follower in list(self.followers.values()):
            await follower.stop()
        if not self._close_sent and self.ws.application_state is not WebSocketState.DISCONNECTED:
            await self.close(1000, "")

    def expire(self) -> None:
        """The wheel's call after ``idle_timeout`` quiet seconds: end the pending receive."""
        receiving = self._receiving
        if receiving is not None and not receiving.expired():
            with contextlib.suppress(RuntimeError):  # already expiring
                receiving.reschedule(asyncio.get_running_loop().time())

    async def _take(self, message: AsgiMessage) -> bool:
        """Queue a client frame for the worker; False when the socket is done."""
        if message["type"] == "websocket.disconnect":
            self._closed = True
            return False
        data: str | bytes | None = message.get("text")
        if data is None:
            data = message.get("bytes")
        if data is None:
            return True
        inbox = self._inbox
        if inbox is None:
            inbox = self._inbox = deque()
        if len(inbox) >= _INBOX:
            await self.send(
                error_event(InvalidRequestError(f"more than {_INBOX} actions wait; slow down"))
            )
            return True
        inbox.append(data)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._work())
        return True

    async def _work(self) -> None:
        """Run the waiting frames in order, then end (the next frame starts a new worker)."""
        inbox = self._inbox
        while inbox and not self._closed:
            data = inbox.popleft()
            if not await self.authorized():
                break
            await self.handle_frame(data)
        if not inbox:
            self._inbox = None  # an idle socket keeps no deque, and no finished task
            self._worker = None

    async def refused(self, err: A2AError) -> None:
        """The socket's key no longer holds: an ``error`` event before the close."""
        await self.send(error_event(err))

    async def handle_frame(self, data: str | bytes) -> None:
        """Decode and run one client frame; every failure becomes an ``error`` event."""
        size = len(data.encode() if isinstance(data, str) else data)
        if size > self.max_frame:
            await self.send(
                error_event(
                    PayloadTooLargeError(
                        f"frame of {size} bytes is over the limit of {self.max_frame} bytes",
                        data={"limit": self.max_frame},
                    )
                )
            )
            return
        try:
            action = decode_action(data)
        except A2AError as err:
            await self.send(error_event(err))
            return
        try:
            await self.dispatch(action)
        except Exception as exc:
            task_id = getattr(action, "task_id", None) or getattr(action, "global_task_id", None)
            message_id = getattr(action, "message_id", None)
            await self.report(exc, f"WebSocket {type(action).__name__}", task_id, message_id)

    async def report(
        self, exc: Exception, where: str, task_id: str | None, message_id: str | None
    ) -> None:
        """The binding's catch-all: an action or a followed task failed with ``exc``; the
        client gets its protocol error as an ``error`` event (the socket stays open)."""
        failure = protocol_error(exc, where)
        await self.send(error_event(failure, task_id=task_id, message_id=message_id))

    async def dispatch(self, action: ClientAction) -> None:
        """Run one decoded action."""
        if isinstance(action, Ping):
            await self.send(Pong(client_timestamp=action.client_timestamp))
        elif isinstance(action, SendMessage):
            await self.send_message(action)
        elif isinstance(action, CancelTask):
            await self.cancel_task(action.global_task_id)
        elif isinstance(action, ToolResponseAction):
            await self.tool_response(action)
        elif isinstance(action, Authenticate):
            raise InvalidRequestError(
                "authenticate is only the first frame of a socket opened without a key"
            )
        else:
            await self.sync_state(action)

    # --- actions ------------------------------------------------------------------

    async def send_message(self, action: SendMessage) -> None:
        """Start or continue a task; its events follow on this socket."""
        parts = list(action.parts or [])
        if action.text is not None:
            parts.insert(0, Part(text=action.text))
        if not parts:
            raise InvalidParamsError("send_message needs text or parts")
        message = Message(
            message_id=action.message_id,
            role=Role.USER,
            parts=parts,
            context_id=action.context_id,
            task_id=action.task_id,
            metadata=action.metadata,
        )
        await self._send(SendMessageRequest(message=message), action.message_id)

    async def _send(self, request: SendMessageRequest, message_id: str) -> None:
        stream = await self.engine.send_stream(request, caller=self.caller)
        view = self.views.get(stream.task_id)
        if view is None:
            view = self.views[stream.task_id] = TaskView(stream.task_id, message_id)
        else:
            view.message_id = message_id
        # a continued task's stream starts with its snapshot, still in the old state:
        # folded silently (the new turn's own statuses follow)
        self._follow(stream, view, silent_snapshot=True)

    async def cancel_task(self, task_id: str) -> None:
        """Cancel through the engine; the events come on the task's stream, or as a snapshot."""
        task = await self.engine.cancel_task(task_id, caller=self.caller)
        follower = self.followers.get(task_id)
        if follower is not None:
            # its last events go out before the next action runs (never swallowing a
            # cancellation of this worker, so a closed connection still ends)
            await asyncio.wait([follower.ended()], timeout=5.0)
            return
        await self._send_snapshot(task_id, task)

    async def tool_response(self, action: ToolResponseAction) -> None:
        """Continue the task waiting for this tool call with the client's result."""
        task = await self._waiting_for(action.tool_call_id)
        if task is None:
            raise InvalidParamsError(
                f"no task waits for tool call {action.tool_call_id!r}",
                data={"toolCallId": action.tool_call_id},
            )
        result = msgspec.to_builtins(action.result)
        part = Part(
            data={"kind": TOOL_RESPONSE_KIND, "tool_call_id": action.tool_call_id, "result": result}
        )
        message = Message(
            message_id=_new_id(),
            role=Role.USER,
            parts=[part],
            context_id=task.context_id,
            task_id=task.id,
        )
        await self._send(SendMessageRequest(message=message), message.message_id)

    async def _waiting_for(self, call_id: str) -> Task | None:
        """The task of this connection whose input-required status asks for ``call_id``."""
        for task_id in list(self.views):
            try:
                task = await self.engine.get_task(task_id, 0, caller=self.caller)
            except A2AError:
                continue
            if task.status.state is not TaskState.INPUT_REQUIRED:
                continue
            for data in tool_parts(task.status.message):
                if data.get("kind") == TOOL_CALL_KIND and data.get("tool_call_id") == call_id:
                    return task
        return None

    async def sync_state(self, action: SyncState) -> None:
        """Replay what the client missed, then follow live; ``sync_completed`` at the end."""
        positions = dict(action.last_seq or {})
        if len(positions) > MAX_SYNC_TASKS:
            raise InvalidParamsError(
                f"sync_state names {len(positions)} tasks; at most {MAX_SYNC_TASKS} at once",
                data={"limit": MAX_SYNC_TASKS},
            )
        if action.last_message_id and not positions:
            found = await self._find_message(action.last_message_id, action.context_id)
            if found is None:
                raise InvalidParamsError(
                    f"message {action.last_message_id!r} is not known here",
                    data={"messageId": action.last_message_id},
                )
            positions[found[0]] = found[1]
        if positions:
            for task_id, after in positions.items():
                await self._resume(task_id, after, action.last_message_id)
        else:
            for task in await self._open_tasks(action.context_id):
                await self._resume_snapshot(task.id)
        await self.send(
            SyncCompleted(tasks={tid: view.last_seq for tid, view in self.views.items()})
        )

    # --- following tasks ------------------------------------------------------------

    def _follow(self, stream: TaskStream, view: TaskView, *, silent_snapshot: bool = False) -> None:
        old = self.followers.pop(stream.task_id, None)
        if old is not None:
            old.cancel()
        snapshot_first = stream.after is None
        self.followers[stream.task_id] = Follower(
            self, stream, view, snapshot_first, silent_snapshot and snapshot_first
        )

    async def deliver(self, view: TaskView, event: TaskEvent, *, snapshot: bool = False) -> None:
        if not view.fresh(event):
            return
        for out in view.events(event, snapshot=snapshot):
            await self.send(out)

    async def _send_snapshot(self, task_id: str, task: Task | None = None) -> None:
        snap = await self.engine.log.snapshot(task_id)
        view = self.views.get(task_id)
        if view is None:
            view = self.views[task_id] = TaskView(task_id)
        if snap.seq > view.last_seq:
            await self.deliver(view, snap, snapshot=True)

    async def _resume(self, task_id: str, after: int, message_id: str | None) -> None:
        """Replay the events of a task after ``after``, then follow it while it runs."""
        await self.engine.get_task(task_id, 0, caller=self.caller)  # visibility first
        view = self.views.get(task_id)
        if view is None:
            view = self.views[task_id] = TaskView(task_id, message_id)
            await self._rebuild(view, after)
        view.last_seq = max(view.last_seq, after)
        if task_id in self.followers:
            return  # followed live already: it skips what was sent
        stream = await self.engine.subscribe(task_id, after, caller=self.caller)
        while stream.ready:  # the replay that is at hand goes out before sync_completed
            try:
                event = await stream.next()
            except StopAsyncIteration:
                return
            if event is not None:
                await self.deliver(view, event)
        self._follow(stream, view)

    async def _resume_snapshot(self, task_id: str) -> None:
        """Send a task's current state, and follow it if it runs."""
        view = self.views.get(task_id)
        if view is None:
            view = self.views[task_id] = TaskView(task_id)
        if task_id in self.followers:
            return
        try:
            stream = await self.engine.subscribe(task_id, caller=self.caller)
        except A2AError:
            await self._send_snapshot(task_id)
            return
        self._follow(stream, view)

    async def _rebuild(self, view: TaskView, upto: int) -> None:
        """Fold the events up to ``upto`` into ``view`` silently (the reply so far)."""
        after = 0
        with contextlib.suppress(A2AError):
            while after < upto:
                page = await self.engine.log.read(view.task_id, after)
                if not page:
                    break
                for event in page:
                    if event.seq > upto:
                        return
                    view.events(event)
                    after = event.seq

    async def _find_message(
        self, message_id: str, context_id: str | None
    ) -> tuple[str, int] | None:
        """(task id, seq before the event carrying ``message_id``) among the caller's tasks."""
        page = await self.engine.list_tasks(
            ListTasksRequest(context_id=context_id, page_size=100), caller=self.caller
        )
        live = [  # running tasks whose first write may not be listed yet
            task
            for run in list(self.engine.runs.values())
            if self.caller.sees(run.owner) and (task := run.stored()) is not None
        ]
        for task in [*live, *page.tasks]:
            if not any(m.message_id == message_id for m in task.history or []):
                continue
            after = 0
            while True:
                events = await self.engine.log.read(task.id, after)
                if not events:
                    break
                for event in events:
                    payload = event.event
                    if (
                        payload.message is not None and payload.message.message_id == message_id
                    ) or (
                        payload.task is not None
                        and any(m.message_id == message_id for m in payload.task.history or [])
                    ):
                        return task.id, event.seq - 1
                    after = event.seq
            return task.id, 0
        return None

    async def _open_tasks(self, context_id: str | None) -> list[Task]:
        """The tasks still open: this connection's, or the caller's in ``context_id``."""
        if context_id is None and self.views:
            tasks = []
            for task_id in self.views:
                with contextlib.suppress(A2AError):
                    tasks.append(await self.engine.get_task(task_id, 0, caller=self.caller))
        else:
            page = await self.engine.list_tasks(
                ListTasksRequest(context_id=context_id, page_size=100, history_length=0),
                caller=self.caller,
            )
            listed = {t.id for t in page.tasks}
            tasks = [
                *(
                    task
                    for run in list(self.engine.runs.values())
                    if run.task_id not in listed
                    and self.caller.sees(run.owner)
                    and (context_id is None or run.context_id == context_id)
                    and (task := run.stored()) is not None
                ),
                *page.tasks,
            ]
        return [t for t in tasks if not t.status.state.terminal]


def decode_action(data: str | bytes) -> ClientAction:
    """A client frame as an action, or the protocol error saying what is wrong with it."""
    try:
        raw: Any = fieldnames.decode_with(
            _any_dec, data if isinstance(data, bytes) else data.encode()
        )
    except msgspec.DecodeError as exc:
        raise JSONParseError(f"frame is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise InvalidRequestError("frame must be a JSON object with an 'action'")
    name = raw.get("action")
    if not isinstance(name, str):
        raise InvalidRequestError("frame has no 'action' string")
    if name not in _ACTIONS:
        raise MethodNotFoundError(
            f"unknown action {name!r}; actions: {', '.join(sorted(_ACTIONS))}",
            data={"action": name},
        )
    try:
        action: ClientAction = msgspec.convert(raw, ClientAction)
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(f"{name}: {exc}", data={"action": name}) from None
    return action


def _new_id() -> str:
    from a2a_hub.engine.state import new_id

    return new_id()
