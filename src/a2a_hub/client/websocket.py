"""A client of the hub's WebSocket event channel (seed 003) that resumes on its own.

::

    async with WebSocketClient("http://127.0.0.1:8000/a2a/echo") as ws:
        await ws.send_message("hello")
        async for event in ws.events():
            ...  # dicts in the shapes of docs/websocket.md
            if event["event"] == "task_status_update" and event["status"] == "completed":
                break

When the connection drops, :meth:`WebSocketClient.events` reconnects with the
note's backoff (1 s, doubling, ±20 % jitter, at most 5 tries, then
:class:`WebSocketLostError`), sends ``sync_state`` with what it has seen, and
goes on: every event is yielded once (it remembers ``(task, seq, event)``).
``tools`` answers ``tool_call`` events for client-side tools by name.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from a2a_hub._backoff import Backoff

__all__ = ["TERMINAL_STATUSES", "WebSocketClient", "WebSocketLostError", "ws_url"]

#: ``task_status_update`` statuses after which a turn is over.
TERMINAL_STATUSES = frozenset({"completed", "failed", "canceled", "input-required"})


class WebSocketLostError(ConnectionError):
    """The connection dropped and could not be re-established within the retries."""


def ws_url(url: str) -> str:
    """The WebSocket URL of an agent URL (``http://h/a2a/x`` -> ``ws://h/a2a/x/ws``)."""
    url = url.rstrip("/")
    for suffix in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
        url = url.removesuffix(suffix)
    if url.startswith("https://"):
        url = "wss://" + url[len("https://") :]
    elif url.startswith("http://"):
        url = "ws://" + url[len("http://") :]
    return url if url.endswith("/ws") else url + "/ws"


class WebSocketClient:
    """One agent's WebSocket channel, resumed with ``sync_state`` after each drop."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
        context_id: str | None = None,
        tools: dict[str, Callable[[dict[str, Any]], Any]] | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.url = ws_url(url)
        self.headers = dict(headers or {})
        if api_key:
            self.headers["x-api-key"] = api_key
        self.context_id = context_id or str(uuid.uuid4())
        self.tools = dict(tools or {})
        self.backoff = backoff or Backoff(initial=1.0, factor=2.0, jitter=0.2, max_tries=5)
        #: task id -> the newest seq seen
        self.newest: dict[str, int] = {}
        self.last_message_id: str | None = None
        #: How many times the connection was re-established.
        self.reconnects = 0
        self._seen: set[tuple[str, int, str, str]] = set()
        self._ws: Any = None
        #: Called before each try to reconnect, with (try, most tries) (the CLI prints
        #: "reconnecting (n/5)…"); None: silent.
        self.on_retry: Callable[[int, int | None], None] | None = None

    async def __aenter__(self) -> WebSocketClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the socket (and, when something was seen before, resync)."""
        from websockets.asyncio.client import connect

        self._ws = await connect(
            self.url,
            additional_headers=self.headers,
            subprotocols=["a2a-hub"],  # type: ignore[list-item]
            max_queue=None,
            close_timeout=2,
        )
        if self.newest or self.last_message_id:
            frame = {
                "action": "sync_state",
                "last_message_id": self.last_message_id,
                "last_seq": {t: max(s - 1, 0) for t, s in self.newest.items()},
                "context_id": self.context_id,
            }
            await self._ws.send(json.dumps(frame))  # not _send: it would reconnect again

    async def close(self) -> None:
        """Close the socket."""
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    async def _send(self, frame: dict[str, Any]) -> None:
        """Send ``frame``; a socket that dropped meanwhile is reconnected (and resynced)
        first, so an action typed while the server was away goes out once it is back."""
        from websockets.exceptions import ConnectionClosed

        if self._ws is None:
            raise WebSocketLostError("not connected")
        try:
            await self._ws.send(json.dumps(frame))
        except (ConnectionClosed, OSError):
            await self._reconnect()
            await self._ws.send(json.dumps(frame))

    async def send_message(
        self, text: str, *, task_id: str | None = None, message_id: str | None = None
    ) -> str:
        """Send a message (continuing ``task_id`` if given); returns its message id."""
        message_id = message_id or str(uuid.uuid4())
        frame: dict[str, Any] = {"action": "send_message", "message_id": message_id,
                                 "text": text, "context_id": self.context_id}  # fmt: skip
        if task_id:
            frame["task_id"] = task_id
        await self._send(frame)
        self.last_message_id = message_id
        return message_id

    async def cancel_task(self, task_id: str) -> None:
        """Ask the server to cancel a task (its ``task_status_update`` follows)."""
        await self._send({"action": "cancel_task", "global_task_id": task_id})

    async def ping(self, client_timestamp: str | None = None) -> None:
        """Send a ping (a ``pong`` follows)."""
        await self._send({"action": "ping", "client_timestamp": client_timestamp})

    async def tool_response(self, tool_call_id: str, result: dict[str, Any]) -> None:
        """Answer a ``tool_call`` (``result``: ``{"status", "data", "error_message"}``)."""
        await self._send({"action": "tool_response", "tool_call_id": tool_call_id,
                          "result": result})  # fmt: skip

    def _fresh(self, event: dict[str, Any]) -> bool:
        task_id, seq = event.get("task_id"), event.get("seq")
        if not isinstance(task_id, str) or not isinstance(seq, int):
            return True
        key = (task_id, seq, str(event.get("event")), str(event.get("tool_call_id") or ""))
        if key in self._seen:
            return False
        self._seen.add(key)
        self.newest[task_id] = max(self.newest.get(task_id, 0), seq)
        return True

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Every server event once, in order, across reconnections."""
        from websockets.exceptions import ConnectionClosed, ConnectionClosedOK

        while True:
            try:
                raw = await self._ws.recv()
            except ConnectionClosedOK:
                return
            except (ConnectionClosed, OSError):
                await self._reconnect()
                continue
            event = json.loads(raw)
            if not self._fresh(event):
                continue
            if event.get("event") == "tool_call" and event.get("tool_id") in self.tools:
                await self._run_tool(event)
            yield event

    async def _run_tool(self, event: dict[str, Any]) -> None:
        tool = self.tools[event["tool_id"]]
        try:
            result = tool(event.get("params") or {})
            if asyncio.iscoroutine(result):
                result = await result
            answer: dict[str, Any] = {"status": "success", "data": result}
        except Exception as exc:
            answer = {"status": "error", "error_message": f"{type(exc).__name__}: {exc}"}
        await self.tool_response(event["tool_call_id"], answer)

    async def _reconnect(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        attempt = 0
        while True:
            attempt += 1
            if self.backoff.exhausted(attempt, loop.time() - started):
                raise WebSocketLostError(
                    f"the connection to {self.url} was lost and could not be re-established "
                    f"after {attempt - 1} tries"
                )
            if self.on_retry is not None:
                self.on_retry(attempt, self.backoff.max_tries)
            await asyncio.sleep(self.backoff.delay(attempt))
            try:
                await self.connect()
            except (OSError, TimeoutError, ConnectionError) as exc:
                if isinstance(exc, WebSocketLostError):
                    raise
                continue
            except Exception:  # an HTTP refusal of the upgrade (server restarting)
                continue
            self.reconnects += 1
            return
