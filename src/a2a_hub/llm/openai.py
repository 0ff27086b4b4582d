"""The ``openai`` provider: any OpenAI-compatible chat-completions endpoint over HTTP.

Works with OpenAI itself, Gemini's OpenAI endpoint
(``https://generativelanguage.googleapis.com/v1beta/openai``), Ollama
(``http://localhost:11434/v1``), vLLM and the llama.cpp server: it POSTs to
``{base_url}/chat/completions`` with ``Authorization: Bearer <api_key>`` when a key is set.
Structured answers use ``response_format: {"type": "json_schema", ...}``; streaming uses
``stream: true`` and reads the server-sent ``data:`` chunks up to ``[DONE]``.  Tool calling
sends ``tools`` and reads ``choices[0].message.tool_calls`` (any server and model that
support the OpenAI ``tools`` parameter).

Timeouts, connection errors, HTTP 408, 429 and 5xx are retried with exponential backoff
and jitter (honouring ``Retry-After``); any other 4xx fails at once.  A stream is retried
only until its first chunk has arrived.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from a2a_hub import metrics, tracing
from a2a_hub.llm._retry import TransientError, backoff, retry
from a2a_hub.llm.base import ChatMessage, ChatReply, LLMError, LLMProvider, ToolCall, to_wire

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "OpenAIProvider"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"

_TRANSIENT_STATUS = frozenset({408, 429})
_EXCERPT = 300


def _excerpt(text: str, limit: int = _EXCERPT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error_detail(response: httpx.Response) -> str:
    """The server's own error message when it sent one in the usual shape, else the body."""
    try:
        data = response.json()
    except ValueError:
        return _excerpt(response.text) or response.reason_phrase
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]  # Gemini wraps its error object in a list
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return _excerpt(err["message"])
        if isinstance(err, str):
            return _excerpt(err)
    return _excerpt(response.text)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _schema_name(schema: Mapping[str, Any]) -> str:
    title = schema.get("title")
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", title).strip("_") if isinstance(title, str) else ""
    return (name or "answer")[:64]


def _content_text(content: Any) -> str | None:
    """A message's ``content``: a string, or (some servers) a list of text parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content)


class OpenAIProvider(LLMProvider):
    """Chat completions from an OpenAI-compatible HTTP API.

    ``base_url`` ends before ``/chat/completions`` (e.g. ``https://api.openai.com/v1``);
    ``api_key`` is sent as a bearer token when given.  ``timeout`` bounds each HTTP exchange
    (for a stream: the wait for each chunk).  ``tries``, ``base_delay`` and ``max_delay``
    shape the retries.  ``headers`` and ``extra_body`` are added to every request (say,
    ``{"max_completion_tokens": 512}`` with ``max_tokens_param=None`` for models that
    refuse ``max_tokens``).  ``client`` or ``transport`` substitute the HTTP layer; a client
    passed in is not closed by :meth:`aclose`.
    """

    name = "openai"
    supports_tools = True

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        tries: int = 3,
        base_delay: float = 0.5,
        max_delay: float = 8.0,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        max_tokens_param: str | None = "max_tokens",
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model or DEFAULT_MODEL
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.timeout = float(timeout)
        self.policy = backoff(int(tries), float(base_delay), float(max_delay))
        self._headers = {"Accept": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._extra_body = dict(extra_body or {})
        self._max_tokens_param = max_tokens_param
        self._transport = transport
        self._client = client
        self._owns_client = client is None

    # ------------------------------------------------------------------ plumbing

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
                transport=self._transport,
                follow_redirects=True,
            )
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client this provider created (not one passed in)."""
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    def _body(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        temperature: float,
        json_schema: dict[str, Any] | None = None,
        stream: bool = False,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire(messages),
            "temperature": temperature,
        }
        if self._max_tokens_param:
            body[self._max_tokens_param] = max_tokens
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": _schema_name(json_schema), "schema": json_schema},
            }
        if stream:
            body["stream"] = True
        if tools:
            body["tools"] = list(tools)
        body.update(self._extra_body)
        return body

    def _transport_failure(self, exc: httpx.HTTPError) -> TransientError:
        if isinstance(exc, httpx.TimeoutException):
            return TransientError(f"timed out after {self.timeout:g} s waiting for {self.url}")
        detail = str(exc) or type(exc).__name__
        return TransientError(f"{type(exc).__name__} for {self.url}: {detail}")

    def _check_status(self, response: httpx.Response) -> None:
        """Raise TransientError (retry) or LLMError (give up) for an error status."""
        status = response.status_code
        if status < 400:
            return
        message = f"HTTP {status} from {self.url}: {_error_detail(response)}"
        if status in _TRANSIENT_STATUS or status >= 500:
            raise TransientError(message, status=status, retry_after=_retry_after(response))
        hint = ""
        if status in (401, 403):
            hint = " (check A2A_HUB_LLM_API_KEY or OPENAI_API_KEY)"
        elif status == 404:
            hint = f" (check the base URL {self.base_url!r} and the model {self.model!r})"
        raise LLMError(
            f"LLM provider {self.name} failed: {message}{hint}",
            provider=self.name,
            status=status,
            tries=1,
        )

    def _bad_reply(self, what: str) -> LLMError:
        return LLMError(
            f"LLM provider {self.name} got an unusable reply from {self.url}: {what}",
            provider=self.name,
        )

    # ------------------------------------------------------------------ API

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        """POST one chat completion and return the first choice's text."""
        message = await self._post(
            self._body(
                messages, max_tokens=max_tokens, temperature=temperature, json_schema=json_schema
            )
        )
        text = _content_text(message.get("content"))
        if text is None:
            refusal = message.get("refusal")
            if refusal:
                raise self._bad_reply(f"the model refused: {_excerpt(str(refusal))}")
            raise self._bad_reply("the message has no content")
        return text

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> ChatReply:
        """POST one chat completion offering ``tools``; the text and the tool calls chosen."""
        message = await self._post(
            self._body(messages, max_tokens=max_tokens, temperature=temperature, tools=tools)
        )
        calls = [self._tool_call(raw) for raw in message.get("tool_calls") or []]
        text = _content_text(message.get("content")) or ""
        if not calls and not text:
            refusal = message.get("refusal")
            if refusal:
                raise self._bad_reply(f"the model refused: {_excerpt(str(refusal))}")
        return ChatReply(text=text, tool_calls=calls)

    def _tool_call(self, raw: Any) -> ToolCall:
        function = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise self._bad_reply(f"a tool call without a function name: {_excerpt(str(raw))}")
        arguments: Any = function.get("arguments") or "{}"
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                raise self._bad_reply(
                    f"the arguments of tool call {function['name']!r} are not JSON: "
                    f"{_excerpt(arguments)!r}"
                ) from None
        if not isinstance(arguments, dict):
            raise self._bad_reply(
                f"the arguments of tool call {function['name']!r} are not a JSON object"
            )
        call_id = raw.get("id") if isinstance(raw.get("id"), str) else ""
        return ToolCall(
            id=call_id or f"call-{function['name']}", name=function["name"], arguments=arguments
        )

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST a chat completion (with retries) and return ``choices[0].message``."""

        async def attempt() -> Any:
            try:
                response = await self._http().post(
                    self.url, json=body, headers=tracing.inject_headers({**self._headers})
                )
            except httpx.HTTPError as exc:
                raise self._transport_failure(exc) from exc
            self._check_status(response)
            try:
                return response.json()
            except ValueError as exc:
                raise self._bad_reply(f"not JSON: {_excerpt(response.text)!r}") from exc

        data = await retry(attempt, provider=self.name, policy=self.policy)
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            metrics.llm_tokens(
                self.name, usage.get("prompt_tokens"), usage.get("completion_tokens")
            )
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise self._bad_reply(f"no choices[0].message in {_excerpt(json.dumps(data))}") from exc
        if not isinstance(message, dict):
            raise self._bad_reply("choices[0].message is not an object")
        return message

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> AsyncIterator[str]:
        """Stream the reply's text deltas from the server-sent events."""
        body = self._body(messages, max_tokens=max_tokens, temperature=temperature, stream=True)
        headers = tracing.inject_headers({**self._headers, "Accept": "text/event-stream"})

        async def open_stream() -> httpx.Response:
            client = self._http()
            request = client.build_request("POST", self.url, json=body, headers=headers)
            try:
                response = await client.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise self._transport_failure(exc) from exc
            if response.status_code >= 400:
                try:
                    await response.aread()
                except httpx.HTTPError:
                    pass
                finally:
                    await response.aclose()
                self._check_status(response)
            return response

        response = await retry(open_stream, provider=self.name, policy=self.policy)
        try:
            data_lines: list[str] = []
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    data_lines.append(line[5:].removeprefix(" "))
                    continue
                if line or not data_lines:
                    continue  # comments, event:/id: fields, keep-alive blank lines
                payload, data_lines = "\n".join(data_lines), []
                if payload.strip() == "[DONE]":
                    return
                delta = self._delta(payload)
                if delta:
                    yield delta
            if data_lines and data_lines[0].strip() != "[DONE]":
                delta = self._delta("\n".join(data_lines))
                if delta:
                    yield delta
        except httpx.HTTPError as exc:
            raise LLMError(
                f"LLM provider {self.name} failed: the stream from {self.url} broke off: "
                f"{self._transport_failure(exc)}",
                provider=self.name,
            ) from exc
        finally:
            await response.aclose()

    def _delta(self, payload: str) -> str:
        try:
            chunk = json.loads(payload)
        except ValueError as exc:
            raise self._bad_reply(f"a stream chunk is not JSON: {_excerpt(payload)!r}") from exc
        if isinstance(chunk, dict) and chunk.get("error"):
            err = chunk["error"]
            detail = err.get("message") if isinstance(err, dict) else err
            raise LLMError(
                f"LLM provider {self.name} failed mid-stream: {_excerpt(str(detail))}",
                provider=self.name,
            )
        try:
            delta = chunk["choices"][0].get("delta") or {}
        except (KeyError, IndexError, TypeError, AttributeError):
            return ""  # e.g. a final usage-only chunk
        return _content_text(delta.get("content")) or ""
