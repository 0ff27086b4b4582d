"""One settings object, fed by ``hub.toml``, ``A2A_HUB_*`` environment variables and CLI flags.

Later sources win: file < environment < command line.

Code reads a setting through its section: ``settings.server.port``,
``settings.store.url``, ``settings.llm.model``; the hosted agents are
``settings.agents``.

Each setting is written once, as a field of a section in :mod:`a2a_hub.settings.model`::

    class PushSettings(Section):
        key_prefix = "push_"
        retries: Annotated[int, setting("Delivery attempts per notification.", ge=1)] = 5

and that one line gives the flat key ``push_retries`` (a top-level key of hub.toml, also
``retries`` under ``[push]``), the variable ``A2A_HUB_PUSH_RETRIES`` and the option
``a2a-hub serve --push-retries N`` with its help, type, bounds and default.  A new
section is a :class:`Section` subclass plus a field of :class:`Settings`.
"""

from a2a_hub.settings.fields import ENV_PREFIX, Section, SettingField, SettingsError, setting
from a2a_hub.settings.limits import LimitSpec
from a2a_hub.settings.load import CONFIG_ENV, load_settings
from a2a_hub.settings.model import (
    DEFAULT_STORE,
    AgentSpec,
    AuthSettings,
    LLMSettings,
    LogLevel,
    MCPServerSpec,
    PushSettings,
    ServerSettings,
    Settings,
    StoreSettings,
    parse_agent_spec,
    setting_fields,
)

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_STORE",
    "ENV_PREFIX",
    "AgentSpec",
    "AuthSettings",
    "LLMSettings",
    "LimitSpec",
    "LogLevel",
    "MCPServerSpec",
    "PushSettings",
    "Section",
    "ServerSettings",
    "SettingField",
    "Settings",
    "SettingsError",
    "StoreSettings",
    "load_settings",
    "parse_agent_spec",
    "setting",
    "setting_fields",
]
