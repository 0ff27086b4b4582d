"""The OpenAI chat-completions wire types of the hub's LLM endpoint (``/llm/v1``).

Only what the endpoint reads and writes: a request (``model``, ``messages``, ``stream``,
``tools``, ``max_tokens`` …; fields it does not use, such as ``top_p`` or ``user``, are
accepted and ignored, as OpenAI-compatible servers do), a whole completion, a stream chunk,
the model list and the error body.  The shapes follow OpenAI's API reference; a message's
``content`` is a string, ``null`` or a list of parts of which the ``text`` ones count.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "ChatChoice",
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatCompletionRequest",
    "ChatDelta",
    "ChatErrorBody",
    "ChatErrorDetail",
    "ChatResponseMessage",
    "ChunkChoice",
    "FunctionCall",
    "ModelCard",
    "ModelList",
    "RequestMessage",
    "WireToolCall",
]


class FunctionCall(msgspec.Struct):
    """The function a tool call names, with its arguments as a JSON string."""

    name: str = ""
    arguments: str = ""


class WireToolCall(msgspec.Struct, omit_defaults=True):
    """A tool call in a message, or a fragment of one in a stream chunk (with ``index``)."""

    function: FunctionCall
    id: str | None = None
    #: ``function`` (the only kind; written on every call the hub sends).
    type: str | None = None
    index: int | None = None


class RequestMessage(msgspec.Struct):
    """One message of a request: ``system``/``developer``, ``user``, ``assistant`` (maybe
    with ``tool_calls``) or ``tool`` (answering ``tool_call_id``)."""

    role: str
    content: str | list[Any] | None = None
    name: str | None = None
    tool_calls: list[WireToolCall] | None = None
    tool_call_id: str | None = None


class ChatCompletionRequest(msgspec.Struct):
    """``POST /chat/completions``."""

    messages: list[RequestMessage]
    model: str = ""
    stream: bool = False
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    response_format: dict[str, Any] | None = None
    stream_options: dict[str, Any] | None = None
    n: int | None = None


class ChatResponseMessage(msgspec.Struct):
    """The assistant's message of a whole completion (``content`` is null with tool calls)."""

    content: str | None
    role: str = "assistant"
    tool_calls: msgspec.UnsetType | list[WireToolCall] = msgspec.UNSET


class ChatChoice(msgspec.Struct):
    message: ChatResponseMessage
    finish_reason: str
    index: int = 0


class ChatCompletion(msgspec.Struct):
    """A whole completion (``stream`` false)."""

    id: str
    created: int
    model: str
    choices: list[ChatChoice]
    object: str = "chat.completion"


class ChatDelta(msgspec.Struct, omit_defaults=True):
    """What a stream chunk adds to the message."""

    role: str | None = None
    content: str | None = None
    tool_calls: list[WireToolCall] | None = None


class ChunkChoice(msgspec.Struct):
    delta: ChatDelta
    finish_reason: str | None = None
    index: int = 0


class ChatCompletionChunk(msgspec.Struct):
    """One ``data:`` event of a streamed completion."""

    id: str
    created: int
    model: str
    choices: list[ChunkChoice]
    object: str = "chat.completion.chunk"


class ModelCard(msgspec.Struct):
    """One entry of ``GET /models``."""

    id: str
    created: int = 0
    owned_by: str = "a2a-hub"
    object: str = "model"


class ModelList(msgspec.Struct):
    data: list[ModelCard]
    object: str = "list"


class ChatErrorDetail(msgspec.Struct):
    message: str
    type: str
    code: str | None = None
    param: str | None = None


class ChatErrorBody(msgspec.Struct):
    """The error body OpenAI clients read (``error.message``)."""

    error: ChatErrorDetail
