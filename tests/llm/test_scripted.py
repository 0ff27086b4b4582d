"""The scripted provider: deterministic, marked, and valid JSON for any reasonable schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from a2a_hub.llm import ChatMessage, structured
from a2a_hub.llm._schema import example_for, validate
from a2a_hub.llm.scripted import MARKER, SENTENCES, ScriptedProvider


def convo(*texts: str) -> list[ChatMessage]:
    """Alternating user/assistant turns, starting with a system prompt."""
    messages = [ChatMessage(role="system", content="You are a debater.")]
    for i, text in enumerate(texts):
        messages.append(ChatMessage(role="user" if i % 2 == 0 else "assistant", content=text))
    return messages


async def test_reply_is_marked_and_mentions_the_last_user_message() -> None:
    reply = await ScriptedProvider().complete(convo("Is tea better than coffee?"))
    assert reply.startswith(MARKER + " ")
    assert "Is tea better than coffee?" in reply


async def test_same_conversation_same_reply_across_instances() -> None:
    messages = convo("first", "answer", "second question")
    a = await ScriptedProvider().complete(messages, temperature=1.5)
    b = await ScriptedProvider().complete(messages, temperature=0.0)
    assert a == b
    assert a == await ScriptedProvider().complete(messages)


async def test_sentences_rotate_with_the_turns() -> None:
    provider = ScriptedProvider()
    texts = ["one", "r1", "two", "r2", "three", "r3", "four", "r4", "five"]
    replies = [await provider.complete(convo(*texts[: i + 1])) for i in range(0, len(texts), 2)]
    assert len(set(replies[:4])) == 4  # four user turns, four different sentences
    for i, reply in enumerate(replies):
        expected = SENTENCES[i % len(SENTENCES)].format(topic=texts[2 * i])
        assert reply == f"{MARKER} {expected}"


async def test_custom_replies_and_max_tokens() -> None:
    provider = ScriptedProvider(replies=["Echo {topic} now please"])
    assert await provider.complete(convo("hi")) == f"{MARKER} Echo hi now please"
    assert await provider.complete(convo("hi"), max_tokens=2) == f"{MARKER} Echo"


async def test_long_topic_is_shortened() -> None:
    reply = await ScriptedProvider().complete(convo("word " * 100))
    assert "…" in reply
    assert len(reply) < 200


async def test_stream_concatenates_to_the_complete_reply() -> None:
    provider = ScriptedProvider()
    messages = convo("Streams are fun")
    chunks = [c async for c in provider.stream(messages)]
    assert len(chunks) > 3
    assert "".join(chunks) == await provider.complete(messages)


async def test_delay_is_applied() -> None:
    import time

    provider = ScriptedProvider(delay=0.05)
    started = time.perf_counter()
    await provider.complete(convo("x"))
    assert time.perf_counter() - started >= 0.05


async def test_bad_role_is_rejected() -> None:
    with pytest.raises(ValueError, match="role 'tool'"):
        await ScriptedProvider().complete([ChatMessage(role="tool", content="x")])
    with pytest.raises(ValueError, match="at least one message"):
        await ScriptedProvider().complete([])


SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {
            "winner": {"type": "string", "enum": ["pro", "con"]},
            "score": {"type": "integer", "minimum": 1, "maximum": 10},
            "reason": {"type": "string", "minLength": 20},
            "optional": {"type": "string"},
        },
        "required": ["winner", "score", "reason"],
    },
    {
        "type": "object",
        "properties": {
            "points": {
                "type": "array",
                "minItems": 2,
                "items": {
                    "type": "object",
                    "properties": {"claim": {"type": "string", "maxLength": 5}},
                    "required": ["claim"],
                },
            },
            "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "neg": {"type": "integer", "maximum": -3},
            "below": {"type": "number", "exclusiveMaximum": -1.5},
            "flag": {"type": "boolean"},
            "nothing": {"type": "null"},
            "kind": {"const": "verdict"},
            "either": {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]},
            "maybe": {"type": ["null", "integer"], "exclusiveMinimum": 2},
            "when": {"type": "string", "format": "date-time"},
        },
        "required": [
            "points",
            "ratio",
            "neg",
            "below",
            "flag",
            "nothing",
            "kind",
            "either",
            "maybe",
            "when",
        ],
        "additionalProperties": False,
    },
    {
        "$defs": {
            "Side": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }
        },
        "type": "object",
        "properties": {"side": {"$ref": "#/$defs/Side"}},
        "required": ["side"],
    },
    {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string", "enum": ["x"]}}, "required": ["b"]},
        ]
    },
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=["judge", "kitchen-sink", "ref", "allof"])
async def test_json_reply_is_valid_for_the_schema(schema: dict[str, Any]) -> None:
    messages = convo("Who won the debate?")
    text = await ScriptedProvider().complete(messages, json_schema=schema)
    value = json.loads(text)
    assert validate(value, schema) == []
    # deterministic too
    assert text == await ScriptedProvider().complete(messages, json_schema=schema)


async def test_json_strings_say_scripted() -> None:
    text = await ScriptedProvider().complete(convo("Who won?"), json_schema=SCHEMAS[0])
    value = json.loads(text)
    assert value["winner"] == "pro"
    assert value["score"] == 1
    assert value["reason"].startswith(MARKER)
    assert "optional" not in value


async def test_structured_helper_with_scripted() -> None:
    value = await structured(ScriptedProvider(), convo("Judge this"), SCHEMAS[0])
    assert value["winner"] in ("pro", "con")


def test_validate_reports_problems() -> None:
    schema = SCHEMAS[0]
    problems = validate({"winner": "maybe", "score": 11}, schema)
    assert any("missing required property 'reason'" in p for p in problems)
    assert any("'maybe' is not one of" in p for p in problems)
    assert any("above the maximum 10" in p for p in problems)
    assert validate({"winner": "pro", "score": True, "reason": "x" * 20}, schema) == [
        "$.score: expected integer, got bool"
    ]
    assert validate(example_for(schema), schema) == []
