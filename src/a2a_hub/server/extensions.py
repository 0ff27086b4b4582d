"""A2A extensions: what an agent declares, what a request asks for, what gets activated.

An agent declares extensions in its card (``capabilities.extensions``): from ``hub.toml``
(``[[agents.extensions]]`` with ``uri``, ``description``, ``required``, ``params``) and from
its executor class (the ``extensions`` attribute, same keys); the configuration wins for a
URI both name.  A client asks for extensions with the ``A2A-Extensions`` service parameter:
the HTTP header (also ``X-A2A-Extensions``, the 0.3 name) or the gRPC metadata
``a2a-extensions``, a comma-separated list of URIs.

When a message is sent (every version's send and stream methods), the **activated**
extensions are the requested ones the agent declares; others are ignored, as the spec
says.  They reach the executor as ``ctx.extensions`` and are echoed back in the response's
``A2A-Extensions`` header (gRPC: initial metadata).  If the agent marks an extension
``required`` and the request does not ask for it, the send is refused with
``ExtensionSupportRequiredError`` (-32008, HTTP 400, gRPC ``FAILED_PRECONDITION``).
Reading tasks (get, list, cancel, subscribe) needs no extension.

The HTTP bindings learn the request's header through the app's front
(:mod:`a2a_hub.server.front`), which keeps it for the request in a context variable
(:func:`serving`) and adds the response header (:meth:`RequestExtensions.echo`); the gRPC
binding passes the metadata to :func:`activate` itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar, Token
from dataclasses import dataclass, field

from a2a_hub.protocol.errors import ExtensionSupportRequiredError
from a2a_hub.server.hosted import HostedAgent, declared_extensions

__all__ = [
    "HEADER",
    "HEADER_KEYS",
    "RequestExtensions",
    "activate",
    "activate_for_request",
    "declared_extensions",
    "parse",
    "requested_by",
    "served",
    "serving",
]

#: The service parameter (HTTP header; gRPC metadata key in lower case).
HEADER = "A2A-Extensions"
#: The request headers naming them (the 0.3 name too), as ASGI spells them.
HEADER_KEYS = (b"a2a-extensions", b"x-a2a-extensions")
_NONE: frozenset[str] = frozenset()


def parse(values: Iterable[str]) -> frozenset[str]:
    """The URIs of one or more comma-separated ``A2A-Extensions`` values."""
    return frozenset(uri for value in values for part in value.split(",") if (uri := part.strip()))


def activate(agent: HostedAgent, requested: frozenset[str]) -> frozenset[str]:
    """The extensions a send activates; ExtensionSupportRequiredError if one required is missing."""
    declared = agent.extensions
    if not declared:
        return _NONE
    missing = [ext.uri for ext in declared if ext.required and ext.uri not in requested]
    if missing:
        raise ExtensionSupportRequiredError(
            f"agent {agent.id!r} requires the extension{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)}; a client that supports "
            f"{'them' if len(missing) > 1 else 'it'} says so with the {HEADER} header "
            "(gRPC metadata a2a-extensions)",
            data={"extensions": ",".join(missing)},
        )
    if not requested:
        return _NONE
    return frozenset(ext.uri for ext in declared if ext.uri in requested)


@dataclass(slots=True)
class RequestExtensions:
    """The extensions an HTTP request asks for, and those its sends activated."""

    requested: frozenset[str]
    activated: set[str] = field(default_factory=set)

    def echo(self) -> tuple[bytes, bytes] | None:
        """The response's ``A2A-Extensions`` header: the activated ones (``None``: none)."""
        if not self.activated:
            return None
        return (b"a2a-extensions", ",".join(sorted(self.activated)).encode())


_current: ContextVar[RequestExtensions | None] = ContextVar("a2a_extensions", default=None)


def activate_for_request(agent: HostedAgent) -> frozenset[str]:
    """:func:`activate` with the current HTTP request's header (noted for the response)."""
    current = _current.get()
    activated = activate(agent, current.requested if current is not None else _NONE)
    if activated and current is not None:
        current.activated.update(activated)
    return activated


def requested_by(headers: Iterable[tuple[bytes, bytes]]) -> RequestExtensions | None:
    """What a request's ASGI headers ask for (``A2A-Extensions`` and ``X-A2A-Extensions``,
    every value), or ``None`` without the header."""
    values = [v.decode("latin-1") for k, v in headers if k in HEADER_KEYS]
    return RequestExtensions(parse(values)) if values else None


def serving(current: RequestExtensions) -> Token[RequestExtensions | None]:
    """Make ``current`` the request's extensions for the sends it serves (until
    :func:`served` with the token)."""
    return _current.set(current)


def served(token: Token[RequestExtensions | None]) -> None:
    """The request that :func:`serving` began has been answered."""
    _current.reset(token)
