"""``/ui/api``: the few JSON routes the console needs that the public APIs lack.

Mounted like the admin API (a hub mount behind the agents' middleware list), so the
caller is the key's (``X-API-Key`` or ``Authorization: Bearer``), anonymous without one,
401 for a bad one.  What a caller sees here is what it may see through A2A:

* agents: those it may call (a key limited to some agents sees those; without a key on a
  hub with keys, only the agents that need none);
* tasks: its own, or every task with ``read-all`` / ``admin``; **without a key on a hub
  with keys, none** (task routes answer 401).  On a hub without keys everyone is
  anonymous and sees everything, as through A2A.

Routes::

    GET  /ui/api/session                        who the caller is and what the page may show
    GET  /ui/api/agents                         visible agents, running tasks here, counts by state
    GET  /ui/api/feed[?agent=]                  SSE: every event of the visible tasks, live
    GET  /ui/api/tasks/{agent}/{task}/deliveries  push deliveries: pending, dead, delivered
    GET  /ui/api/conversations[?agent=]         the caller's recorded conversations
    POST /ui/api/inspect                        {"url"}: an A2A agent's card, checked (inspector)
    POST /ui/api/inspect/call                   {"url", "body", "version"}: a call relayed to it
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from a2a_hub._version import __version__
from a2a_hub.engine.caller import Caller
from a2a_hub.engine.pubsub import EventsLostError, Feed, FeedItem
from a2a_hub.protocol.errors import AgentNotFoundError, UnauthenticatedError
from a2a_hub.protocol.types import ListTasksRequest, TaskState
from a2a_hub.server.admin import delivery_json
from a2a_hub.server.caller import caller_of
from a2a_hub.server.console.inspector import inspect_call, inspect_card
from a2a_hub.server.errors import JSON, protocol_endpoint
from a2a_hub.server.http import hub_of
from a2a_hub.server.hub import HostedAgent, Hub
from a2a_hub.server.sse import until_shutdown

__all__ = ["UI_API_ROUTES", "visible_agents"]

_enc = msgspec.json.Encoder()
_STATES = [s for s in TaskState if s is not TaskState.UNSPECIFIED]
#: Events a feed subscriber may fall behind by before it is told to list again.
FEED_BUFFER = 1024


def _json(value: Any, status: int = 200) -> Response:
    return Response(_enc.encode(value), status, media_type=JSON)


def visible_agents(hub: Hub, caller: Caller) -> list[HostedAgent]:
    """The hosted agents ``caller`` may call: its key's agents (all when unlimited), and
    without a key only those that need none."""
    found = []
    for agent in hub.agents.values():
        if caller.agents is not None and agent.id not in caller.agents:
            continue
        if caller.anonymous and hub.auth.requires_key(agent.id):
            continue
        found.append(agent)
    return found


def sees_tasks(hub: Hub, caller: Caller) -> bool:
    """Whether the console shows ``caller`` any task: not to anonymous callers of a hub
    with keys (they see only the public agents)."""
    return not (caller.anonymous and hub.registry is not None)


def _require_tasks(hub: Hub, caller: Caller) -> None:
    if not sees_tasks(hub, caller):
        raise UnauthenticatedError("Tasks are shown to a caller with an API key: enter one")


def _agent(hub: Hub, caller: Caller, agent_id: str) -> HostedAgent:
    agent = hub.agents.get(agent_id)
    if agent is None or agent not in visible_agents(hub, caller):
        raise AgentNotFoundError(f"No agent {agent_id!r} here for this caller")
    return agent


@protocol_endpoint
async def session(request: Request) -> Response:
    """``GET /session``: the caller and what the console may show it."""
    hub, caller = hub_of(request), caller_of(request)
    return _json(
        {
            "principal": caller.principal,
            "keyId": caller.key_id,
            "scopes": sorted(caller.scopes),
            "agents": None if caller.agents is None else sorted(caller.agents),
            "keys": hub.registry is not None,
            "admin": hub.registry is not None and "admin" in caller.scopes,
            "tasks": sees_tasks(hub, caller),
            "inspector": sees_tasks(hub, caller),
            "defaultAgent": hub.default_agent_id,
            "version": __version__,
        }
    )


@protocol_endpoint
async def agents(request: Request) -> Response:
    """``GET /agents``: the visible agents with the tasks running here and, to a caller who
    sees tasks, its tasks' counts by state (ListTasks' ``totalSize`` per state)."""
    hub, caller = hub_of(request), caller_of(request)
    shown = sees_tasks(hub, caller)
    out = []
    for agent in visible_agents(hub, caller):
        counts: dict[str, int] | None = None
        if shown:
            counts = {}
            for state in _STATES:
                page = await agent.engine.list_tasks(
                    ListTasksRequest(status=state, page_size=1), caller=caller
                )
                counts[state.label] = page.total_size
        out.append(
            {
                "id": agent.id,
                "kind": agent.spec.kind,
                "requiresKey": hub.auth.requires_key(agent.id),
                "streaming": agent.streaming,
                "running": len(agent.engine.runs) if shown else None,
                "counts": counts,
            }
        )
    return _json({"agents": out, "defaultAgent": hub.default_agent_id})


def _frame(agent_id: str, item: FeedItem, caller: Caller) -> bytes:
    """One feed item as an SSE frame for the console."""
    payload = item.event.event
    kind, state, stamp = "message", None, None
    if payload.task is not None:
        kind, state, stamp = "task", payload.task.status.state, payload.task.status.timestamp
    elif payload.status_update is not None:
        status = payload.status_update.status
        kind, state, stamp = "status", status.state, status.timestamp
    elif payload.artifact_update is not None:
        kind = "artifact"
    body: dict[str, Any] = {
        "agent": agent_id,
        "taskId": item.task_id,
        "contextId": item.context_id,
        "seq": item.event.seq,
        "kind": kind,
        "state": None if state is None else state.label,
        "time": stamp or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if caller.sees_all and not caller.anonymous:
        body["owner"] = item.owner
    return b"event: task\ndata: " + _enc.encode(body) + b"\n\n"


async def _pump(agent_id: str, feed: Feed, caller: Caller, queue: asyncio.Queue[bytes]) -> None:
    """One agent's feed into the stream's queue; a feed or queue that overflows says
    ``lost`` (the page lists again); the end of the feed (its engine closed) ends it."""
    try:
        while True:
            try:
                item = await feed.next()
            except EventsLostError:
                frame = b"event: lost\ndata: {}\n\n"
            else:
                assert item is not None
                frame = _frame(agent_id, item, caller)
            if queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
                frame = b"event: lost\ndata: {}\n\n"
            queue.put_nowait(frame)
    except StopAsyncIteration:
        queue.put_nowait(b"")  # ends the stream: the page reconnects to the new engine


@protocol_endpoint
async def feed(request: Request) -> Response:
    """``GET /feed[?agent=ID]``: the agent-wide feeds of the visible agents (or one) as
    Server-Sent Events, each event ``task`` with the task id, seq, kind and state; ``lost``
    when events were dropped (list again); a comment as heartbeat."""
    hub, caller = hub_of(request), caller_of(request)
    _require_tasks(hub, caller)
    wanted = request.query_params.get("agent")
    chosen = [_agent(hub, caller, wanted)] if wanted else visible_agents(hub, caller)
    heartbeat = hub.settings.server.sse_heartbeat
    feeds = [(a.id, a.engine.feed(FEED_BUFFER, caller=caller)) for a in chosen]

    async def frames() -> AsyncIterator[bytes]:
        queue: asyncio.Queue[bytes] = asyncio.Queue(FEED_BUFFER)
        pumps = [asyncio.ensure_future(_pump(i, f, caller, queue)) for i, f in feeds]
        try:
            yield b"event: ready\ndata: {}\n\n"
            while True:
                frame = None
                async with until_shutdown() as shutdown:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(heartbeat):
                            frame = await queue.get()
                if shutdown.cut or frame == b"":
                    return  # the instance shuts down (the page reconnects), or an engine closed
                yield frame if frame is not None else b": keep-alive\n\n"
        finally:
            for pump in pumps:
                pump.cancel()
            for _, f in feeds:
                f.close()

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)


@protocol_endpoint
async def deliveries(request: Request) -> Response:
    """``GET /tasks/{agent}/{task}/deliveries``: the task's push deliveries still in the
    outbox (pending, dead, with attempts and last error) and those this instance sent
    lately (the outbox forgets a sent one), to a caller who may see the task."""
    hub, caller = hub_of(request), caller_of(request)
    _require_tasks(hub, caller)
    agent = _agent(hub, caller, request.path_params["agent_id"])
    task_id = request.path_params["task_id"]
    await agent.engine.get_task(task_id, 0, caller=caller)  # not found unless visible
    found = await hub.store.task_deliveries(agent.id, task_id)
    sent = hub.push.sent_of(agent.id, task_id) if hub.push is not None else []
    return _json(
        {
            "pending": [delivery_json(d) for d in found if not d.dead],
            "dead": [delivery_json(d) for d in found if d.dead],
            "delivered": [{**delivery_json(d), "at": at} for d, at in sent],
        }
    )


@protocol_endpoint
async def conversations(request: Request) -> Response:
    """``GET /conversations[?agent=ID]``: the recorded conversations the caller may read
    (its own; all with ``read-all`` / ``admin``), most recent first; their messages come
    from each agent's ``GET …/contexts/{id}/messages``."""
    hub, caller = hub_of(request), caller_of(request)
    _require_tasks(hub, caller)
    if hub.registry is None:
        return _json({"conversations": [], "recorded": False})
    wanted = request.query_params.get("agent") or None
    visible = {a.id for a in visible_agents(hub, caller)}
    if wanted is not None and wanted not in visible:
        raise AgentNotFoundError(f"No agent {wanted!r} here for this caller")
    owner = None if caller.sees_all else caller.principal
    found = await hub.registry.list_conversations(wanted, owner, limit=200)
    return _json({"conversations": [c for c in found if c["agentId"] in visible], "recorded": True})


#: The routes of ``/ui/api`` (mounted by app.py like the admin API).
UI_API_ROUTES: list[BaseRoute] = [
    Route("/session", session, methods=["GET"]),
    Route("/agents", agents, methods=["GET"]),
    Route("/feed", feed, methods=["GET"]),
    Route("/tasks/{agent_id}/{task_id}/deliveries", deliveries, methods=["GET"]),
    Route("/conversations", conversations, methods=["GET"]),
    Route("/inspect", inspect_card, methods=["POST"]),
    Route("/inspect/call", inspect_call, methods=["POST"]),
]
