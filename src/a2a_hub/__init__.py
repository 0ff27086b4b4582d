"""a2a-hub: a fast, durable A2A server hosting many agents, and the toolkit around it."""

from a2a_hub.engine import AgentExecutor, RequestContext, TaskUpdater, text_of
from a2a_hub.protocol import errors, types
from a2a_hub.server import Hub, create_app
from a2a_hub.settings import AgentSpec, Settings, load_settings

__all__ = [
    "AgentExecutor",
    "AgentSpec",
    "Hub",
    "RequestContext",
    "Settings",
    "TaskUpdater",
    "create_app",
    "errors",
    "load_settings",
    "text_of",
    "types",
]

__version__ = "0.1.0"
