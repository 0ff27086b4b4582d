"""The registry: API keys, agents, conversations and MCP servers, in SQL (see :mod:`.registry`).

=======================  ============================================================
:mod:`.schema`           its tables, version and migrations (``a2a_reg_*``)
:mod:`.base`             :class:`~.base.RegistryBase` (the engine), errors, URL, durations
:mod:`.api_keys`         API keys (a mixin over the base)
:mod:`.agents`           registered agents (a mixin)
:mod:`.conversations`    stored conversations (a mixin)
:mod:`.mcp_servers`      MCP server definitions (a mixin)
:mod:`.registry`         :class:`Registry`: the mixins joined; open (own or shared engine)
=======================  ============================================================
"""

from a2a_hub.registry.api_keys import KEY_PREFIX, SCOPES, KeyInfo
from a2a_hub.registry.base import (
    DEFAULT_REGISTRY,
    RegistryError,
    UnknownEntryError,
    parse_duration,
    registry_url,
)
from a2a_hub.registry.mcp_servers import McpServer
from a2a_hub.registry.registry import Registry

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
