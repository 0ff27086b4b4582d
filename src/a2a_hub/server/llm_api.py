"""The hub's LLM as an OpenAI-compatible endpoint for the agents it hosts: ``/llm/v1``.

Routes::

    GET  /llm/v1/models                 the models served, the default one first
    GET  /llm/v1/models/{model}         one of them (any other name: the default one)
    POST /llm/v1/chat/completions       a completion, whole or streamed (SSE ``data:`` chunks
                                        ending with ``data: [DONE]``)

The hub's configured provider answers (:class:`~a2a_hub.llm.served.ServedModels`: the embedded
model by default, the OpenAI-compatible upstream with the key the hub keeps, or the scripted
one); ``model`` picks one of the configured models and any other name gets the default one.
``tools`` and the messages' ``tool_calls`` / ``tool`` results pass through to providers that
can call tools (``openai``, ``scripted``); the embedded model answers in text without them.
``response_format`` ``json_schema`` / ``json_object`` asks for JSON.

Protection is the agents': on a hub where some agent needs an API key (or ``require_keys``),
a request needs a key (``X-API-Key`` or ``Authorization: Bearer``) that may invoke; the agents
the hub hosts use the hub's own token instead (:func:`~a2a_hub.llm.served.llm_api_key`), which
opens this endpoint and nothing else.  Every completion is counted in ``a2a_llm_calls_total``
and ``a2a_llm_call_duration_seconds`` (the ``openai`` provider adds ``a2a_llm_tokens_total``).
Errors have OpenAI's shape (``{"error": {"message", "type", "code"}}``).
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from a2a_hub import metrics
from a2a_hub.llm import ChatMessage, ChatReply, LLMError, LLMProvider, ToolCall
from a2a_hub.llm.served import llm_api_key
from a2a_hub.protocol.chat_completions import (
    ChatChoice,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatDelta,
    ChatErrorBody,
    ChatErrorDetail,
    ChatResponseMessage,
    ChunkChoice,
    FunctionCall,
    ModelCard,
    ModelList,
    RequestMessage,
    WireToolCall,
)
from a2a_hub.protocol.errors import (
    A2AError,
    InvalidRequestError,
    PermissionDeniedError,
    UnauthenticatedError,
)
from a2a_hub.server.caller import caller_of
from a2a_hub.server.errors import JSON, WWW_AUTHENTICATE, protocol_error
from a2a_hub.server.http import hub_of, read_body
from a2a_hub.server.scope import STREAM_KEY

__all__ = ["LLM_ROUTES", "HubTokenMiddleware"]

#: The ``scope["state"]`` flag of a request carrying the hub's own LLM token.
_HUB_TOKEN = "llm_hub_token"
#: The reply length when the request names none.
DEFAULT_MAX_TOKENS = 512

_enc = msgspec.json.Encoder()
_request = msgspec.json.Decoder(ChatCompletionRequest)
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
          404: "not_found_error", 413: "invalid_request_error"}  # fmt: skip


class HubTokenMiddleware:
    """Pure ASGI: a request carrying the hub's own token (the hosted agents') is marked as
    such and its key removed, so that the caller middleware inside sees no key to look up."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _carries_hub_token(scope):
            scope = {
                **scope,
                "headers": [
                    (k, v) for k, v in scope["headers"] if k not in (b"authorization", b"x-api-key")
                ],
                "state": {**scope.get("state", {}), _HUB_TOKEN: True},
            }
        await self.app(scope, receive, send)


def _carries_hub_token(scope: Scope) -> bool:
    token = llm_api_key().encode("latin-1")
    for name, value in scope["headers"]:
        if name == b"x-api-key" and secrets.compare_digest(value.strip(), token):
            return True
        if name == b"authorization":
            scheme, _, given = value.partition(b" ")
            if scheme.lower() == b"bearer" and secrets.compare_digest(given.strip(), token):
                return True
    return False


def _error(status: int, message: str, code: str | None = None) -> Response:
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = _enc.encode(ChatErrorBody(ChatErrorDetail(message=message, type=kind, code=code)))
    response = Response(body, status, media_type=JSON)
    if status == 401:
        response.headers["WWW-Authenticate"] = WWW_AUTHENTICATE
    return response


def _a2a_error(err: A2AError) -> Response:
    return _error(err.http_status, err.message, err.reason.lower())


def _llm_error(exc: LLMError) -> Response:
    """An upstream's refusal of the request itself (400, 404, 413, 422) is the client's;
    anything else (a timeout, 5xx, the hub's own key refused) is a bad gateway."""
    status = exc.status if exc.status in (400, 404, 413, 422) else 502
    return _error(status, str(exc), "llm_error")


def _check_caller(request: Request) -> None:
    """Open hubs serve anyone; otherwise an invoking key or the hub's own token."""
    if request.scope.get("state", {}).get(_HUB_TOKEN):
        return
    hub = hub_of(request)
    caller = caller_of(request)
    if hub.auth.open:
        return
    if caller.anonymous:
        raise UnauthenticatedError(
            "The hub's LLM endpoint needs an API key: send X-API-Key: KEY or "
            "Authorization: Bearer KEY"
        )
    if not caller.may_invoke:
        raise PermissionDeniedError("This API key may not invoke (it has no invoke scope)")


async def list_models(request: Request) -> Response:
    """``GET /llm/v1/models``."""
    try:
        _check_caller(request)
        ids = hub_of(request).llm_models.ids()
    except A2AError as err:
        return _a2a_error(err)
    except LLMError as exc:
        return _llm_error(exc)
    return Response(_enc.encode(ModelList([ModelCard(id=i) for i in ids])), media_type=JSON)


async def get_model(request: Request) -> Response:
    """``GET /llm/v1/models/{model}``: the model a request naming it gets."""
    try:
        _check_caller(request)
        provider = hub_of(request).llm_models.provider(request.path_params["model"])
    except A2AError as err:
        return _a2a_error(err)
    except LLMError as exc:
        return _llm_error(exc)
    return Response(_enc.encode(ModelCard(id=provider.model)), media_type=JSON)


def _text(content: str | list[Any] | None, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
            texts.append(str(part.get("text") or ""))
        elif isinstance(part, str):
            texts.append(part)
        else:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise InvalidRequestError(f"{where}: content parts of type {kind!r} are not served")
    return "".join(texts)


def _call(wire: WireToolCall, where: str) -> ToolCall:
    try:
        arguments = json.loads(wire.function.arguments or "{}")
    except ValueError:
        raise InvalidRequestError(f"{where}: the arguments are not JSON") from None
    if not isinstance(arguments, dict):
        raise InvalidRequestError(f"{where}: the arguments are not a JSON object")
    return ToolCall(id=wire.id or f"call-{wire.function.name}", name=wire.function.name,
                    arguments=arguments)  # fmt: skip


def chat_messages(messages: Sequence[RequestMessage]) -> list[ChatMessage]:
    """The request's messages as the providers' :class:`ChatMessage` list."""
    if not messages:
        raise InvalidRequestError("messages: at least one message is needed")
    found = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if m.role == "tool":
            if not m.tool_call_id:
                raise InvalidRequestError(f"{where}: a tool message needs its tool_call_id")
            found.append(ChatMessage("tool", _text(m.content, where), tool_call_id=m.tool_call_id))
            continue
        role = _ROLES.get(m.role)
        if role is None:
            raise InvalidRequestError(
                f"{where}: role {m.role!r} is not served (system, developer, user, assistant, tool)"
            )
        calls = [_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(m.tool_calls or ())]
        found.append(ChatMessage(role, _text(m.content, where), tool_calls=calls or None))
    return found


def _json_schema(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    kind = (response_format or {}).get("type")
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        schema = (response_format or {}).get("json_schema") or {}
        found = schema.get("schema") if isinstance(schema, dict) else None
        return found if isinstance(found, dict) else {"type": "object"}
    return None


def _wire_calls(calls: Sequence[ToolCall], *, indexed: bool = False) -> list[WireToolCall]:
    return [
        WireToolCall(
            id=call.id,
            type="function",
            function=FunctionCall(call.name, json.dumps(call.arguments, ensure_ascii=False)),
            index=i if indexed else None,
        )
        for i, call in enumerate(calls)
    ]


class _Completion:
    """One request: its provider, its options, and the answer in either shape."""

    def __init__(self, body: ChatCompletionRequest, provider: LLMProvider) -> None:
        self.body = body
        self.provider = provider
        self.messages = chat_messages(body.messages)
        self.max_tokens = body.max_completion_tokens or body.max_tokens or DEFAULT_MAX_TOKENS
        self.temperature = 0.7 if body.temperature is None else body.temperature
        self.tools = body.tools if body.tools and provider.supports_tools else None
        self.json_schema = None if self.tools else _json_schema(body.response_format)
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.finish = "stop"

    async def reply(self) -> ChatReply:
        if self.tools:
            return await self.provider.chat(
                self.messages, tools=self.tools, max_tokens=self.max_tokens,
                temperature=self.temperature,
            )  # fmt: skip
        text = await self.provider.complete(
            self.messages, max_tokens=self.max_tokens, temperature=self.temperature,
            json_schema=self.json_schema,
        )  # fmt: skip
        return ChatReply(text=text)

    def whole(self, reply: ChatReply) -> ChatCompletion:
        message = ChatResponseMessage(content=reply.text or None)
        if reply.tool_calls:
            message.tool_calls = _wire_calls(reply.tool_calls)
        elif message.content is None:
            message.content = ""
        reason = "tool_calls" if reply.tool_calls else "stop"
        return ChatCompletion(self.id, self.created, self.provider.model,
                              [ChatChoice(message, reason)])  # fmt: skip

    def chunk(self, delta: ChatDelta, finish: str | None = None) -> bytes:
        chunk = ChatCompletionChunk(self.id, self.created, self.provider.model,
                                    [ChunkChoice(delta, finish)])  # fmt: skip
        return b"data: " + _enc.encode(chunk) + b"\n\n"

    async def deltas(self) -> AsyncGenerator[ChatDelta, None]:
        """The answer as stream deltas: the provider's text chunks (with tools: its
        ``chat_stream``, the tool calls last), or a JSON answer whole."""
        if self.tools:
            async for item in self.provider.chat_stream(
                self.messages, tools=self.tools, max_tokens=self.max_tokens,
                temperature=self.temperature,
            ):  # fmt: skip
                if isinstance(item, str):
                    if item:
                        yield ChatDelta(content=item)
                elif item.tool_calls:
                    yield ChatDelta(tool_calls=_wire_calls(item.tool_calls, indexed=True))
                    self.finish = "tool_calls"
            return
        if self.json_schema is not None:
            reply = await self.reply()
            yield ChatDelta(content=reply.text)
            return
        async for text in self.provider.stream(
            self.messages, max_tokens=self.max_tokens, temperature=self.temperature
        ):
            if text:
                yield ChatDelta(content=text)


async def chat_completions(request: Request) -> Response:
    """``POST /llm/v1/chat/completions``."""
    began = time.perf_counter()
    provider_name = "llm"
    try:
        _check_caller(request)
        hub = hub_of(request)
        raw = await read_body(request, hub.settings.server.max_body_bytes)
        try:
            body = _request.decode(raw)
        except msgspec.DecodeError as exc:
            raise InvalidRequestError(f"bad chat-completions request: {exc}") from None
        provider = hub.llm_models.provider(body.model)
        provider_name = provider.name
        completion = _Completion(body, provider)
        if body.stream:
            return await _streamed(request, completion, began)
        reply = await completion.reply()
    except A2AError as err:
        return _a2a_error(err)
    except LLMError as exc:
        metrics.llm_call(provider_name, "error", time.perf_counter() - began)
        return _llm_error(exc)
    except Exception as exc:
        return _a2a_error(protocol_error(exc, f"{request.method} {request.url.path}"))
    metrics.llm_call(provider_name, "ok", time.perf_counter() - began)
    return Response(_enc.encode(completion.whole(reply)), media_type=JSON)


async def _streamed(request: Request, completion: _Completion, began: float) -> Response:
    """The SSE response; a failure before the first chunk is an HTTP error, one after it an
    ``error`` event (as OpenAI's servers send) before the stream ends."""
    deltas = completion.deltas()
    name = completion.provider.name
    try:
        first = await anext(deltas, None)
    except LLMError as exc:
        metrics.llm_call(name, "error", time.perf_counter() - began)
        return _llm_error(exc)
    request.scope[STREAM_KEY] = True  # timed by the LLM metrics, not the request histogram

    async def events() -> AsyncIterator[bytes]:
        outcome = "error"
        try:
            yield completion.chunk(ChatDelta(role="assistant", content=""))
            if first is not None:
                yield completion.chunk(first)
                async for delta in deltas:
                    yield completion.chunk(delta)
            yield completion.chunk(ChatDelta(), completion.finish)
            outcome = "ok"
        except LLMError as exc:
            detail = ChatErrorDetail(message=str(exc), type="server_error", code="llm_error")
            yield b"data: " + _enc.encode(ChatErrorBody(detail)) + b"\n\n"
        finally:
            await deltas.aclose()
            metrics.llm_call(name, outcome, time.perf_counter() - began)
        yield b"data: [DONE]\n\n"

    return StreamingResponse(
        events(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


#: The routes under ``/llm/v1``.
LLM_ROUTES: list[BaseRoute] = [
    Route("/chat/completions", chat_completions, methods=["POST"]),
    Route("/models", list_models, methods=["GET"]),
    Route("/models/{model:path}", get_model, methods=["GET"]),
]
