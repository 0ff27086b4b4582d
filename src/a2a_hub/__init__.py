"""a2a-hub: a fast, durable A2A server hosting many agents, and the toolkit around it.

The names below are imported on first use, so that ``import a2a_hub.client`` (or any other
part on its own) does not load the server.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from a2a_hub._version import __version__ as __version__

if TYPE_CHECKING:
    from a2a_hub.engine import AgentExecutor, RequestContext, TaskUpdater, text_of
    from a2a_hub.llm.served import llm_api_key, llm_base_url
    from a2a_hub.protocol import errors, types
    from a2a_hub.server import Hub, create_app
    from a2a_hub.settings import AgentSpec, Settings, load_settings

#: Public name -> (module, attribute of it; None for the module itself).
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "AgentExecutor": ("a2a_hub.engine", "AgentExecutor"),
    "AgentSpec": ("a2a_hub.settings", "AgentSpec"),
    "Hub": ("a2a_hub.server", "Hub"),
    "RequestContext": ("a2a_hub.engine", "RequestContext"),
    "Settings": ("a2a_hub.settings", "Settings"),
    "TaskUpdater": ("a2a_hub.engine", "TaskUpdater"),
    "create_app": ("a2a_hub.server", "create_app"),
    "errors": ("a2a_hub.protocol.errors", None),
    "llm_api_key": ("a2a_hub.llm.served", "llm_api_key"),
    "llm_base_url": ("a2a_hub.llm.served", "llm_base_url"),
    "load_settings": ("a2a_hub.settings", "load_settings"),
    "text_of": ("a2a_hub.engine", "text_of"),
    "types": ("a2a_hub.protocol.types", None),
}

__all__ = [
    "AgentExecutor",
    "AgentSpec",
    "Hub",
    "RequestContext",
    "Settings",
    "TaskUpdater",
    "create_app",
    "errors",
    "llm_api_key",
    "llm_base_url",
    "load_settings",
    "text_of",
    "types",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'a2a_hub' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
