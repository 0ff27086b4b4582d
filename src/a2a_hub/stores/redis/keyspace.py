"""Every Redis key name of the store and of its coordinator: the one place they are built.

``P`` is the store's prefix, ``{A}`` the escaped agent id; the ``{…}`` braces
make it a Redis Cluster hash tag, so everything one script touches lives in
one slot.  The table of what each key holds is in :mod:`.store`.
"""

from __future__ import annotations

import functools
import uuid

__all__ = ["ClusterKeys", "RedisKeys", "keys_for"]


def _escape_agent(agent_id: str) -> str:
    # Injective, and free of braces: the agent id is the Cluster hash tag of its keys.
    return agent_id.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")


class RedisKeys:
    """Every key name of one agent's data.

    The per-task and per-context/state names are ``<kind prefix><raw id>``; the
    Lua scripts build them the same way from the prefixes passed to them.  The
    raw id is the last part of the name and every kind prefix ends in ``:``
    after a fixed word, so distinct ids never share a key.
    """

    __slots__ = (
        "claim_prefix",
        "common_args",
        "common_keys",
        "context_prefix",
        "ended",
        "ended_owner",
        "events_prefix",
        "expiring",
        "owner_prefix",
        "push_prefix",
        "state_prefix",
        "task_prefix",
        "tasks",
        "tmp_prefix",
    )

    def __init__(self, prefix: str, agent_id: str) -> None:
        base = f"{prefix}:{{{_escape_agent(agent_id)}}}:"
        self.tasks = base + "tasks"
        self.expiring = base + "expiring"
        self.ended = base + "ended"
        self.ended_owner = base + "ended-owner"
        self.task_prefix = base + "task:"
        self.events_prefix = base + "events:"
        self.push_prefix = base + "push:"
        self.context_prefix = base + "ctx:"
        self.state_prefix = base + "state:"
        self.owner_prefix = base + "owner:"
        self.tmp_prefix = base + "tmp:"
        self.claim_prefix = base + "claim:"
        #: What every script touching the listing indexes takes first (common.lua).
        self.common_keys = (self.tasks, self.expiring, self.ended, self.ended_owner)
        self.common_args = (self.context_prefix, self.state_prefix, self.owner_prefix)

    def task(self, task_id: str) -> str:
        """The task's hash."""
        return self.task_prefix + task_id

    def events(self, task_id: str) -> str:
        """The task's event stream."""
        return self.events_prefix + task_id

    def push(self, task_id: str) -> str:
        """The task's push configs."""
        return self.push_prefix + task_id

    def context(self, context_id: str) -> str:
        """The index of one context's tasks."""
        return self.context_prefix + context_id

    def state(self, state: str) -> str:
        """The index of the tasks in one state."""
        return self.state_prefix + state

    def owner(self, owner: str) -> str:
        """The index of the tasks one principal created."""
        return self.owner_prefix + owner

    def claim(self, owner: str | None, message_id: str) -> str:
        """A message claim: ``claim:-:<message id>`` for anonymous callers, else
        ``claim:=<escaped owner>:<message id>`` (``:`` and ``%`` escaped in the owner,
        so that no owner and message id share a key with another pair)."""
        if owner is None:
            return f"{self.claim_prefix}-:{message_id}"
        escaped = owner.replace("%", "%25").replace(":", "%3A")
        return f"{self.claim_prefix}={escaped}:{message_id}"

    def scratch(self) -> str:
        """A fresh key for a temporary result inside one script."""
        return self.tmp_prefix + uuid.uuid4().hex


@functools.lru_cache(maxsize=4096)
def keys_for(prefix: str, agent_id: str) -> RedisKeys:
    """The (cached) key names of one agent's data under ``prefix``."""
    return RedisKeys(prefix, agent_id)


class ClusterKeys:
    """The coordinator's keys and channel (see :mod:`.coordinator`)."""

    __slots__ = ("holders", "leases", "owned_prefix", "signals")

    def __init__(self, prefix: str) -> None:
        #: zset ``agent\\ttask`` -> lease expiry (server ms)
        self.leases = f"{prefix}:leases"
        #: hash ``agent\\ttask`` -> holder instance id
        self.holders = f"{prefix}:lease-owner"
        #: ``owned_prefix + instance id``: set of the leases that instance holds
        self.owned_prefix = f"{prefix}:owner:"
        #: the pub/sub channel of signals
        self.signals = f"{prefix}:signals"
