"""The admin API at ``/admin/v1``: agents, API keys, tasks and MCP servers, as JSON.

Every route needs a key with the ``admin`` scope (``X-API-Key`` or ``Authorization:
Bearer``): 401 without one or with a bad one, 403 for a key without the scope.
The API is off (404) on a hub without a registry, and usable only once an admin
key exists (``a2a-hub keys create --all-agents --scope admin``).  The caller is the
one the app's middleware built, as for every other route (:func:`caller_of`; the
mount marks its routes as the hub's own, so no agent's policy applies), and its
scopes are checked here.

Errors have one shape, the A2A HTTP+JSON error body::

    {"error": {"code": 404, "status": "NOT_FOUND", "message": "…",
               "details": [{"@type": "…ErrorInfo", "reason": "NOT_FOUND", …}]}}

Routes (``GET /admin/v1/`` lists them)::

    GET    /admin/v1/agents                  the registry's agents (with "hosted" here)
    POST   /admin/v1/agents                  create (201): {"id", "kind", "options", "auth", …}
    GET    /admin/v1/agents/{id}
    PUT    /admin/v1/agents/{id}             create or replace
    DELETE /admin/v1/agents/{id}
    GET    /admin/v1/keys[?principal=]       keys (never the key itself)
    POST   /admin/v1/keys                    {"agents": [...] | null, "scopes", "name",
                                             "principal", "expires": "30d"} -> 201 {"key", …}
    DELETE /admin/v1/keys/{id}               revoke
    GET    /admin/v1/tasks?agent=&owner=&contextId=&state=&maxAgeSeconds=&pageSize=&pageToken=
    DELETE /admin/v1/tasks/{agent}/{taskId}
    GET    /admin/v1/conversations[?agent=&owner=]
    GET    /admin/v1/conversations/{agent}/{contextId}/messages[?pageSize=&pageToken=]
    GET    /admin/v1/mcp-servers
    POST   /admin/v1/mcp-servers             {"name", "transport", "command" | "url", "headers"}
    GET|PUT|DELETE /admin/v1/mcp-servers/{name}
    GET    /admin/v1/push/dead[?limit=]      push deliveries that gave up, with their last error
    POST   /admin/v1/push/dead:requeue       {"ids": [...]} (none: every dead one)
                                             -> {"requeued": n}

An agent created, changed or removed here is applied on this instance at once
and on every instance sharing the registry within a second.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from a2a_hub.agents.loader import admit, build_executor
from a2a_hub.protocol import fieldnames
from a2a_hub.protocol.errors import (
    A2AError,
    AgentNotFoundError,
    InvalidParamsError,
    PermissionDeniedError,
    ResourceNotFoundError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnauthenticatedError,
)
from a2a_hub.protocol.types import TaskState
from a2a_hub.registry import McpServer, Registry, RegistryError, UnknownEntryError, parse_duration
from a2a_hub.server.admin_guard import check_agent, check_mcp_server
from a2a_hub.server.caller import caller_of
from a2a_hub.server.errors import JSON, WWW_AUTHENTICATE, protocol_error, rest_error
from a2a_hub.server.http import hub_of
from a2a_hub.server.hub import Hub
from a2a_hub.settings import AgentSpec, SettingsError
from a2a_hub.stores.base import Delivery, TaskQuery

__all__ = ["ADMIN_ROUTES", "delivery_json"]

_enc = msgspec.json.Encoder()
_BY_LABEL = {state.label: state for state in TaskState}

Handler = Callable[[Request, Hub, Registry], Awaitable[Any]]


def _json(value: Any, status: int = 200) -> Response:
    return Response(_enc.encode(value), status, media_type=JSON)


def _admin_registry(request: Request, hub: Hub) -> Registry:
    """The registry, once the request's caller is known to hold the admin scope."""
    registry = hub.registry
    if registry is None:
        raise ResourceNotFoundError(
            "The admin API is off: this hub has no registry (configure auth, e.g. --registry URL)"
        )
    caller = caller_of(request)
    if caller.anonymous:
        raise UnauthenticatedError(
            "The admin API needs a key with the admin scope (X-API-Key or Authorization: Bearer)"
        )
    if "admin" not in caller.scopes:
        raise PermissionDeniedError("This API key has no admin scope")
    return registry


def admin(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """An admin endpoint: the admin key checked, the result (or error) encoded."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        try:
            hub = hub_of(request)
            registry = _admin_registry(request, hub)
            _refuse_nul([*request.path_params.values(), *request.query_params.values()])
            result = await handler(request, hub, registry)
        except UnknownEntryError as exc:
            return rest_error(ResourceNotFoundError(str(exc)))
        except (RegistryError, SettingsError) as exc:
            return rest_error(InvalidParamsError(str(exc)))
        except Exception as exc:
            response = rest_error(protocol_error(exc, f"{request.method} {request.url.path}"))
            if response.status_code == 401:
                response.headers["WWW-Authenticate"] = WWW_AUTHENTICATE
            return response
        if isinstance(result, Response):
            return result
        return _json(result)

    return endpoint


def _refuse_nul(value: Any) -> None:
    """No NUL character in any string of ``value`` (PostgreSQL cannot store one, and no
    name, id or URL needs one): a clear 400 instead of a database error."""
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidParamsError("strings must not contain NUL characters (\\u0000)")
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_nul(key)
            _refuse_nul(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _refuse_nul(item)


async def _body(request: Request, type_: type[Any]) -> Any:
    raw = await request.body()
    if b"\\u0000" in raw:  # only then decode twice, to find it in a string
        with contextlib.suppress(msgspec.DecodeError):
            _refuse_nul(msgspec.json.decode(raw))
    try:
        return fieldnames.decode_with(msgspec.json.Decoder(type_), raw or b"{}")
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(f"bad request body: {exc}") from None
    except msgspec.DecodeError as exc:
        raise InvalidParamsError(f"request body must be JSON: {exc}") from None


# --- agents ---------------------------------------------------------------------------


def _agent_json(spec: AgentSpec, hub: Hub) -> dict[str, Any]:
    return {**msgspec.to_builtins(spec), "hosted": spec.id in hub.agents}


async def _save_agent(hub: Hub, registry: Registry, spec: AgentSpec) -> None:
    """Store an agent in the registry and host it here at once (other instances follow
    the registry); its executor is built once, first: what no instance could host is
    refused (SettingsError: 400) before anything is stored, and so is what the admin API
    may not name (:mod:`a2a_hub.server.admin_guard`), a URL the outbound policy refuses, a
    remote card that fails its signature check, and an agent cycle."""
    if not spec.id or "/" in spec.id:
        raise InvalidParamsError(f"agent id {spec.id!r} must be non-empty and contain no '/'")
    hosted = hub.agents.get(spec.id)
    if hosted is not None and hosted.spec == spec:  # hosted as it is: nothing to build
        await registry.put_agent(spec)
    else:
        await check_agent(spec, hub.settings.auth, hub.outbound)
        executor = build_executor(spec, links=hub.links)
        try:
            await admit(spec, executor)
            hub.check_cycle(spec.id, executor)
            await registry.put_agent(spec)
        except BaseException:
            await executor.close()
            raise
        hub.add(spec, executor)
    await _follow(hub)


async def _follow(hub: Hub) -> None:
    """Apply the registry's other changes here too, at once."""
    if hub.follower is not None:
        await hub.follower.sync()


@admin
async def list_agents(request: Request, hub: Hub, registry: Registry) -> Any:
    """``GET /agents``."""
    return {"agents": [_agent_json(s, hub) for s in await registry.list_agents()]}


@admin
async def create_agent(request: Request, hub: Hub, registry: Registry) -> Any:
    """``POST /agents``: 201, or 409-like 400 if the id is taken (use PUT to replace)."""
    spec: AgentSpec = await _body(request, AgentSpec)
    if await registry.get_agent(spec.id) is not None:
        raise InvalidParamsError(f"agent {spec.id!r} exists; PUT /admin/v1/agents/{spec.id}")
    await _save_agent(hub, registry, spec)
    return _json(_agent_json(spec, hub), 201)


@admin
async def get_agent(request: Request, hub: Hub, registry: Registry) -> Any:
    """``GET /agents/{id}``."""
    agent_id = request.path_params["agent_id"]
    spec = await registry.get_agent(agent_id)
    if spec is None:
        raise AgentNotFoundError(f"No agent {agent_id!r} in the registry")
    return _agent_json(spec, hub)


@admin
async def put_agent(request: Request, hub: Hub, registry: Registry) -> Any:
    """``PUT /agents/{id}``: create or replace."""
    body: dict[str, Any] = await _body(request, dict[str, Any])
    body["id"] = request.path_params["agent_id"]
    try:
        spec = msgspec.convert(body, AgentSpec)
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(f"bad agent: {exc}") from None
    await _save_agent(hub, registry, spec)
    return _agent_json(spec, hub)


@admin
async def delete_agent(request: Request, hub: Hub, registry: Registry) -> Any:
    """``DELETE /agents/{id}``."""
    agent_id = request.path_params["agent_id"]
    if not await registry.delete_agent(agent_id):
        raise AgentNotFoundError(f"No agent {agent_id!r} in the registry")
    await _follow(hub)
    return {"deleted": agent_id}


# --- keys -----------------------------------------------------------------------------


class _NewKey(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    agents: list[str] | None = None
    scopes: list[str] | None = None
    name: str | None = None
    principal: str | None = None
    expires: str | None = None


@admin
async def list_keys(request: Request, hub: Hub, registry: Registry) -> Any:
    """``GET /keys``."""
    keys = await registry.list_keys(request.query_params.get("principal") or None)
    return {"keys": [msgspec.to_builtins(k) for k in keys]}


@admin
async def create_key(request: Request, hub: Hub, registry: Registry) -> Any:
    """``POST /keys``: the key, shown this once."""
    new: _NewKey = await _body(request, _NewKey)
    key, info = await registry.create_key(
        principal=new.principal,
        agents=new.agents,
        scopes=new.scopes,
        name=new.name,
        expires_in=parse_duration(new.expires) if new.expires else None,
    )
    return _json({"key": key, **msgspec.to_builtins(info)}, 201)


@admin
async def revoke_key(request: Request, hub: Hub, registry: Registry) -> Any:
    """``DELETE /keys/{id}``: revoked here at once (and elsewhere within the cache bound)."""
    info = await registry.revoke_key(request.path_params["key_id"])
    if hub.authenticator is not None:
        hub.authenticator.forget()
    return msgspec.to_builtins(info)


# --- tasks ----------------------------------------------------------------------------


def _float(request: Request, name: str) -> float | None:
    value = request.query_params.get(name)
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise InvalidParamsError(f"{name} must be a finite number, not {value!r}")
    return number


def _int(request: Request, name: str, default: int, *, low: int = 0, high: int) -> int:
    """The integer query parameter ``name`` (``default`` when absent), within low..high."""
    number = _float(request, name)
    return default if number is None else max(low, min(int(number), high))


@admin
async def search_tasks(request: Request, hub: Hub, registry: Registry) -> Any:
    """``GET /tasks?agent=…``: newest first, paged."""
    q = request.query_params
    agent_id = q.get("agent")
    if not agent_id:
        raise InvalidParamsError("say which agent: /admin/v1/tasks?agent=ID")
    state = None
    if q.get("state"):
        state = _BY_LABEL.get(q["state"]) or _BY_LABEL.get("TASK_STATE_" + q["state"].upper())
        if state is None:
            raise InvalidParamsError(f"unknown state {q['state']!r}")
    age = _float(request, "maxAgeSeconds")
    size = _int(request, "pageSize", 50, low=1, high=1000)
    query = TaskQuery(
        context_id=q.get("contextId") or None,
        state=state,
        owner=q.get("owner") or None,
        updated_after=None if age is None else time.time() - age,
        page_size=size,
        page_token=q.get("pageToken") or None,
    )
    page = await hub.store.list_tasks(agent_id, query)
    return msgspec.to_builtins(page)


@admin
async def delete_task(request: Request, hub: Hub, registry: Registry) -> Any:
    """``DELETE /tasks/{agent}/{taskId}``: a running task is canceled first."""
    agent_id, task_id = request.path_params["agent_id"], request.path_params["task_id"]
    agent = hub.agents.get(agent_id)
    if agent is not None and task_id in agent.engine.runs:
        with contextlib.suppress(TaskNotFoundError, TaskNotCancelableError):
            await agent.engine.cancel_task(task_id)
    if not await hub.store.delete_task(agent_id, task_id):
        raise TaskNotFoundError(f"No task {task_id!r} of agent {agent_id!r}")
    return {"deleted": task_id}


# --- conversations --------------------------------------------------------------------


@admin
async def list_conversations(request: Request, hub: Hub, registry: Registry) -> Any:
    """``GET /conversations?agent=&owner=``: most recently updated first."""
    q = request.query_params
    found = await registry.list_conversations(q.get("agent") or None, q.get("owner") or None)
    return {"conversations": found}


@admin
async def conversation_history(request: Request, hub: Hub, registry: Registry) -> Any:
    """``GET /conversations/{agent}/{contextId}/messages?pageSize=&pageToken=``."""
    size = _int(request, "pageSize", 100, low=1, high=1000)
    after = _int(request, "pageToken", 0, high=2**63 - 1)
    found = await registry.conversation(
        request.path_params["agent_id"], request.path_params["context_id"], after=after, limit=size
    )
    if found is None:
        raise ResourceNotFoundError(f"No conversation {request.path_params['context_id']!r}")
    owner, page = found
    return {
        "owner": owner,
        "messages": [msgspec.to_builtins(m) for _, m in page],
        "nextPageToken": str(page[-1][0]) if len(page) == size else "",
    }


# --- push deliveries ------------------------------------------------------------------


def delivery_json(d: Delivery) -> dict[str, Any]:
    """A delivery as the admin API and the console show it (with its stable id)."""
    return {"id": d.id, **msgspec.to_builtins(d)}


class _Requeue(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    ids: list[str] | None = None


@admin
async def dead_deliveries(request: Request, hub: Hub, registry: Registry) -> Any:
    """``GET /push/dead``: the deliveries that gave up, oldest due first."""
    raw = request.query_params.get("limit") or "1000"
    if not raw.isdigit():
        raise InvalidParamsError(f"limit must be a whole number, not {raw!r}")
    limit = max(1, min(int(raw), 10_000))
    return {"deliveries": [delivery_json(d) for d in await hub.store.dead_deliveries(limit)]}


@admin
async def requeue_deliveries(request: Request, hub: Hub, registry: Registry) -> Any:
    """``POST /push/dead:requeue``: these dead deliveries (or all) queued again, sent at once
    by the running dispatcher."""
    body: _Requeue = await _body(request, _Requeue)
    count = await hub.store.requeue_deliveries(body.ids)
    if count and hub.push is not None:
        hub.push.wake()
    return {"requeued": count}


# --- MCP servers ----------------------------------------------------------------------


@admin
async def list_mcp(request: Request, hub: Hub, registry: Registry) -> Any:
    """``GET /mcp-servers``."""
    return {"mcpServers": [msgspec.to_builtins(s) for s in await registry.list_mcp_servers()]}


@admin
async def create_mcp(request: Request, hub: Hub, registry: Registry) -> Any:
    """``POST /mcp-servers``."""
    server: McpServer = await _body(request, McpServer)
    if await registry.get_mcp_server(server.name) is not None:
        raise InvalidParamsError(f"MCP server {server.name!r} exists; use PUT to replace it")
    await check_mcp_server(server, hub.settings.auth, hub.outbound)
    await registry.put_mcp_server(server)
    return _json(msgspec.to_builtins(server), 201)


@admin
async def get_mcp(request: Request, hub: Hub, registry: Registry) -> Any:
    """``GET /mcp-servers/{name}``."""
    server = await registry.get_mcp_server(request.path_params["name"])
    if server is None:
        raise ResourceNotFoundError(f"No MCP server {request.path_params['name']!r}")
    return msgspec.to_builtins(server)


@admin
async def put_mcp(request: Request, hub: Hub, registry: Registry) -> Any:
    """``PUT /mcp-servers/{name}``: create or replace."""
    body: dict[str, Any] = await _body(request, dict[str, Any])
    body["name"] = request.path_params["name"]
    try:
        server = msgspec.convert(body, McpServer)
    except msgspec.ValidationError as exc:
        raise InvalidParamsError(f"bad MCP server: {exc}") from None
    await check_mcp_server(server, hub.settings.auth, hub.outbound)
    await registry.put_mcp_server(server)
    return msgspec.to_builtins(server)


@admin
async def delete_mcp(request: Request, hub: Hub, registry: Registry) -> Any:
    """``DELETE /mcp-servers/{name}``."""
    if not await registry.delete_mcp_server(request.path_params["name"]):
        raise ResourceNotFoundError(f"No MCP server {request.path_params['name']!r}")
    return {"deleted": request.path_params["name"]}


async def _index(request: Request) -> Response:
    """``GET /admin/v1/``: the routes of the admin API (what this module's docstring lists);
    ``/admin/v1`` redirects here.  With no registry, the answer says the API is off."""
    if hub_of(request).registry is None:
        return rest_error(
            ResourceNotFoundError(
                "The admin API is off: this hub has no registry (configure auth, e.g. "
                "--registry URL)"
            )
        )
    routes = [
        f"{method} /admin/v1{route.path}"
        for route in ADMIN_ROUTES
        if isinstance(route, Route) and route.path not in ("/", "/{rest:path}")
        for method in sorted(route.methods or ())
        if method != "HEAD"
    ]
    return _json({"routes": routes, "auth": "a key with the admin scope"})


async def _unknown(request: Request) -> Response:
    err: A2AError = ResourceNotFoundError(f"No admin route {request.url.path}")
    return rest_error(err)


#: The admin routes, mounted at ``/admin/v1``.
ADMIN_ROUTES: list[BaseRoute] = [
    Route("/", _index, methods=["GET"]),
    Route("/agents", list_agents, methods=["GET"]),
    Route("/agents", create_agent, methods=["POST"]),
    Route("/agents/{agent_id}", get_agent, methods=["GET"]),
    Route("/agents/{agent_id}", put_agent, methods=["PUT"]),
    Route("/agents/{agent_id}", delete_agent, methods=["DELETE"]),
    Route("/keys", list_keys, methods=["GET"]),
    Route("/keys", create_key, methods=["POST"]),
    Route("/keys/{key_id}", revoke_key, methods=["DELETE"]),
    Route("/tasks", search_tasks, methods=["GET"]),
    Route("/tasks/{agent_id}/{task_id}", delete_task, methods=["DELETE"]),
    Route("/conversations", list_conversations, methods=["GET"]),
    Route("/conversations/{agent_id}/{context_id}/messages", conversation_history, methods=["GET"]),
    Route("/mcp-servers", list_mcp, methods=["GET"]),
    Route("/mcp-servers", create_mcp, methods=["POST"]),
    Route("/mcp-servers/{name}", get_mcp, methods=["GET"]),
    Route("/mcp-servers/{name}", put_mcp, methods=["PUT"]),
    Route("/mcp-servers/{name}", delete_mcp, methods=["DELETE"]),
    Route("/push/dead", dead_deliveries, methods=["GET"]),
    Route("/push/dead:requeue", requeue_deliveries, methods=["POST"]),
    Route("/{rest:path}", _unknown, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
]
