"""ASGI server: JSON-RPC and REST bindings, agent cards, the hub of agents, the caller hook."""

from a2a_hub.server.app import create_app
from a2a_hub.server.caller import CallerMiddleware
from a2a_hub.server.hub import HostedAgent, Hub

__all__ = ["CallerMiddleware", "HostedAgent", "Hub", "create_app"]
