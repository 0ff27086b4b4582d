"""ASGI server: JSON-RPC and REST bindings, agent cards, the hub of agents."""

from a2a_hub.server.app import create_app
from a2a_hub.server.hub import HostedAgent, Hub

__all__ = ["HostedAgent", "Hub", "create_app"]
