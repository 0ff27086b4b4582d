"""The one interface every LLM provider implements, in the OpenAI chat-completions shape.

A provider takes a conversation (a sequence of :class:`ChatMessage`) and returns the
assistant's reply as text, either whole (:meth:`LLMProvider.complete`) or as text chunks
(:meth:`LLMProvider.stream`).  With ``json_schema`` the reply is a JSON document meant to
match that schema; :func:`a2a_hub.llm.structured.structured` parses and checks it.

Tool calling follows the same shape: :meth:`LLMProvider.chat` takes OpenAI-format ``tools``
(``{"type": "function", "function": {"name", "description", "parameters"}}``) and returns a
:class:`ChatReply` whose ``tool_calls`` the caller runs; their results go back as ``tool``
messages answering each call's ``id``.  Providers that can call tools say so with
``supports_tools``; the others refuse ``tools`` with an :class:`LLMError` saying why.

Every failure a caller should handle surfaces as :class:`LLMError`, whose message names the
provider, how many tries were made and what went wrong.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec

__all__ = [
    "ROLES",
    "ChatMessage",
    "ChatReply",
    "LLMError",
    "LLMProvider",
    "ToolCall",
    "function_tool",
    "to_wire",
]

#: The roles a :class:`ChatMessage` may have.
ROLES = frozenset({"system", "user", "assistant", "tool"})


class ToolCall(msgspec.Struct):
    """A model's request to run one tool: the call's ``id``, the tool's ``name`` and its
    ``arguments`` (decoded from the JSON the model wrote)."""

    id: str
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


class ChatMessage(msgspec.Struct):
    """One turn of a conversation: ``role`` is ``system``, ``user``, ``assistant`` or ``tool``.

    An ``assistant`` message may carry the ``tool_calls`` the model made; a ``tool`` message
    is the result of one of them and names it with ``tool_call_id``.
    """

    role: str
    content: str
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class ChatReply(msgspec.Struct):
    """What a model answered: its text, and the tools it wants run (possibly none)."""

    text: str
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)


def function_tool(
    name: str, description: str = "", parameters: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An OpenAI-format tool definition."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": parameters or {"type": "object", "properties": {}},
        },
    }


class LLMError(Exception):
    """An LLM provider could not produce a reply; the message says which, why and how often.

    ``provider`` is the provider's name, ``status`` the HTTP status of the last failure (when
    there was one) and ``tries`` how many attempts were made.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        tries: int | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.tries = tries


def to_wire(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The conversation as OpenAI ``messages``; raises ValueError on an empty one or a bad role."""
    if not messages:
        raise ValueError("an LLM conversation needs at least one message")
    wire: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if m.role not in ROLES:
            raise ValueError(
                f"message {i} has role {m.role!r}; expected one of {', '.join(sorted(ROLES))}"
            )
        if m.role == "tool":
            if not m.tool_call_id:
                raise ValueError(
                    f"message {i} has role 'tool' but no tool_call_id "
                    "(a tool message answers one tool call)"
                )
            wire.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.tool_calls:
            wire.append(
                {
                    "role": m.role,
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": json.dumps(call.arguments, ensure_ascii=False),
                            },
                        }
                        for call in m.tool_calls
                    ],
                }
            )
        else:
            wire.append({"role": m.role, "content": m.content})
    return wire


class LLMProvider(ABC):
    """A chat model behind one small async interface.

    Implementations must never block the event loop: network calls are async and in-process
    inference runs in a worker thread.  ``name`` identifies the provider kind (``embedded``,
    ``openai``, ``scripted``) and ``model`` the model it talks to.  Providers that hold
    resources (HTTP connections) release them in :meth:`aclose`; ``async with`` does that too.
    """

    name: str = "llm"
    model: str = ""
    #: Whether :meth:`chat` accepts ``tools`` (the model can choose tools to call).
    supports_tools: bool = False

    @abstractmethod
    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        """The assistant's reply to ``messages``.

        With ``json_schema`` the provider asks for (and, where the backend can, enforces) a
        JSON document matching the schema; the text is returned unparsed.
        Raises :class:`LLMError` when no reply could be had, after the provider's retries.
        """

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> AsyncIterator[str]:
        """The reply as text chunks, in order; their concatenation is the whole reply.

        The default implementation yields :meth:`complete`'s reply once.  Closing the
        iterator early (``break`` or ``aclose()``) stops generation where the backend allows.
        """
        yield await self.complete(messages, max_tokens=max_tokens, temperature=temperature)

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> ChatReply:
        """One step of a conversation that may use ``tools`` (OpenAI format).

        The reply's ``tool_calls`` are the calls the model wants run; an empty list means
        its ``text`` is the answer.  The default implementation has no tools: it answers
        with :meth:`complete`, and refuses ``tools`` with :meth:`tools_refused`.
        """
        if tools:
            raise self.tools_refused()
        text = await self.complete(messages, max_tokens=max_tokens, temperature=temperature)
        return ChatReply(text=text)

    async def chat_stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> AsyncIterator[str | ChatReply]:
        """:meth:`chat` as a stream: the reply's text in chunks, then a :class:`ChatReply`
        with the tool calls if the model made any (its ``text`` is then already streamed).

        The default implementation yields :meth:`chat`'s whole text once, then its calls.
        """
        reply = await self.chat(
            messages, tools=tools, max_tokens=max_tokens, temperature=temperature
        )
        if reply.text:
            yield reply.text
        if reply.tool_calls:
            yield ChatReply(text="", tool_calls=reply.tool_calls)

    def tools_refused(self) -> LLMError:
        """The error for a provider that cannot call tools (override to explain why)."""
        return LLMError(
            f"LLM provider {self.name} cannot call tools; use the openai provider with a "
            "model that supports tools, or the scripted provider for tests",
            provider=self.name,
        )

    async def aclose(self) -> None:  # noqa: B027 - optional hook, deliberately not abstract
        """Release the provider's resources (connections); the default has none."""

    async def __aenter__(self) -> LLMProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} model={self.model!r}>"
