"""Reading Server-Sent Events from an httpx response."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

__all__ = ["SseFrame", "read_sse"]


@dataclass(slots=True)
class SseFrame:
    """One dispatched event: its ``id:``, ``event:`` name and joined ``data:`` lines."""

    id: str | None
    event: str | None
    data: str


async def read_sse(response: httpx.Response) -> AsyncIterator[SseFrame]:
    """Parse ``text/event-stream`` as it arrives (comments and retry fields are skipped)."""
    event_id: str | None = None
    event: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield SseFrame(event_id, event, "\n".join(data))
            event_id, event, data = None, None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "id":
            event_id = value
        elif field == "event":
            event = value
    if data:
        yield SseFrame(event_id, event, "\n".join(data))
