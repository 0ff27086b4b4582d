"""What every binding reads from an HTTP request: its hub, its agent, its body, its version.

The hub is the app's (``request.app.state.hub``, set by :func:`create_app`); the
agent is looked up on each request, so agents added or removed while serving are
found, or not, at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import quote

from starlette.requests import ClientDisconnect, Request

from a2a_hub import metrics
from a2a_hub.protocol.errors import PayloadTooLargeError
from a2a_hub.server.hub import HostedAgent, Hub

__all__ = [
    "a2a_version",
    "agent_of",
    "base_url",
    "first_values",
    "hub_of",
    "is_json",
    "read_body",
    "receive_body",
    "version_in",
]


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


def first_values(headers: Iterable[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    """An ASGI header list as a dict, the first value of a repeated name winning (as
    ``request.headers.get`` does)."""
    return dict(reversed(list(headers)))


def version_in(request: Request, headers: Mapping[bytes, bytes]) -> str | None:
    """:func:`a2a_version` from headers already read (:func:`first_values`)."""
    found = headers.get(b"a2a-version")
    if found:
        return found.decode("latin-1")
    if not request.scope.get("query_string"):
        return None
    return request.query_params.get("A2A-Version")


async def receive_body(request: Request, limit: int, length: bytes | None) -> bytes:
    """:func:`read_body` straight from the ASGI ``receive`` (``length``: the request's
    ``Content-Length`` header); the body is kept on ``request`` for whoever asks later."""
    if length is not None and length.isdigit() and int(length) > limit:
        raise _too_large(int(length), limit)
    checked = length is not None and length.isdigit()
    receive = request.receive
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        kind = message["type"]
        if kind == "http.request":
            chunk: bytes = message.get("body", b"")
            if not message.get("more_body", False):
                if not chunks:
                    body = chunk
                    break
                chunks.append(chunk)
                body = b"".join(chunks)
                break
            size += len(chunk)
            if not checked and size > limit:
                raise _too_large(size, limit)
            chunks.append(chunk)
        elif kind == "http.disconnect":
            raise ClientDisconnect()
    if not checked and len(body) > limit:
        raise _too_large(len(body), limit)
    request._body = body  # Request.body() answers it from now on
    return body


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
