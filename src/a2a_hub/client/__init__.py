"""A2A client for any agent (1.0 JSON-RPC or REST, 0.3, 0.1), multi-turn, resilient streams."""

from a2a_hub.client.card import fetch_card, parse_card
from a2a_hub.client.client import (
    TRANSPORTS,
    A2AClient,
    RetryPolicy,
    StreamLostError,
    ends,
    user_message,
)
from a2a_hub.client.conversation import Conversation
from a2a_hub.client.transports import StreamItem

__all__ = [
    "TRANSPORTS",
    "A2AClient",
    "Conversation",
    "RetryPolicy",
    "StreamItem",
    "StreamLostError",
    "ends",
    "fetch_card",
    "parse_card",
    "user_message",
]
