"""Push notifications: webhook URL safety (:mod:`~a2a_hub.push.urls`), the sender and
dispatcher, the signing keys (JWKS) and the receiver's :func:`verify`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2a_hub.push.receiver import NotificationError, Verified, verify

__all__ = ["NotificationError", "Verified", "verify"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from a2a_hub.push import receiver

        return getattr(receiver, name)
    raise AttributeError(name)
