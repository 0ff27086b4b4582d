"""A2A over WebSocket, a preview of proposal a2aproject/A2A #1864: subprotocol ``a2a.jsonrpc.v1``.

On ``/a2a/{agent_id}/ws`` a client that offers the subprotocol :data:`RPC_SUBPROTOCOL` (before
``a2a-hub``, or alone) speaks the JSON-RPC binding over the socket instead of the seed-003
event catalogue (:mod:`a2a_hub.server.ws`, still the default):

* each text frame is one JSON-RPC 2.0 request or response object; the methods, params, results
  and errors are those of the JSON-RPC binding, served by the same function
  (:func:`a2a_hub.server.jsonrpc.handle`), so every error is the same JSON-RPC error object
  with the request's ``id``;
* several requests may be in flight at once: answers come as they are ready, matched to their
  request by ``id`` (a client uses a fresh ``id`` per request);
* a streaming method (``SendStreamingMessage``, ``SubscribeToTask``, and the 0.3 / 0.1 ones)
  is answered by one response frame per event, all with the request's ``id`` and each
  ``result`` a ``StreamResponse`` (what the SSE stream of the HTTP binding carries), then the
  terminator ``{"jsonrpc": "2.0", "id": ID, "result": {"streamEnd": {}}}``; a stream that
  fails ends with a JSON-RPC error response with its ``id`` instead (an error always ends a
  request);
* ``{"jsonrpc": "2.0", "id": X, "method": "cancelStream", "params": {"id": ID}}`` stops the
  stream of request ``ID`` (the task goes on; ``CancelTask`` cancels it): its ``streamEnd``
  comes first, then the answer ``{"jsonrpc": "2.0", "id": X, "result": {}}``.

Limits, each answered with a JSON-RPC error (the socket stays open): a frame over
``ws_max_frame_bytes`` (``PayloadTooLargeError``, -32600, with a null ``id``), more
than ``ws_max_streams`` open streams, more than :data:`MAX_CALLS` requests in flight, a
streaming request without an ``id`` or with the ``id`` of a stream still open.  The socket is
closed after ``ws_idle_timeout`` seconds without a frame, and a client that does not read a
frame within ``ws_send_timeout`` seconds is cut loose (close code 1013).

The caller is the upgrade request's, as for the event channel (a key in a header, ``?api_key=``
or the subprotocol ``a2a-key.<key>``); a socket to an agent that requires keys, opened without
one, must send it first: ``{"jsonrpc": "2.0", "id": 1, "method": "authenticate", "params":
{"apiKey": KEY}}`` (answered with ``{"principal": ...}``).  The A2A version is the upgrade's
``A2A-Version`` header or query parameter, else each method's name decides.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from a2a_hub.engine.caller import Caller
from a2a_hub.protocol.errors import (
    A2AError,
    InvalidParamsError,
    InvalidRequestError,
    PayloadTooLargeError,
    UnauthenticatedError,
)
from a2a_hub.server.errors import encode_error, protocol_error
from a2a_hub.server.hub import HostedAgent, Hub
from a2a_hub.server.jsonrpc import handle
from a2a_hub.server.sse import SseReply
from a2a_hub.server.ws_socket import CLOSE_GOING_AWAY, ServerSocket

__all__ = [
    "MAX_CALLS",
    "RPC_SUBPROTOCOL",
    "STREAMING_METHODS",
    "RpcConnection",
    "authenticate_frame",
    "error_frame",
]


#: The subprotocol of the JSON-RPC binding over WebSocket.
RPC_SUBPROTOCOL = "a2a.jsonrpc.v1"
#: The methods answered with a stream, in every version.
STREAMING_METHODS = frozenset(
    {
        "SendStreamingMessage",
        "SubscribeToTask",
        "message/stream",
        "tasks/resubscribe",
        "tasks/sendSubscribe",
    }
)
#: Requests (streams included) one socket may have in flight.
MAX_CALLS = 256
#: The method that stops a stream.
CANCEL_STREAM = "cancelStream"

_enc = msgspec.json.Encoder()
_STREAM_END = b',"result":{"streamEnd":{}}}'


class _Peek(msgspec.Struct):
    """What the socket reads of a frame before :func:`handle` does (a bad frame is handle's)."""

    method: str | None = None
    id: str | int | None = None
    params: Any = None


_peek_dec = msgspec.json.Decoder(_Peek)


class _Ref(msgspec.Struct):
    id: str | int


def error_frame(req_id: str | int | None, err: A2AError) -> bytes:
    """A JSON-RPC error response (the 1.0 shape, ``data`` holding the ErrorInfo)."""
    return encode_error(req_id, err, "1.0")


def _result(req_id: str | int | None, result: Any) -> bytes:
    return _enc.encode({"jsonrpc": "2.0", "id": req_id, "result": result})


def _peek(data: bytes) -> _Peek | None:
    try:
        return _peek_dec.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None  # handle() says what is wrong with it


def authenticate_frame(data: bytes) -> tuple[str | int | None, str] | None:
    """``(id, key)`` of a first frame ``{"method": "authenticate", "params": {"apiKey": KEY}}``,
    or ``None`` when the frame is anything else."""
    frame = _peek(data)
    if frame is None or frame.method != "authenticate" or not isinstance(frame.params, dict):
        return None
    key = frame.params.get("apiKey", frame.params.get("api_key"))
    return (frame.id, key) if isinstance(key, str) and key else None


def authenticated_frame(req_id: str | int | None, caller: Caller) -> bytes:
    """The answer to a first frame ``authenticate`` that was accepted."""
    return _result(req_id, {"principal": caller.principal})


def _http_view(websocket: WebSocket) -> Request:
    """The upgrade request as an HTTP request (what ``GetExtendedAgentCard`` reads: the
    app, the path, the public URL: ``ws``/``wss`` read as ``http``/``https``)."""
    scope = dict(websocket.scope)
    scope["type"] = "http"
    scope["scheme"] = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "ws"), "http")
    scope.setdefault("method", "GET")
    return Request(scope)


class RpcConnection(ServerSocket):
    """One client's socket of the JSON-RPC subprotocol: requests in, responses out."""

    def __init__(self, websocket: WebSocket, hub: Hub, agent: HostedAgent, caller: Caller) -> None:
        settings = hub.settings.server
        super().__init__(websocket, settings.ws_send_timeout, "too slow: reconnect")
        self.agent = agent
        self.caller = caller
        self.max_frame = settings.ws_max_frame_bytes
        self.max_streams = settings.ws_max_streams
        self.idle_timeout = settings.ws_idle_timeout
        self.version = websocket.headers.get("a2a-version") or websocket.query_params.get(
            "A2A-Version"
        )
        self.request = _http_view(websocket)
        self.where = f"agent {agent.id} (WebSocket JSON-RPC)"
        #: Request id -> the task answering a streaming request.
        self.streams: dict[str | int, asyncio.Task[None]] = {}
        #: The ids of the streams a ``cancelStream`` is ending (no longer counted).
        self.ending: set[str | int] = set()
        #: Every request in flight (streams included).
        self.calls: set[asyncio.Task[None]] = set()

    # --- sending ------------------------------------------------------------------

    async def send(self, frame: bytes) -> None:
        """Send one frame; a client too slow to read it is cut loose."""
        await self.send_text(frame)

    # --- the receive loop ---------------------------------------------------------

    async def run(self) -> None:
        """Read frames until the client leaves or goes idle; each request runs on its own."""
        try:
            while not self._closed:
                try:
                    async with asyncio.timeout(self.idle_timeout) as self._receiving:
                        message = await self.ws.receive()
                except TimeoutError:
                    if not self._closed:
                        await self.close(CLOSE_GOING_AWAY, "idle timeout")
                    break
                finally:
                    self._receiving = None
                if message["type"] == "websocket.disconnect":
                    break
                text: str | None = message.get("text")
                data: bytes | None = text.encode() if text is not None else message.get("bytes")
                if data is not None:
                    if not await self.authorized():
                        break
                    self.accept(data)
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            try:
                self._closed = True
                for call in list(self.calls):
                    call.cancel()
                for call in list(self.calls):
                    with contextlib.suppress(BaseException):
                        await call
                if (
                    not self._close_sent
                    and self.ws.application_state is not WebSocketState.DISCONNECTED
                ):
                    await self.close(1000, "")
            finally:
                self.ended()

    def accept(self, data: bytes) -> None:
        """Start answering one frame (checked here, in frame order, so that limits and
        stream ids are decided before the next frame is read)."""
        if len(data) > self.max_frame:
            err: A2AError = PayloadTooLargeError(
                f"frame of {len(data)} bytes is over the limit of {self.max_frame} bytes",
                data={"limit": self.max_frame},
            )
            self._spawn(self._refuse(None, err))
            return
        frame = _peek(data)
        req_id = frame.id if frame is not None else None
        if len(self.calls) >= MAX_CALLS:
            err = InvalidRequestError(
                f"more than {MAX_CALLS} requests in flight on this socket; wait for answers",
                data={"limit": MAX_CALLS},
            )
            self._spawn(self._refuse(req_id, err))
            return
        if frame is not None and frame.method == CANCEL_STREAM:
            self._cancel_stream(frame)
            return
        if frame is None or frame.method not in STREAMING_METHODS:
            self._spawn(self._unary(data))
            return
        refusal = self._stream_refusal(req_id)
        if refusal is not None:
            self._spawn(self._refuse(req_id, refusal))
            return
        assert req_id is not None
        call = self._spawn(self._stream(data, req_id))
        self.streams[req_id] = call
        call.add_done_callback(lambda done: self._forget(req_id, done))

    def _stream_refusal(self, req_id: str | int | None) -> A2AError | None:
        if req_id is None:
            return InvalidRequestError(
                "a streaming request on a WebSocket needs an id (its events carry it)"
            )
        if req_id in self.streams:
            return InvalidRequestError(
                f"id {req_id!r} is the id of a stream still open on this socket; use a fresh id",
                data={"id": str(req_id)},
            )
        if len(self.streams) - len(self.ending) >= self.max_streams:
            return InvalidRequestError(
                f"more than {self.max_streams} open streams on this socket (ws_max_streams); "
                "cancelStream one or wait for one to end",
                data={"limit": self.max_streams},
            )
        return None

    def _spawn(self, work: Any) -> asyncio.Task[None]:
        call: asyncio.Task[None] = asyncio.ensure_future(work)
        self.calls.add(call)
        call.add_done_callback(self.calls.discard)
        return call

    def _forget(self, req_id: str | int, call: asyncio.Task[None]) -> None:
        if self.streams.get(req_id) is call:
            del self.streams[req_id]
            self.ending.discard(req_id)

    # --- requests -----------------------------------------------------------------

    async def refused(self, err: A2AError) -> None:
        """The socket's key no longer holds: an error response (id null) before the close."""
        await self.send(error_frame(None, protocol_error(err, self.where)))

    async def _refuse(self, req_id: str | int | None, err: A2AError) -> None:
        await self.send(error_frame(req_id, protocol_error(err, self.where)))

    async def _answer(self, data: bytes) -> bytes | SseReply:
        answer = await handle(
            data, self.agent, self.version, self.caller, request=self.request, where=self.where
        )
        return answer.reply

    async def _unary(self, data: bytes) -> None:
        reply = await self._answer(data)
        if isinstance(reply, SseReply):  # a streaming method of no name known here: none today
            reply.stream.close()
            return
        await self.send(reply)

    async def _stream(self, data: bytes, req_id: str | int) -> None:
        """A streaming request: its events, then ``streamEnd`` (or an error, which ends it);
        stopped by ``cancelStream``, it ends with ``streamEnd`` too."""
        end = b'{"jsonrpc":"2.0","id":' + _enc.encode(req_id) + _STREAM_END
        try:
            reply = await self._answer(data)
            if not isinstance(reply, SseReply):  # refused before it started: the error ends it
                await self.send(reply)
                return
            stream = reply.stream
            try:
                async for event in stream:
                    frame = reply.encode(event)
                    if frame is not None:
                        await self.send(frame)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                err = protocol_error(exc, f"{self.where}: stream of task {stream.task_id}")
                await self.send(reply.encode_error(err))
                return
            finally:
                stream.close()
        except asyncio.CancelledError:
            if req_id not in self.ending:  # the socket closes
                raise
        await self.send(end)

    def _cancel_stream(self, frame: _Peek) -> None:
        """``cancelStream``: stop the stream named at once (in frame order: its slot is free
        for the next frame); its ``streamEnd`` goes out, then the answer ``{}``."""
        try:
            ref = msgspec.convert(frame.params, _Ref)
        except msgspec.ValidationError as exc:
            err = InvalidParamsError(
                f"cancelStream: {exc}; params must be {{'id': <the stream request's id>}}"
            )
            self._spawn(self._refuse(frame.id, err))
            return
        call = self.streams.get(ref.id)
        if call is None or ref.id in self.ending:
            err = InvalidParamsError(
                f"no open stream has id {ref.id!r} on this socket", data={"id": str(ref.id)}
            )
            self._spawn(self._refuse(frame.id, err))
            return
        self.ending.add(ref.id)
        call.cancel()
        self._spawn(self._stream_canceled(call, frame.id))

    async def _stream_canceled(self, call: asyncio.Task[None], req_id: str | int | None) -> None:
        with contextlib.suppress(BaseException):
            await call
        await self.send(_result(req_id, {}))


async def first_frame_caller(
    websocket: WebSocket, hub: Hub, agent: HostedAgent, within: float
) -> tuple[Caller, str] | A2AError | None:
    """The caller of a JSON-RPC socket opened without a key, and the key: its first frame
    must be ``authenticate`` with a usable key.  ``None`` if the client left; else the
    error to refuse it with."""
    from a2a_hub.server.auth import KEY_SUBPROTOCOL, authenticate

    try:
        async with asyncio.timeout(within):
            message = await websocket.receive()
    except TimeoutError:
        return UnauthenticatedError(f"no API key within {within:g} s")
    if message["type"] == "websocket.disconnect":
        return None
    text: str | None = message.get("text")
    data = text.encode() if text is not None else (message.get("bytes") or b"")
    found = authenticate_frame(data)
    if found is None:
        return UnauthenticatedError(
            f"agent {agent.id!r} requires an API key: send it first, "
            '{"jsonrpc": "2.0", "id": 1, "method": "authenticate", "params": {"apiKey": KEY}} '
            f"(or in the X-API-Key header, the api_key query parameter or the subprotocol "
            f"{KEY_SUBPROTOCOL}KEY)"
        )
    req_id, key = found
    try:
        caller = await authenticate(hub.auth, agent.id, key)
    except A2AError as err:
        return err
    try:
        await websocket.send_text(authenticated_frame(req_id, caller).decode())
    except (WebSocketDisconnect, RuntimeError, OSError):
        return None
    return caller, key
