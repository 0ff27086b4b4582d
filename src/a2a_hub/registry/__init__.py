"""The registry: API keys, agents, conversations and MCP servers, in SQL (see :mod:`.registry`)."""

from a2a_hub.registry.registry import (
    DEFAULT_REGISTRY,
    KEY_PREFIX,
    SCOPES,
    KeyInfo,
    McpServer,
    Registry,
    RegistryError,
    UnknownEntryError,
    parse_duration,
    registry_url,
)

__all__ = [
    "DEFAULT_REGISTRY",
    "KEY_PREFIX",
    "SCOPES",
    "KeyInfo",
    "McpServer",
    "Registry",
    "RegistryError",
    "UnknownEntryError",
    "parse_duration",
    "registry_url",
]
