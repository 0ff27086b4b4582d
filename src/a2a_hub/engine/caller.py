"""Who is calling: built once per request at the HTTP (or gRPC/WebSocket) edge.

A :class:`Caller` travels with every engine call and its ``owner`` is stored with
each task the caller creates, so that per-caller visibility (a caller sees only
its own tasks) is a check in the engine rather than in every binding.  The server
builds it from the request's API key (:mod:`a2a_hub.server.auth`); a request
without a key to an agent that needs none is :data:`ANONYMOUS`, who sees every task.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ANONYMOUS", "Caller"]


@dataclass(frozen=True, slots=True)
class Caller:
    """The identity behind one request.

    ``principal`` names who is calling (an API key's principal), ``None`` when
    anonymous; ``key_id`` is the id of the key used, ``scopes`` what it may do
    (``invoke``, ``read-all``, ``admin``) and ``agents`` the agent ids it opens
    (``None``: every agent).
    """

    principal: str | None = None
    key_id: str | None = None
    scopes: frozenset[str] = field(default_factory=frozenset)
    agents: frozenset[str] | None = None

    @property
    def anonymous(self) -> bool:
        """True when no credential identified the caller."""
        return self.principal is None

    @property
    def owner(self) -> str | None:
        """The owner recorded on the tasks this caller creates (``None``: anonymous)."""
        return self.principal

    @property
    def sees_all(self) -> bool:
        """True for callers who see every task: anonymous (an open hub), ``read-all``
        and ``admin`` keys."""
        return self.anonymous or "read-all" in self.scopes or "admin" in self.scopes

    @property
    def may_invoke(self) -> bool:
        """True for callers who may call the agent (send messages, continue and cancel
        tasks, register push configs): anonymous (an open hub), ``invoke`` and ``admin``
        keys, and callers with no scopes at all (an identity without scope rules, e.g.
        from a custom middleware).  A ``read-all`` key alone only reads (every task of
        its agents)."""
        scopes = self.scopes
        return self.anonymous or not scopes or "invoke" in scopes or "admin" in scopes

    def sees(self, owner: str | None) -> bool:
        """Whether this caller may see a task owned by ``owner``.

        Anonymous callers (an open hub) and ``read-all`` keys see every task;
        anyone else sees the tasks it created.
        """
        return self.sees_all or owner == self.principal


#: The caller of every request on an open hub (no credentials).
ANONYMOUS = Caller()
