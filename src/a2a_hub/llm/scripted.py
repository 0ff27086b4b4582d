"""The ``scripted`` provider: deterministic replies for tests and demos, no model at all.

Every reply starts with ``[scripted]`` so nobody mistakes it for a model's answer.  The
reply depends only on the conversation: the sentence is chosen by the number of user turns
(so a multi-turn exchange rotates through the set) and quotes the last user message.
For a ``json_schema`` request it returns the smallest JSON value valid for the schema,
with strings saying ``[scripted] …``, so callers can parse and use it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from a2a_hub.llm._schema import example_for
from a2a_hub.llm.base import ChatMessage, LLMProvider, to_wire

__all__ = ["MARKER", "SENTENCES", "ScriptedProvider"]

#: How every scripted reply begins.
MARKER = "[scripted]"

#: The default rotation; ``{topic}`` is an excerpt of the last user message.
SENTENCES = (
    'You said "{topic}". That is worth a careful answer.',
    'About "{topic}": there are good arguments on both sides.',
    'Consider "{topic}" once more: the evidence points one way.',
    'On "{topic}", I stand by what I said before.',
)

_TOPIC_CHARS = 80


def _topic(messages: Sequence[ChatMessage]) -> str:
    last = next((m.content for m in reversed(messages) if m.role == "user"), "")
    text = " ".join(last.split())
    if len(text) > _TOPIC_CHARS:
        text = text[: _TOPIC_CHARS - 1].rstrip() + "…"
    return text or "nothing"


class ScriptedProvider(LLMProvider):
    """Canned, deterministic replies built from the conversation.

    ``replies`` replaces the default sentences (each may use ``{topic}``); ``delay`` adds
    that many seconds per reply to imitate a slow model (streaming spreads it over the
    chunks).  ``max_tokens`` cuts a plain reply to that many words.
    """

    name = "scripted"

    def __init__(
        self,
        *,
        model: str | None = None,
        replies: Sequence[str] | None = None,
        delay: float = 0.0,
    ) -> None:
        self.model = model or "scripted"
        self.replies = tuple(replies) if replies else SENTENCES
        self.delay = float(delay)

    def reply_for(self, messages: Sequence[ChatMessage], *, max_tokens: int = 256) -> str:
        """The plain-text reply to ``messages``, without waiting."""
        to_wire(messages)  # same validation as the real providers
        turn = sum(1 for m in messages if m.role == "user")
        sentence = self.replies[max(turn - 1, 0) % len(self.replies)]
        words = f"{MARKER} {sentence.format(topic=_topic(messages))}".split(" ")
        return " ".join(words[: max(max_tokens, 1)])

    def json_for(self, messages: Sequence[ChatMessage], schema: dict[str, Any]) -> str:
        """The JSON reply to ``messages`` for ``schema``: a minimal valid value."""
        to_wire(messages)
        value = example_for(schema, text=f"{MARKER} {_topic(messages)}")
        return json.dumps(value, ensure_ascii=False)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        """A deterministic reply; with ``json_schema`` a JSON value valid for it."""
        if self.delay:
            await asyncio.sleep(self.delay)
        if json_schema is not None:
            return self.json_for(messages, json_schema)
        return self.reply_for(messages, max_tokens=max_tokens)

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> AsyncIterator[str]:
        """The same reply as :meth:`complete`, one word (with its leading space) per chunk."""
        words = self.reply_for(messages, max_tokens=max_tokens).split(" ")
        pause = self.delay / len(words)
        for i, word in enumerate(words):
            if pause:
                await asyncio.sleep(pause)
            yield word if i == 0 else " " + word
