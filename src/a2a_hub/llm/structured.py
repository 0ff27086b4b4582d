"""Structured answers: ask for JSON matching a schema, parse it, check it, ask again once.

Providers that can (embedded, OpenAI-compatible servers) constrain the output to the
schema, but small models still run out of tokens mid-object and some servers ignore
``response_format``; :func:`structured` copes with both and fails with a clear
:class:`LLMError` when the model does not manage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from a2a_hub.llm._schema import validate
from a2a_hub.llm.base import ChatMessage, LLMError, LLMProvider

__all__ = ["parse_json_reply", "structured"]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_EXCERPT = 200


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def parse_json_reply(text: str) -> Any:
    """The JSON value in a model's reply: the whole text, a fenced block or the outer ``{…}``.

    Raises ValueError when none of those parses.
    """
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    error: ValueError | None = None
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except ValueError as exc:
            error = error or exc
    raise error or ValueError("the reply is empty")


async def structured(
    provider: LLMProvider,
    messages: Sequence[ChatMessage],
    schema: dict[str, Any],
    *,
    tries: int = 2,
    max_tokens: int = 512,
    temperature: float = 0.2,
) -> dict[str, Any]:
    """Ask ``provider`` for a JSON object matching ``schema`` and return it parsed.

    The schema should describe an object.  The reply is checked against the schema's core
    rules (types, required properties, enums, bounds); when it breaks them, the model is
    shown its reply and what is wrong and asked again, up to ``tries`` attempts in all.
    Raises :class:`LLMError` ("... did not return valid JSON for the schema after N tries:
    <problem>: <excerpt>") when no attempt fits; provider failures propagate as LLMError.
    """
    if tries < 1:
        raise ValueError(f"tries must be at least 1, not {tries}")
    conversation = list(messages)
    problem = ""
    text = ""
    for _attempt in range(tries):
        text = await provider.complete(
            conversation, max_tokens=max_tokens, temperature=temperature, json_schema=schema
        )
        try:
            value = parse_json_reply(text)
        except ValueError as exc:
            problem = f"not JSON ({exc})"
        else:
            if not isinstance(value, dict):
                problem = f"expected a JSON object, got {type(value).__name__}"
            else:
                problems = validate(value, schema)
                if not problems:
                    return value
                problem = "; ".join(problems[:5])
        conversation += [
            ChatMessage(role="assistant", content=text),
            ChatMessage(
                role="user",
                content=(
                    f"That reply is not valid: {problem}. Reply with only a JSON object "
                    f"matching this JSON schema, nothing else: {json.dumps(schema)}"
                ),
            ),
        ]
    plural = "try" if tries == 1 else "tries"
    raise LLMError(
        f"LLM provider {provider.name} did not return valid JSON for the schema after "
        f"{tries} {plural}: {problem}: {_excerpt(text)!r}",
        provider=provider.name,
        tries=tries,
    )
