"""Small facts an agent keeps in the metadata of its own messages (stored with the task).

The ``remote`` kind and the composites remember, per conversation, the ids of the
conversations they hold with other agents (and where a paused chain stopped) by stamping
them on the messages they answer with.  The history of the context carries them to the
next turn — across restarts and across instances sharing a store — with no table of
their own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from a2a_hub.protocol.types import Message, Role

__all__ = ["recall", "stamp"]


def recall(messages: Iterable[Message], key: str) -> dict[str, Any] | None:
    """The newest ``metadata[key]`` (a dict) among the agent's ``messages``, if any."""
    for message in reversed(list(messages)):
        if message.role is Role.AGENT and message.metadata:
            value = message.metadata.get(key)
            if isinstance(value, dict):
                return value
    return None


def stamp(message: Message, key: str, value: dict[str, Any]) -> Message:
    """``message`` with ``metadata[key] = value`` (the message is changed and returned)."""
    message.metadata = {**(message.metadata or {}), key: value}
    return message
