"""What every binding reads from an HTTP request: its hub, its agent, its body, its version.

The hub is the app's (``request.app.state.hub``, set by :func:`create_app`); the
agent is looked up on each request, so agents added or removed while serving are
found, or not, at once.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request

from a2a_hub import metrics
from a2a_hub.protocol.errors import PayloadTooLargeError
from a2a_hub.server.hub import HostedAgent, Hub

__all__ = ["a2a_version", "agent_of", "base_url", "hub_of", "is_json", "read_body"]


def hub_of(request: Request) -> Hub:
    """The hub this app serves."""
    hub: Hub = request.app.state.hub
    return hub


def agent_of(request: Request, hub: Hub) -> HostedAgent:
    """The agent addressed: ``/a2a/{agent_id}/…``, or the default agent at the root alias."""
    agent_id = request.scope["path_params"].get("agent_id")
    if agent_id is not None:
        return hub.agent(agent_id)
    agent = hub.default_agent()
    metrics.note_request(agent=agent.id)  # the access log names it (its path does not)
    return agent


def base_url(request: Request, hub: Hub, agent: HostedAgent | None) -> str:
    """The public URL of ``agent`` as the client reached it (the hub's root for ``None``).

    An agent reached through the root alias is announced at the root; the
    ``public_url`` setting wins over the request's own host.
    """
    root = hub.settings.server.public_url
    if not root:
        # where the hub's app is mounted (also inside another app): the agent mount adds
        # /a2a/{agent_id} to the root path
        mounted = request.scope.get("root_path", "")
        if "agent_id" in request.path_params:
            mounted = mounted.rsplit("/a2a/", 1)[0]
        root = f"{request.url.scheme}://{request.url.netloc}{mounted}"
    root = root.rstrip("/")
    return root if agent is None else f"{root}/a2a/{quote(agent.id, safe='')}"


def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` declares JSON: ``application/json``, ``application/a2a+json``
    or any other ``+json`` type, with any parameters."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def a2a_version(request: Request) -> str | None:
    """The ``A2A-Version`` header, or the query parameter of that name."""
    return request.headers.get("a2a-version") or request.query_params.get("A2A-Version")


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused (:class:`PayloadTooLargeError`) once over ``limit`` bytes."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit():
        if int(length) > limit:
            raise _too_large(int(length), limit)
        return await request.body()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(size, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(size: int, limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"Request body of {size} bytes is over the limit of {limit} bytes "
        "(setting max_body_bytes / A2A_HUB_MAX_BODY_BYTES)",
        data={"limit": limit},
    )
