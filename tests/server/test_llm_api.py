"""The hub's LLM as an OpenAI-compatible endpoint (``/llm/v1``), through real HTTP.

The client is the ``openai`` package where installed (it is with the ``adk`` extra), else
plain httpx; the provider is the scripted one, so every answer is known.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_hub import AgentSpec, Hub, Settings, llm_api_key, llm_base_url
from a2a_hub.llm.served import LLM_URL_ENV
from a2a_hub.stores.memory import MemoryStore
from tests.support.hub import LiveServer, make_hub

try:
    import openai
except ImportError:  # pragma: no cover - the adk extra installs it
    openai = None  # type: ignore[assignment]

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Adds two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
}


@pytest.fixture
async def served() -> AsyncIterator[LiveServer]:
    hub = make_hub(llm_provider="scripted", llm_models=["second"])
    async with LiveServer(hub) as server:
        yield server


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def sse_events(response: httpx.Response) -> list[str]:
    """The ``data:`` payloads of an SSE response, in order."""
    found = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            found.append(line[5:].strip())
    return found


async def test_non_streaming_completion_answers_in_openai_shape(served: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=f"{served.url}/llm/v1", timeout=30) as http:
        r = await http.post(
            "/chat/completions",
            json={"model": "scripted", "messages": [{"role": "system", "content": "Be brief."},
                                                    user("hello there")]},
        )  # fmt: skip
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-")
    assert body["model"] == "scripted"
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"].startswith('[scripted] You said "hello there"')


@pytest.mark.skipif(openai is None, reason="the openai package is not installed")
async def test_the_openai_client_streams_and_completes(served: LiveServer) -> None:
    client = openai.AsyncOpenAI(base_url=f"{served.url}/llm/v1", api_key="unused", max_retries=0)
    async with client:
        whole = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[user("the sea")]
        )
        text = whole.choices[0].message.content
        assert text is not None and text.startswith('[scripted] You said "the sea"')
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[user("the sea")], stream=True
        )
        pieces = []
        reasons = []
        async for chunk in stream:
            for choice in chunk.choices:
                pieces.append(choice.delta.content or "")
                reasons.append(choice.finish_reason)
    assert len([p for p in pieces if p]) > 3, "the reply came in several chunks"
    assert "".join(pieces) == text
    assert reasons[-1] == "stop" and not any(reasons[:-1])


async def test_a_stream_is_sse_chunks_ending_with_done(served: LiveServer) -> None:
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream(
            "POST",
            f"{served.url}/llm/v1/chat/completions",
            json={"model": "x", "stream": True, "messages": [user("waves")]},
        ) as r,
    ):
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        events = await sse_events(r)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text.startswith('[scripted] You said "waves"')
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


async def test_tools_pass_through_whole_and_streamed(served: LiveServer) -> None:
    ask = [user('please add {"a": 2, "b": 3}')]
    async with httpx.AsyncClient(base_url=f"{served.url}/llm/v1", timeout=30) as http:
        r = await http.post("/chat/completions", json={"messages": ask, "tools": [ADD]})
        choice = r.json()["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        (call,) = choice["message"]["tool_calls"]
        assert call["type"] == "function" and call["function"]["name"] == "add"
        assert json.loads(call["function"]["arguments"]) == {"a": 2, "b": 3}
        # the result goes back as a tool message answering the call's id
        answered = [
            *ask,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": "5"},
        ]
        r = await http.post("/chat/completions", json={"messages": answered, "tools": [ADD]})
        assert r.json()["choices"][0]["message"]["content"] == "[scripted] Tool results: add → 5"
        # streamed: the call arrives as a tool_calls delta with its index
        async with http.stream(
            "POST", "/chat/completions", json={"messages": ask, "tools": [ADD], "stream": True}
        ) as s:
            events = await sse_events(s)
    chunks = [json.loads(e) for e in events[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    (streamed,) = [d["tool_calls"][0] for d in deltas if d.get("tool_calls")]
    assert streamed["index"] == 0 and streamed["function"]["name"] == "add"
    assert json.loads(streamed["function"]["arguments"]) == {"a": 2, "b": 3}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_a_text_answer_streams_in_chunks_when_tools_are_offered(
    served: LiveServer,
) -> None:
    body = {"messages": [user("no tool named here")], "tools": [ADD], "stream": True}
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream("POST", f"{served.url}/llm/v1/chat/completions", json=body) as s,
    ):
        events = await sse_events(s)
    chunks = [json.loads(e) for e in events[:-1]]
    texts = [c["choices"][0]["delta"].get("content") for c in chunks]
    assert len([t for t in texts if t]) > 3
    assert "".join(t or "" for t in texts).startswith('[scripted] You said "no tool named here"')
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


async def test_a_known_model_is_chosen_and_any_other_name_falls_back(served: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=f"{served.url}/llm/v1", timeout=30) as http:
        models = (await http.get("/models")).json()
        assert models["object"] == "list"
        assert [m["id"] for m in models["data"]] == ["scripted", "second"]
        for asked, got in (("second", "second"), ("openai/second", "second"),
                           ("gpt-4o", "scripted"), ("", "scripted")):  # fmt: skip
            body = {"model": asked, "messages": [user("hi")]}
            r = await http.post("/chat/completions", json=body)
            assert r.json()["model"] == got, asked
        assert (await http.get("/models/whatever")).json()["id"] == "scripted"


async def test_bad_requests_get_openai_errors(served: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=f"{served.url}/llm/v1", timeout=30) as http:
        for body, says in (
            (b"{not json", "bad chat-completions request"),
            (b'{"model": "x"}', "messages"),
            (b'{"messages": []}', "at least one message"),
            (b'{"messages": [{"role": "robot", "content": "x"}]}', "role 'robot'"),
            (b'{"messages": [{"role": "tool", "content": "5"}]}', "tool_call_id"),
        ):
            r = await http.post("/chat/completions", content=body)
            assert r.status_code == 400, body
            error = r.json()["error"]
            assert says in error["message"] and error["type"] == "invalid_request_error"
        r = await http.get("/chat/completions")
        assert r.status_code == 405


async def test_completions_are_counted_in_the_llm_metrics(served: LiveServer) -> None:
    def calls(text: str) -> float:
        for line in text.splitlines():
            if line.startswith('a2a_llm_calls_total{outcome="ok",provider="scripted"}'):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        before = calls((await http.get("/metrics")).text)
        await http.post("/llm/v1/chat/completions", json={"messages": [user("a")]})
        body = {"messages": [user("b")], "stream": True}
        async with http.stream("POST", "/llm/v1/chat/completions", json=body) as s:
            await sse_events(s)
        after = calls((await http.get("/metrics")).text)
    assert after - before == 2


def locked_hub(tmp_path: Path) -> Hub:
    settings = Settings.from_flat(
        agents=[AgentSpec(id="locked", kind="echo", auth="api-key")],
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
        llm_provider="scripted",
    )
    return Hub(settings, store=MemoryStore())


async def test_a_hub_with_keys_wants_one_here_too(tmp_path: Path) -> None:
    hub = locked_hub(tmp_path)
    async with LiveServer(hub) as server:
        assert hub.registry is not None
        key, _ = await hub.registry.create_key()
        reader, _ = await hub.registry.create_key(scopes=["read-all"])
        ask = {"messages": [user("hi")]}
        async with httpx.AsyncClient(base_url=f"{server.url}/llm/v1", timeout=30) as http:
            r = await http.post("/chat/completions", json=ask)
            assert r.status_code == 401 and "www-authenticate" in r.headers
            assert "needs an API key" in r.json()["error"]["message"]
            assert (await http.get("/models")).status_code == 401
            r = await http.post("/chat/completions", json=ask, headers={"X-API-Key": "nope"})
            assert r.status_code == 401
            r = await http.post("/chat/completions", json=ask, headers={"X-API-Key": reader})
            assert r.status_code == 403
            for headers in ({"X-API-Key": key}, {"Authorization": f"Bearer {key}"},
                            {"Authorization": f"Bearer {llm_api_key()}"}):  # fmt: skip
                r = await http.post("/chat/completions", json=ask, headers=headers)
                assert r.status_code == 200, (headers, r.text)
            # the hub's own token opens the LLM endpoint and nothing else
            token = {"X-API-Key": llm_api_key()}
            r = await http.get(f"{server.url}/a2a/locked/tasks", headers=token)
            assert r.status_code == 401
            r = await http.get(f"{server.url}/admin/v1/agents", headers=token)
            assert r.status_code == 401


async def test_the_openai_client_is_refused_without_a_key(tmp_path: Path) -> None:
    if openai is None:
        pytest.skip("the openai package is not installed")
    async with LiveServer(locked_hub(tmp_path)) as server:
        base = f"{server.url}/llm/v1"
        async with openai.AsyncOpenAI(base_url=base, api_key="wrong", max_retries=0) as client:
            with pytest.raises(openai.AuthenticationError, match="Unknown API key"):
                await client.models.list()
        async with openai.AsyncOpenAI(base_url=base, api_key=llm_api_key()) as client:
            assert [m.id async for m in client.models.list()] == ["scripted"]


def test_llm_base_url_is_the_served_hubs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LLM_URL_ENV, "http://10.0.0.5:9000/llm/v1")
    assert llm_base_url() == "http://10.0.0.5:9000/llm/v1"
    monkeypatch.delenv(LLM_URL_ENV)
    make_hub(port=8123, host="0.0.0.0")
    assert llm_base_url() == "http://127.0.0.1:8123/llm/v1"
    assert os.environ.get(LLM_URL_ENV) is None
