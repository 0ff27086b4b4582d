"""A2A 1.0 over WebSocket (preview of proposal a2aproject/A2A #1864, subprotocol
``a2a.jsonrpc.v1``): the JSON-RPC methods, one socket for every call.

The socket to ``<agent URL>/ws`` opens at the first call and stays open; calls run at
once, each matched to its answer by its own ``id``.  A stream is the frames carrying its
request's ``id`` up to ``{"streamEnd": {}}``; leaving a stream early sends ``cancelStream``.
A socket that drops fails the calls in flight with :class:`httpx.ReadError` (so that
:class:`~a2a_hub.client.A2AClient` resumes a stream as over SSE); the next call opens a new
one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import httpx
import msgspec

from a2a_hub.client.transports.base import StreamItem, bad_response, encoder
from a2a_hub.client.transports.jsonrpc10 import JsonRpc10Transport
from a2a_hub.client.websocket import ws_url
from a2a_hub.protocol.errors import A2AError, error_from_code, error_from_reason
from a2a_hub.protocol.types import StreamResponse

__all__ = ["RPC_SUBPROTOCOL", "WebSocketTransport"]

T = TypeVar("T")

#: The subprotocol of the JSON-RPC binding over WebSocket.
RPC_SUBPROTOCOL = "a2a.jsonrpc.v1"


class _Error(msgspec.Struct):
    code: int
    message: str
    data: Any = None


class _Frame(msgspec.Struct):
    id: str | int | None = None
    result: msgspec.Raw = msgspec.Raw(b"")
    error: _Error | None = None


class _StreamEnd(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    stream_end: dict[str, Any]


_frame_dec = msgspec.json.Decoder(_Frame)
_end_dec = msgspec.json.Decoder(_StreamEnd)


class _Lost(Exception):
    """Put in the queues of the calls in flight when the socket drops."""


class WebSocketTransport(JsonRpc10Transport):
    """A2A 1.0 JSON-RPC over one WebSocket (subprotocol ``a2a.jsonrpc.v1``)."""

    binding = "WEBSOCKET"

    def __init__(
        self, http: httpx.AsyncClient, url: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(http, url, headers)
        self.ws_url = ws_url(url)
        self._ids = itertools.count(1)
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._opening = asyncio.Lock()
        #: request id -> the frames answering it
        self._pending: dict[int, asyncio.Queue[_Frame | _Lost]] = {}

    # --- the socket ---------------------------------------------------------------

    async def _socket(self) -> Any:
        async with self._opening:
            if self._ws is not None:
                return self._ws
            from websockets.asyncio.client import connect
            from websockets.exceptions import InvalidStatus

            headers = self._headers()
            headers.pop("Content-Type", None)
            headers.pop("Accept", None)
            try:
                ws = await connect(
                    self.ws_url,
                    additional_headers=headers,
                    subprotocols=[RPC_SUBPROTOCOL],  # type: ignore[list-item]
                    max_size=None,
                    max_queue=None,
                    close_timeout=2,
                )
            except InvalidStatus as exc:  # the upgrade refused: the HTTP+JSON error body
                raise _refusal(exc.response.status_code, bytes(exc.response.body or b"")) from None
            except OSError as exc:
                raise httpx.ConnectError(f"{self.ws_url}: {exc}") from None
            if ws.subprotocol != RPC_SUBPROTOCOL:
                await ws.close()
                raise bad_response(self.ws_url, f"the server does not speak {RPC_SUBPROTOCOL}")
            self._ws = ws
            self._reader = asyncio.ensure_future(self._read(ws))
            return ws

    async def _read(self, ws: Any) -> None:
        """Hand each frame to the call it answers; when the socket ends, fail them all."""
        reason = "closed"
        refused: _Frame | None = None  # an error with a null id: the socket was refused
        try:
            async for raw in ws:
                try:
                    frame = _frame_dec.decode(raw)
                except msgspec.DecodeError:
                    continue
                queue = self._pending.get(frame.id) if isinstance(frame.id, int) else None
                if queue is not None:
                    queue.put_nowait(frame)
                elif frame.id is None and frame.error is not None:
                    refused = frame
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
        finally:
            if self._ws is ws:
                self._ws = None
            lost = refused or _Lost(f"WebSocket {self.ws_url} {reason}")
            for waiting in self._pending.values():
                waiting.put_nowait(lost)

    async def aclose(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()
        if self._reader is not None:
            with contextlib.suppress(BaseException):
                await self._reader
            self._reader = None

    async def _start(self, method: str, params: Any) -> tuple[int, asyncio.Queue[_Frame | _Lost]]:
        ws = await self._socket()
        req_id = next(self._ids)
        queue: asyncio.Queue[_Frame | _Lost] = asyncio.Queue()
        self._pending[req_id] = queue
        frame = {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params}
        try:
            await ws.send(encoder.encode(frame).decode())
        except Exception as exc:
            del self._pending[req_id]
            raise httpx.ReadError(f"WebSocket {self.ws_url}: {exc}") from None
        return req_id, queue

    @staticmethod
    async def _next(queue: asyncio.Queue[_Frame | _Lost]) -> _Frame:
        frame = await queue.get()
        if isinstance(frame, _Lost):
            raise httpx.ReadError(str(frame))
        if frame.error is not None:
            raise error_from_code(frame.error.code, frame.error.message, frame.error.data)
        return frame

    # --- the JSON-RPC calls ---------------------------------------------------------

    async def _call(self, method: str, params: Any, kind: type[T]) -> T:
        req_id, queue = await self._start(method, params)
        try:
            frame = await self._next(queue)
        finally:
            self._pending.pop(req_id, None)
        if not frame.result:
            raise bad_response(self.ws_url, "a JSON-RPC response with neither result nor error")
        try:
            return msgspec.json.decode(frame.result, type=kind)
        except msgspec.DecodeError as exc:
            raise bad_response(self.ws_url, f"{bytes(frame.result)[:200]!r} ({exc})") from None

    async def _events(
        self, method: str, params: Any, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        req_id, queue = await self._start(method, params)
        finished = False
        try:
            while True:
                frame = await self._next(queue)
                if _is_end(frame.result):
                    finished = True
                    return
                try:
                    event = msgspec.json.decode(frame.result, type=StreamResponse)
                except msgspec.DecodeError as exc:
                    raise bad_response(self.ws_url, f"not a StreamResponse ({exc})") from None
                # the server's stream ends with the turn: nothing to cancel if we stop here
                finished = event.ends_turn
                yield StreamItem(None, event)
        except (A2AError, httpx.HTTPError):
            finished = True  # an error or a lost socket ends the stream on the server too
            raise
        finally:
            self._pending.pop(req_id, None)
            if not finished and self._ws is not None:  # left early: stop the server's stream
                cancel = {"jsonrpc": "2.0", "id": next(self._ids), "method": "cancelStream",
                          "params": {"id": req_id}}  # fmt: skip
                with contextlib.suppress(Exception):
                    await self._ws.send(encoder.encode(cancel).decode())


class _Info(msgspec.Struct):
    reason: str = ""


class _Body(msgspec.Struct):
    message: str = ""
    details: list[_Info] = msgspec.field(default_factory=list)


class _Refused(msgspec.Struct):
    error: _Body


def _refusal(status: int, body: bytes) -> A2AError:
    """The error of an upgrade the server answered with an HTTP error (401, 403, 429...)."""
    try:
        err = msgspec.json.decode(body, type=_Refused).error
    except msgspec.DecodeError:
        text = body[:200].decode(errors="replace")
        return error_from_reason("", f"WebSocket upgrade refused: HTTP {status} {text}", status)
    reason = err.details[0].reason if err.details else ""
    return error_from_reason(reason, err.message or f"HTTP {status}", status)


def _is_end(result: msgspec.Raw) -> bool:
    if b"streamEnd" not in bytes(result):
        return False
    try:
        _end_dec.decode(result)
    except msgspec.DecodeError:
        return False
    return True
