"""The engine's admission gate: rate limits and caps on running tasks, per caller.

A :class:`TaskEngine` with no gate (``engine.gate is None``, the default) checks nothing
and pays nothing.  The hub installs one (:class:`a2a_hub.server.limits.AgentLimits`) on
each agent that a ``[[limits]]`` entry names, so every binding — JSON-RPC, REST, SSE,
gRPC, WebSocket, AG-UI — is limited at the one place they all call: the engine's public
methods, each admitting its A2A method name (:data:`METHODS`) before anything else.

Running tasks are counted per owner by :class:`RunningCount` (this instance's runs: a
reservation taken before a new run is opened, released when the run leaves the table).
"""

from __future__ import annotations

from typing import Protocol

from a2a_hub import metrics
from a2a_hub.engine.caller import Caller
from a2a_hub.protocol.errors import RateLimitedError

__all__ = ["METHODS", "Gate", "RunningCount"]

#: The A2A method names a gate is asked about (whatever the binding called them).
METHODS = (
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
)


class Gate(Protocol):
    """What the engine asks before serving a caller."""

    async def admit(self, caller: Caller, method: str) -> None:
        """Return when ``caller`` may call ``method`` now; else raise
        :class:`~a2a_hub.protocol.errors.RateLimitedError` with the delay to wait."""

    def max_running(self, caller: Caller) -> int | None:
        """The most tasks ``caller`` may have running on this agent at once (``None``: any)."""


class RunningCount:
    """Running tasks per owner on one agent of this instance, with reservations.

    :meth:`reserve` counts a run about to be opened (refusing past the cap, with no
    ``await`` between the check and the count); :meth:`keep` binds the reservation to the
    opened run's task id, :meth:`cancel` drops it when no run was opened, and
    :meth:`ended` (the run left the table) releases it.
    """

    def __init__(self) -> None:
        self._count: dict[str | None, int] = {}
        self._runs: dict[str, str | None] = {}

    def reserve(self, owner: str | None, cap: int, agent_id: str) -> None:
        """Count one more run of ``owner``, or raise when it has ``cap`` running already."""
        now = self._count.get(owner, 0)
        if now >= cap:
            metrics.rate_limited(agent_id, "max_running")
            raise RateLimitedError(
                f"{cap} task(s) of this caller are already running on agent {agent_id!r} "
                "(max_running); retry once one has finished",
                retry_after=1.0,
                data={"maxRunning": cap},
            )
        self._count[owner] = now + 1

    def keep(self, owner: str | None, task_id: str) -> None:
        """The reservation of ``owner`` is now the run of ``task_id``."""
        if task_id in self._runs:  # the same run again: its reservation was already kept
            self.cancel(owner)
        else:
            self._runs[task_id] = owner

    def cancel(self, owner: str | None) -> None:
        """Drop a reservation that opened no run."""
        left = self._count.get(owner, 0) - 1
        if left > 0:
            self._count[owner] = left
        else:
            self._count.pop(owner, None)

    def ended(self, task_id: str) -> None:
        """The run of ``task_id`` left the table: its owner has one running task fewer."""
        if task_id in self._runs:
            self.cancel(self._runs.pop(task_id))

    def running(self, owner: str | None) -> int:
        """How many runs ``owner`` has (reservations included)."""
        return self._count.get(owner, 0)
