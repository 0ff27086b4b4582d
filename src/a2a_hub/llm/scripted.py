"""The ``scripted`` provider: deterministic replies for tests and demos, no model at all.

Every reply starts with ``[scripted]`` so nobody mistakes it for a model's answer.  The
reply depends only on the conversation: the sentence is chosen by the number of user turns
(so a multi-turn exchange rotates through the set) and quotes the last user message.
For a ``json_schema`` request it returns the smallest JSON value valid for the schema,
with strings saying ``[scripted] …``, so callers can parse and use it.

It calls tools by rule, so that a tool loop can be tested offline (:meth:`ScriptedProvider.chat`):

* when tools are offered and no tool has answered since the last user message, it calls
  every offered tool whose name appears as a word in that message, in the order they
  appear; the arguments are the JSON object written right after the name
  (``add {"a": 2, "b": 3}``), else the smallest value valid for the tool's parameters
  (strings quote the message);
* once tools have answered, it answers ``[scripted] Tool results: add → 5; shout → HI!``;
* when no offered tool is named, it answers as without tools.

:meth:`ScriptedProvider.chat_stream` streams that reply one word per chunk, then its calls.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from a2a_hub.llm._schema import example_for
from a2a_hub.llm.base import ChatMessage, ChatReply, LLMProvider, ToolCall, to_wire

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
    supports_tools = True

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

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> ChatReply:
        """Tool calls by rule (see the module docstring), else the plain reply."""
        to_wire(messages)
        if self.delay:
            await asyncio.sleep(self.delay)
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        since = messages[last_user + 1 :]
        results = [m for m in since if m.role == "tool"]
        if tools and results:
            names = {call.id: call.name for m in since if m.tool_calls for call in m.tool_calls}
            said = "; ".join(
                f"{names.get(m.tool_call_id or '', 'tool')} → {_one_line(m.content)}"
                for m in results
            )
            return ChatReply(text=f"{MARKER} Tool results: {said}")
        calls = _calls_for(messages[last_user].content if last_user >= 0 else "", tools or ())
        if calls:
            return ChatReply(text="", tool_calls=calls)
        return ChatReply(text=self.reply_for(messages, max_tokens=max_tokens))

    async def chat_stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> AsyncIterator[str | ChatReply]:
        """:meth:`chat`'s reply as a stream: its text one word per chunk (as :meth:`stream`),
        then its tool calls."""
        reply = await self.chat(
            messages, tools=tools, max_tokens=max_tokens, temperature=temperature
        )
        for i, word in enumerate(reply.text.split(" ") if reply.text else ()):
            yield word if i == 0 else " " + word
        if reply.tool_calls:
            yield ChatReply(text="", tool_calls=reply.tool_calls)


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _calls_for(text: str, tools: Sequence[dict[str, Any]]) -> list[ToolCall]:
    """The calls the scripted model makes for a user message (see the module docstring)."""
    found: list[tuple[int, ToolCall]] = []
    decoder = json.JSONDecoder()
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        name: str = function["name"]
        match = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)
        if match is None:
            continue
        arguments: Any = None
        rest = text[match.end() :].lstrip()
        if rest.startswith("{"):
            try:
                arguments, _ = decoder.raw_decode(rest)
            except ValueError:
                arguments = None
        if not isinstance(arguments, dict):
            schema = function.get("parameters")
            example = example_for(schema, text=text.strip()) if isinstance(schema, dict) else {}
            arguments = example if isinstance(example, dict) else {}
        found.append((match.start(), ToolCall(id="", name=name, arguments=arguments)))
    found.sort(key=lambda item: item[0])
    return [
        ToolCall(id=f"call-{i + 1}-{call.name}", name=call.name, arguments=call.arguments)
        for i, (_, call) in enumerate(found)
    ]
