"""Client transports: A2A 1.0 JSON-RPC, 1.0 HTTP+JSON (REST), 0.3 JSON-RPC and 0.1 JSON-RPC,
and A2A 1.0 JSON-RPC over WebSocket (preview, subprotocol ``a2a.jsonrpc.v1``).

Each speaks one binding and version on the wire and exposes the same canonical
operations (the 1.0 types of :mod:`a2a_hub.protocol.types`); errors the peer
returns are raised as the typed errors of :mod:`a2a_hub.protocol.errors`.
"""

from a2a_hub.client.transports.base import StreamItem, Transport
from a2a_hub.client.transports.jsonrpc01 import JsonRpc01Transport
from a2a_hub.client.transports.jsonrpc03 import JsonRpc03Transport
from a2a_hub.client.transports.jsonrpc10 import JsonRpc10Transport
from a2a_hub.client.transports.rest import RestTransport
from a2a_hub.client.transports.websocket import WebSocketTransport

__all__ = [
    "JsonRpc01Transport",
    "JsonRpc03Transport",
    "JsonRpc10Transport",
    "RestTransport",
    "StreamItem",
    "Transport",
    "WebSocketTransport",
]
