"""The one interface every LLM provider implements, in the OpenAI chat-completions shape.

A provider takes a conversation (a sequence of :class:`ChatMessage`) and returns the
assistant's reply as text, either whole (:meth:`LLMProvider.complete`) or as text chunks
(:meth:`LLMProvider.stream`).  With ``json_schema`` the reply is a JSON document meant to
match that schema; :func:`a2a_hub.llm.structured.structured` parses and checks it.

Every failure a caller should handle surfaces as :class:`LLMError`, whose message names the
provider, how many tries were made and what went wrong.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec

__all__ = ["ROLES", "ChatMessage", "LLMError", "LLMProvider", "to_wire"]

#: The roles a :class:`ChatMessage` may have.
ROLES = frozenset({"system", "user", "assistant"})


class ChatMessage(msgspec.Struct):
    """One turn of a conversation: ``role`` is ``system``, ``user`` or ``assistant``."""

    role: str
    content: str


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


def to_wire(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """The conversation as OpenAI ``messages``; raises ValueError on an empty one or a bad role."""
    if not messages:
        raise ValueError("an LLM conversation needs at least one message")
    wire = []
    for i, m in enumerate(messages):
        if m.role not in ROLES:
            raise ValueError(
                f"message {i} has role {m.role!r}; expected one of {', '.join(sorted(ROLES))}"
            )
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

    async def aclose(self) -> None:  # noqa: B027 - optional hook, deliberately not abstract
        """Release the provider's resources (connections); the default has none."""

    async def __aenter__(self) -> LLMProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} model={self.model!r}>"
