"""The openai provider against a small fake OpenAI-compatible server on a loopback socket."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from a2a_hub.llm import ChatMessage, LLMError, get_provider, structured
from a2a_hub.llm._retry import backoff
from a2a_hub.llm.openai import OpenAIProvider
from a2a_hub.server import Hub
from a2a_hub.settings import load_settings

JUDGE_SCHEMA: dict[str, Any] = {
    "title": "Debate verdict",
    "type": "object",
    "properties": {
        "winner": {"type": "string", "enum": ["pro", "con"]},
        "score": {"type": "integer", "minimum": 1, "maximum": 10},
    },
    "required": ["winner", "score"],
}

HELLO = [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="Hi")]


class FakeOpenAI:
    """A chat-completions endpoint whose failures and replies a test plans."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.failures: list[int] = []  # statuses to answer with, in order, before succeeding
        self.retry_after: str | None = None
        self.delay = 0.0
        self.reply = "Hello there."
        self.deltas = ["Hel", "lo", " world", "!"]
        self.stream_error_after: int | None = None
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append({"body": body, "headers": dict(request.headers)})
        if self.failures:
            status = self.failures.pop(0)
            headers = {"Retry-After": self.retry_after} if self.retry_after else None
            return JSONResponse(
                {"error": {"message": f"planned failure {status}", "type": "test"}},
                status_code=status,
                headers=headers,
            )
        if self.delay:
            await asyncio.sleep(self.delay)
        if body.get("stream"):
            return StreamingResponse(self._events(), media_type="text/event-stream")
        content = self.reply
        if body.get("response_format", {}).get("type") == "json_schema":
            content = json.dumps({"winner": "con", "score": 7})
        return JSONResponse(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
            }
        )

    async def _events(self) -> AsyncIterator[str]:
        def event(payload: dict[str, Any]) -> str:
            return f"data: {json.dumps(payload)}\n\n"

        yield ": keep-alive comment\n\n"
        yield event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        for i, delta in enumerate(self.deltas):
            if self.stream_error_after is not None and i == self.stream_error_after:
                yield event({"error": {"message": "the model fell over"}})
                return
            await asyncio.sleep(0.01)
            yield event({"choices": [{"index": 0, "delta": {"content": delta}}]})
        yield event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        yield event({"choices": [], "usage": {"total_tokens": 9}})
        yield "data: [DONE]\n\n"


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeOpenAI, str]]:
    server_app = FakeOpenAI()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(server_app.app, log_level="warning", lifespan="off"))
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield server_app, f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        await task
        sock.close()


def provider(base_url: str, **options: Any) -> OpenAIProvider:
    options.setdefault("base_delay", 0.01)
    return OpenAIProvider(model="fake-model", base_url=base_url, api_key="sk-test", **options)


async def test_plain_completion(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    async with provider(url) as llm:
        reply = await llm.complete(HELLO, max_tokens=20, temperature=0.3)
    assert reply == "Hello there."
    [req] = server.requests
    assert req["headers"]["authorization"] == "Bearer sk-test"
    assert req["body"] == {
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "temperature": 0.3,
        "max_tokens": 20,
    }


async def test_json_schema_is_passed_through(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    async with provider(url) as llm:
        text = await llm.complete(HELLO, json_schema=JUDGE_SCHEMA)
        assert json.loads(text) == {"winner": "con", "score": 7}
        assert await structured(llm, HELLO, JUDGE_SCHEMA) == {"winner": "con", "score": 7}
    fmt = server.requests[0]["body"]["response_format"]
    assert fmt == {
        "type": "json_schema",
        "json_schema": {"name": "Debate_verdict", "schema": JUDGE_SCHEMA},
    }


async def test_streaming_deltas(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    async with provider(url) as llm:
        chunks = [c async for c in llm.stream(HELLO, max_tokens=10)]
    assert chunks == ["Hel", "lo", " world", "!"]
    assert server.requests[0]["body"]["stream"] is True
    assert server.requests[0]["headers"]["accept"] == "text/event-stream"


async def test_stream_can_be_left_early(fake: tuple[FakeOpenAI, str]) -> None:
    _, url = fake
    async with provider(url) as llm:
        async for chunk in llm.stream(HELLO):
            assert chunk == "Hel"
            break
        assert await llm.complete(HELLO) == "Hello there."  # the connection pool is fine


async def test_error_inside_the_stream(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.stream_error_after = 2
    got: list[str] = []
    async with provider(url) as llm:
        with pytest.raises(LLMError, match="failed mid-stream: the model fell over"):
            async for chunk in llm.stream(HELLO):
                got.append(chunk)
    assert got == ["Hel", "lo"]


async def test_retry_on_503_then_success(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.failures = [503, 502]
    async with provider(url, tries=3) as llm:
        assert await llm.complete(HELLO) == "Hello there."
    assert len(server.requests) == 3


async def test_stream_retries_before_the_first_chunk(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.failures = [503]
    async with provider(url) as llm:
        assert "".join([c async for c in llm.stream(HELLO)]) == "Hello world!"
    assert len(server.requests) == 2


async def test_429_exhausted_gives_a_clear_error(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.failures = [429, 429, 429]
    async with provider(url, tries=3) as llm:
        with pytest.raises(LLMError) as info:
            await llm.complete(HELLO)
    message = str(info.value)
    assert message.startswith(
        f"LLM provider openai failed after 3 tries: HTTP 429 from {url}/chat/completions"
    )
    assert "planned failure 429" in message
    assert info.value.status == 429
    assert info.value.tries == 3
    assert len(server.requests) == 3


async def test_retry_after_is_honoured(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.failures = [429]
    server.retry_after = "0.3"
    async with provider(url, tries=2) as llm:
        started = time.perf_counter()
        assert await llm.complete(HELLO) == "Hello there."
    assert time.perf_counter() - started >= 0.3


async def test_400_fails_at_once(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.failures = [400]
    async with provider(url, tries=5) as llm:
        with pytest.raises(LLMError) as info:
            await llm.complete(HELLO)
    assert str(info.value) == (
        f"LLM provider openai failed: HTTP 400 from {url}/chat/completions: planned failure 400"
    )
    assert info.value.status == 400
    assert len(server.requests) == 1


async def test_401_hints_at_the_key(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.failures = [401]
    async with provider(url) as llm:
        with pytest.raises(LLMError, match=r"HTTP 401 .*\(check A2A_HUB_LLM_API_KEY"):
            [c async for c in llm.stream(HELLO)]
    assert len(server.requests) == 1


async def test_timeout_is_retried_then_reported(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    server.delay = 1.0
    async with provider(url, tries=2, timeout=0.2) as llm:
        with pytest.raises(LLMError, match=r"failed after 2 tries: timed out after 0\.2 s"):
            await llm.complete(HELLO)
    assert len(server.requests) == 2


async def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the provider connects
    async with provider(f"http://127.0.0.1:{port}/v1", tries=2) as llm:
        with pytest.raises(LLMError, match="failed after 2 tries: ConnectError"):
            await llm.complete(HELLO)


def test_backoff_grows_with_jitter_and_respects_caps() -> None:
    policy = backoff(tries=5, base_delay=0.5, max_delay=2.0)
    for _ in range(50):
        assert 0.25 <= policy.delay(1) <= 0.5
        assert 0.5 <= policy.delay(2) <= 1.0
        assert 1.0 <= policy.delay(4) <= 2.0
        assert 1.5 <= policy.delay(1, retry_after=1.5) <= 2.0
        assert policy.delay(1, retry_after=60) == 2.0
    with pytest.raises(ValueError):
        backoff(tries=0)


def test_get_provider_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the settings: the variables fill ``settings.llm``, a hub makes it the default."""
    monkeypatch.setenv("A2A_HUB_LLM_PROVIDER", "openai")
    monkeypatch.setenv("A2A_HUB_LLM_MODEL", "llama3.2")
    monkeypatch.setenv("A2A_HUB_LLM_BASE_URL", "http://localhost:11434/v1/")
    monkeypatch.delenv("A2A_HUB_LLM_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
    llm = get_provider(settings=load_settings().llm, tries=4)
    assert isinstance(llm, OpenAIProvider)
    assert llm.model == "llama3.2"
    assert llm.url == "http://localhost:11434/v1/chat/completions"
    assert llm.policy.max_tries == 3  # 4 tries: the first and 3 retries
    assert llm._headers["Authorization"] == "Bearer sk-fallback"
    monkeypatch.setenv("A2A_HUB_LLM_API_KEY", "sk-hub")
    Hub(load_settings(overrides={"agents": ["echo"], "store": "memory://"}))
    assert get_provider()._headers["Authorization"] == "Bearer sk-hub"  # type: ignore[attr-defined]
    explicit = get_provider("openai", model="m", base_url="https://x.test/v1", api_key="k")
    assert isinstance(explicit, OpenAIProvider)
    assert (explicit.model, explicit.url) == ("m", "https://x.test/v1/chat/completions")
