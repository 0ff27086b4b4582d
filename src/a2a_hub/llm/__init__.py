"""LLM providers behind one interface in the OpenAI chat-completions shape.

=============  ==========================================================================
``embedded``   SmolLM2-135M-Instruct in-process on the CPU via xllamacpp; offline
``openai``     any OpenAI-compatible ``/chat/completions`` (OpenAI, Gemini, Ollama, vLLM,
               llama.cpp server)
``scripted``   deterministic canned replies for tests; says ``[scripted]``
=============  ==========================================================================

Tool calling (:meth:`LLMProvider.chat` with OpenAI-format ``tools``): ``openai`` (with a model
that supports tools) and ``scripted`` (by rule); ``embedded`` refuses tools, saying why.

:func:`get_provider` picks one, with defaults from ``A2A_HUB_LLM_PROVIDER`` (``embedded``),
``A2A_HUB_LLM_MODEL``, ``A2A_HUB_LLM_BASE_URL`` and ``A2A_HUB_LLM_API_KEY`` (for ``openai``
``OPENAI_API_KEY`` too).  :func:`structured` gets a parsed JSON object for a schema.

Provider modules load lazily, so importing this package costs neither httpx nor xllamacpp.
"""

from __future__ import annotations

import os
from typing import Any

from a2a_hub.llm.base import ChatMessage, ChatReply, LLMError, LLMProvider, ToolCall, function_tool
from a2a_hub.llm.structured import structured

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ENV_PROVIDER",
    "PROVIDERS",
    "ChatMessage",
    "ChatReply",
    "LLMError",
    "LLMProvider",
    "LazyProvider",
    "ToolCall",
    "function_tool",
    "get_provider",
    "structured",
]

ENV_PROVIDER = "A2A_HUB_LLM_PROVIDER"
ENV_MODEL = "A2A_HUB_LLM_MODEL"
ENV_BASE_URL = "A2A_HUB_LLM_BASE_URL"
ENV_API_KEY = "A2A_HUB_LLM_API_KEY"

#: The provider names :func:`get_provider` knows.
PROVIDERS = ("embedded", "openai", "scripted")


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def get_provider(
    name: str | None = None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> LLMProvider:
    """A provider by name; unset arguments come from the ``A2A_HUB_LLM_*`` environment.

    ``options`` go to the provider's constructor (``tries``, ``timeout``, ``n_ctx``,
    ``delay``, …).  Raises ValueError for an unknown name (listing the known ones) and
    :class:`LLMError` when the embedded model is not installed (naming the pip commands).
    """
    chosen = (name or _env(ENV_PROVIDER) or "embedded").strip().lower()
    model = model or _env(ENV_MODEL)
    if chosen == "scripted":
        from a2a_hub.llm.scripted import ScriptedProvider

        return ScriptedProvider(model=model, **options)
    if chosen == "openai":
        from a2a_hub.llm.openai import OpenAIProvider

        return OpenAIProvider(
            model=model,
            base_url=base_url or _env(ENV_BASE_URL),
            api_key=api_key or _env(ENV_API_KEY) or _env("OPENAI_API_KEY"),
            **options,
        )
    if chosen == "embedded":
        from a2a_hub.llm.embedded import EmbeddedProvider

        return EmbeddedProvider(model=model, **options)
    raise ValueError(f"unknown LLM provider {chosen!r}; known providers: {', '.join(PROVIDERS)}")


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
