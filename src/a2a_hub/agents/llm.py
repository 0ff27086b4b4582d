"""The ``llm`` agent kind: an instruction and a model, holding a conversation.

Every turn sends the instruction (as the system message), the messages of the
earlier tasks of the same context and of this task, and the new message to the
provider.  When the client streams, the reply is streamed as chunks of one
artifact; either way the task completes with the whole reply as its message, so
it is in the history of the next turn.  A provider that keeps failing (timeouts,
429, 5xx, after its retries) fails the task with the provider's message.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from a2a_hub import metrics
from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater, text_of
from a2a_hub.llm import ChatMessage, LazyProvider, LLMError, LLMProvider, provider_class
from a2a_hub.protocol.types import Message, Role

__all__ = ["LLMExecutor", "chat_messages", "check_provider_options"]

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _named_parameters(cls: type, last: type) -> list[str]:
    """The named ``__init__`` parameters of ``cls`` and its bases, down to ``last``."""
    names: list[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None:
            for name, param in inspect.signature(init).parameters.items():
                if name != "self" and param.kind in _NAMED and name not in names:
                    names.append(name)
        if klass is last:
            break
    return names


def check_provider_options(
    cls: type, last: type, provider: str | None, options: dict[str, Any]
) -> None:
    """Refuse ``options`` the provider's constructor does not take (ValueError listing the
    valid ones: the named parameters of ``cls`` down to ``last``, then the provider's)."""
    kind = provider_class(provider)  # ValueError naming the known providers
    takes = [
        name
        for name, param in inspect.signature(kind).parameters.items()
        if param.kind in _NAMED and name not in ("model", "base_url", "api_key")
    ]
    unknown = sorted(set(options) - set(takes))
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        raise ValueError(
            f"unknown option{plural} {', '.join(map(repr, unknown))} for {cls.__name__}; valid "
            f"options: {', '.join(_named_parameters(cls, last))}; and for LLM provider "
            f"{kind.name}: {', '.join(takes) or 'none'}"
        )


def chat_messages(
    instruction: str, history: list[Message], *, limit: int = 20
) -> list[ChatMessage]:
    """The chat-completions view of a conversation: system, then the last ``limit`` turns."""
    messages = [ChatMessage(role="system", content=instruction)] if instruction else []
    for message in history[-limit:]:
        text = text_of(message.parts)
        if text:
            role = "assistant" if message.role is Role.AGENT else "user"
            messages.append(ChatMessage(role=role, content=text))
    return messages


class LLMExecutor(AgentExecutor):
    """An agent that answers with a language model (see the module docstring)."""

    name = "LLM agent"
    description = "Answers with a language model, remembering the conversation."
    skills = [
        {
            "id": "chat",
            "name": "Chat",
            "description": "Holds a conversation following its instruction.",
            "tags": ["llm", "chat"],
        }
    ]

    def __init__(
        self,
        instruction: str = "You are a helpful assistant. Answer briefly.",
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int | str = 200,
        temperature: float | str = 0.7,
        history_turns: int | str = 20,
        **options: Any,
    ) -> None:
        self.instruction = instruction
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.history_turns = int(history_turns)
        check_provider_options(type(self), LLMExecutor, provider, options)
        self._llm = LazyProvider(
            provider, model=model, base_url=base_url, api_key=api_key, **options
        )

    @property
    def provider(self) -> LLMProvider:
        """The provider, created on first use (the embedded model loads then)."""
        return self._llm.get()

    def messages_for(self, history: list[Message]) -> list[ChatMessage]:
        """What the model is sent for a conversation (override to shape prompts)."""
        return chat_messages(self.instruction, history, limit=self.history_turns)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        messages = self.messages_for(await ctx.context_history())
        provider_name = self.provider.name
        began = time.perf_counter()
        try:
            if ctx.streaming:
                # hold one chunk back, so that the last one can say lastChunk
                chunks: list[str] = []
                held: str | None = None
                artifact_id: str | None = None
                async for chunk in self.provider.stream(
                    messages, max_tokens=self.max_tokens, temperature=self.temperature
                ):
                    if not chunk:
                        continue
                    if held is not None:
                        artifact_id = await updater.artifact(
                            held,
                            name="response",
                            artifact_id=artifact_id,
                            append=artifact_id is not None,
                        )
                    held = chunk
                    chunks.append(chunk)
                if held is not None:
                    await updater.artifact(
                        held,
                        name="response",
                        artifact_id=artifact_id,
                        append=artifact_id is not None,
                        last_chunk=True,
                    )
                text = "".join(chunks)
            else:
                text = await self.provider.complete(
                    messages, max_tokens=self.max_tokens, temperature=self.temperature
                )
                await updater.artifact(text, name="response")
        except LLMError as exc:
            metrics.llm_call(provider_name, "error", time.perf_counter() - began)
            await updater.fail(f"the language model failed: {exc}")
            return
        metrics.llm_call(provider_name, "ok", time.perf_counter() - began)
        await updater.complete(text.strip() or "(the model returned no text)")
