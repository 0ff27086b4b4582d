"""A WebSocket test client's helpers for the seed 003 channel (``websockets`` package)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import websockets

from tests.support.hub import LiveServer

TERMINAL = ("completed", "failed", "canceled", "input-required")


def connect(url: str, **options: Any) -> Any:
    """A client that reads on while closing (a dropped socket leaves unread events)."""
    options.setdefault("max_queue", None)
    options.setdefault("close_timeout", 2)
    return websockets.connect(url, **options)


def ws_url(server: LiveServer, agent: str | None) -> str:
    """The socket URL of ``agent`` (``None``: the default agent's ``/ws``)."""
    base = server.url.replace("http://", "ws://")
    return f"{base}/ws" if agent is None else f"{base}/a2a/{agent}/ws"


async def recv(ws: Any, within: float = 20) -> dict[str, Any]:
    """The next event (a hang guard, not a timing check)."""
    event: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), within))
    return event


async def until(ws: Any, pred: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """Events up to and including the first that ``pred`` accepts."""
    seen = []
    while True:
        event = await recv(ws)
        seen.append(event)
        if pred(event):
            return seen


def terminal(event: dict[str, Any]) -> bool:
    """A task status that ends a turn."""
    return event["event"] == "task_status_update" and event["status"] in TERMINAL


def iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def send(ws: Any, **frame: Any) -> None:
    await ws.send(json.dumps(frame))


class Reader:
    """What a resuming client keeps: the newest seq, and the (seq, event) pairs it has.

    One task event can become several socket events with the same seq, so the client
    resumes after the seq *before* its newest and skips the pairs it already has.
    """

    def __init__(self) -> None:
        self.newest = 0
        self.seen: set[tuple[int, str]] = set()
        self.chunks: list[str] = []
        self.task_id = ""

    def take(self, event: dict[str, Any]) -> None:
        if event["event"] in ("sync_completed", "pong"):
            return
        assert event["event"] != "error", event
        self.task_id = self.task_id or event["task_id"]
        key = (event["seq"], event["event"])
        if key in self.seen:
            assert event["seq"] == self.newest  # only the boundary group comes again
            return
        assert event["seq"] >= self.newest, (event["seq"], self.newest)  # in order
        self.seen.add(key)
        self.newest = event["seq"]
        if event["event"] == "content_stream":
            self.chunks.append(event["chunk"])

    def resume(self) -> dict[str, Any]:
        return {"action": "sync_state", "last_seq": {self.task_id: max(self.newest - 1, 0)}}
