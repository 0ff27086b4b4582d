"""LLM providers behind one interface in the OpenAI chat-completions shape.

=============  ==========================================================================
``embedded``   SmolLM2-135M-Instruct in-process on the CPU via xllamacpp; offline
``openai``     any OpenAI-compatible ``/chat/completions`` (OpenAI, Gemini, Ollama, vLLM,
               llama.cpp server)
``scripted``   deterministic canned replies for tests; says ``[scripted]``
=============  ==========================================================================

Tool calling (:meth:`LLMProvider.chat` with OpenAI-format ``tools``): ``openai`` (with a model
that supports tools) and ``scripted`` (by rule); ``embedded`` refuses tools, saying why.

:func:`get_provider` picks one; what its caller leaves unset comes from an
:class:`~a2a_hub.settings.LLMSettings` (the ``llm`` section of the hub's settings, fed by
``A2A_HUB_LLM_*``, hub.toml ``[llm]`` or ``--llm-*``).  Without one it uses the process
default, which a :class:`~a2a_hub.server.Hub` sets from its settings
(:func:`set_default_settings`) and which is otherwise ``LLMSettings()``: the embedded
model.  Nothing here reads the environment.  :func:`structured` gets a parsed JSON
object for a schema.

Provider modules load lazily, so importing this package costs neither httpx nor xllamacpp.
"""

from __future__ import annotations

from typing import Any

from a2a_hub.llm.base import ChatMessage, ChatReply, LLMError, LLMProvider, ToolCall, function_tool
from a2a_hub.llm.structured import structured
from a2a_hub.settings import LLMSettings

__all__ = [
    "PROVIDERS",
    "ChatMessage",
    "ChatReply",
    "LLMError",
    "LLMProvider",
    "LLMSettings",
    "LazyProvider",
    "ToolCall",
    "default_settings",
    "function_tool",
    "get_provider",
    "provider_class",
    "set_default_settings",
    "structured",
]

#: The provider names :func:`get_provider` knows.
PROVIDERS = ("embedded", "openai", "scripted")

_defaults = LLMSettings()


def default_settings() -> LLMSettings:
    """The settings :func:`get_provider` falls back on when given none."""
    return _defaults


def set_default_settings(settings: LLMSettings) -> None:
    """Make ``settings`` the process-wide fallback (a Hub does this with its ``llm`` section)."""
    global _defaults
    _defaults = settings


def provider_class(name: str | None = None) -> type[LLMProvider]:
    """The class of the provider called ``name`` (default: the default settings' provider,
    else ``embedded``), imported but not constructed; ValueError for an unknown name."""
    chosen = (name or _defaults.provider or "embedded").strip().lower()
    if chosen == "scripted":
        from a2a_hub.llm.scripted import ScriptedProvider

        return ScriptedProvider
    if chosen == "openai":
        from a2a_hub.llm.openai import OpenAIProvider

        return OpenAIProvider
    if chosen == "embedded":
        from a2a_hub.llm.embedded import EmbeddedProvider

        return EmbeddedProvider
    raise ValueError(f"unknown LLM provider {chosen!r}; known providers: {', '.join(PROVIDERS)}")


def get_provider(
    name: str | None = None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    settings: LLMSettings | None = None,
    **options: Any,
) -> LLMProvider:
    """A provider by name; unset arguments come from ``settings`` (default:
    :func:`default_settings`).

    ``options`` go to the provider's constructor (``tries``, ``timeout``, ``n_ctx``,
    ``delay``, …).  Raises ValueError for an unknown name (listing the known ones) and
    :class:`LLMError` when the embedded model is not installed (naming the pip commands).
    """
    settings = settings or _defaults
    cls = provider_class(name or settings.provider)
    model = model or settings.model
    if cls.__name__ == "OpenAIProvider":
        options = {
            "base_url": base_url or settings.base_url,
            "api_key": api_key or settings.api_key,
            **options,
        }
    return cls(model=model, **options)  # type: ignore[call-arg]


class LazyProvider:
    """Provider settings now, the provider itself on first use (the embedded model loads then)."""

    def __init__(
        self,
        name: str | None = None,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        **options: Any,
    ) -> None:
        self._args: dict[str, Any] = {
            "name": name,
            "model": model,
            "base_url": base_url,
            "api_key": api_key,
            **options,
        }
        self._provider: LLMProvider | None = None

    def get(self) -> LLMProvider:
        """The provider (created once)."""
        if self._provider is None:
            self._provider = get_provider(**self._args)
        return self._provider
