"""Pins the public API: the exact ``__all__`` of every package of a2a_hub, and that every
name any module lists in its ``__all__`` can be imported from it.

A change to a package's ``__all__`` is a change of the public API: update :data:`PUBLIC`
in the same commit, on purpose.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import a2a_hub

PUBLIC: dict[str, list[str]] = {
    "a2a_hub": [
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
    ],
    "a2a_hub.agents": [
        "EchoExecutor",
        "HubLinks",
        "KINDS",
        "LLMExecutor",
        "LoopExecutor",
        "ParallelExecutor",
        "RemoteExecutor",
        "SequentialExecutor",
        "build_executor",
        "load_class",
    ],
    "a2a_hub.agents.frameworks": [
        "FRAMEWORKS",
        "Framework",
        "accepted",
        "adapt",
        "extra_for_module",
        "framework_of",
    ],
    "a2a_hub.cli": ["app", "main"],
    "a2a_hub.client": [
        "A2AClient",
        "Conversation",
        "RetryPolicy",
        "StreamItem",
        "StreamLostError",
        "TRANSPORTS",
        "ends",
        "fetch_card",
        "parse_card",
        "user_message",
    ],
    "a2a_hub.client.transports": [
        "JsonRpc01Transport",
        "JsonRpc03Transport",
        "JsonRpc10Transport",
        "RestTransport",
        "StreamItem",
        "Transport",
        "WebSocketTransport",
    ],
    "a2a_hub.engine": [
        "AgentExecutor",
        "InvalidTransitionError",
        "RequestContext",
        "TaskEngine",
        "TaskUpdater",
        "text_of",
    ],
    "a2a_hub.llm": [
        "ChatMessage",
        "ChatReply",
        "LLMError",
        "LLMProvider",
        "LLMSettings",
        "LazyProvider",
        "PROVIDERS",
        "ToolCall",
        "default_settings",
        "function_tool",
        "get_provider",
        "provider_class",
        "set_default_settings",
        "structured",
    ],
    "a2a_hub.scenarios": [
        "EvalRequest",
        "EvalResult",
        "GreenAgent",
        "ParticipantError",
        "Participants",
        "TIE",
        "parse_eval_request",
        "talk_to_agent",
    ],
    "a2a_hub.server": ["CallerMiddleware", "HostedAgent", "Hub", "create_app"],
    "a2a_hub.settings": [
        "AgentSpec",
        "AuthSettings",
        "CONFIG_ENV",
        "DEFAULT_STORE",
        "ENV_PREFIX",
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
    ],
    "a2a_hub.push": ["NotificationError", "Verified", "verify"],
    "a2a_hub.registry": [
        "DEFAULT_REGISTRY",
        "KEY_PREFIX",
        "KeyInfo",
        "McpServer",
        "Registry",
        "RegistryError",
        "SCOPES",
        "UnknownEntryError",
        "parse_duration",
        "registry_url",
    ],
    "a2a_hub.server.console": ["UI_API_ROUTES", "UI_PAGE_ROUTES"],
    "a2a_hub.server.grpc": ["A2AServicer", "AGENT_METADATA", "GrpcServer"],
    "a2a_hub.tools": [
        "EXIT_TOOL",
        "ExitTool",
        "Tool",
        "ToolResult",
        "tool_call_data",
        "tool_response_data",
    ],
    "a2a_hub.stores": [
        "EventLog",
        "LogConflictError",
        "MemoryStore",
        "PushConfigStore",
        "SUPPORTED_SCHEMES",
        "Store",
        "StoredTask",
        "TaskEvent",
        "TaskPage",
        "TaskQuery",
        "TaskStore",
        "decode_page_token",
        "encode_page_token",
        "open_store",
    ],
    "a2a_hub.stores.redis": ["RedisKeys", "RedisOptions", "RedisStore"],
    "a2a_hub.stores.sql": ["EVENTS_CHANNEL", "SCHEMA_VERSION", "SqlStore"],
    "a2a_hub.workers": ["ExecutorTarget", "INPROCESS", "connect", "parse_executor"],
}


def _modules(packages_only: bool) -> list[str]:
    found = ["a2a_hub"]
    for info in pkgutil.walk_packages(a2a_hub.__path__, "a2a_hub."):
        # ``__main__`` modules run the CLI when imported
        if info.name.endswith("__main__") or (packages_only and not info.ispkg):
            continue
        found.append(info.name)
    return sorted(found)


def _all_of(name: str) -> list[str] | None:
    names = getattr(importlib.import_module(name), "__all__", None)
    return None if names is None else list(names)


def test_every_package_with_an_all_is_pinned() -> None:
    with_all = [name for name in _modules(packages_only=True) if _all_of(name) is not None]
    assert sorted(with_all) == sorted(PUBLIC)


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_the_public_names_of_each_package(package: str) -> None:
    names = _all_of(package)
    assert names is not None
    assert len(names) == len(set(names)), f"{package}.__all__ lists a name twice"
    assert sorted(names) == PUBLIC[package]


@pytest.mark.parametrize("module", _modules(packages_only=False))
def test_every_name_in_all_is_importable(module: str) -> None:
    names = _all_of(module)
    if names is None:
        return
    imported = importlib.import_module(module)
    missing = [name for name in names if not hasattr(imported, name)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"
    namespace: dict[str, object] = {}
    exec(f"from {module} import *", namespace)
    assert set(names) <= set(namespace)
