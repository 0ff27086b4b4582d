"""A small SSE reader for tests: yields (id, event, data) frames as they arrive."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Frame:
    id: int | None
    event: str | None
    data: Any
    comment: bool = False


async def frames(response: httpx.Response) -> AsyncIterator[Frame]:
    """Parse an event stream; comments (heartbeats) come out as ``Frame(comment=True)``."""
    event_id: int | None = None
    event: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield Frame(event_id, event, json.loads("\n".join(data)))
            event_id, event, data = None, None, []
        elif line.startswith(":"):
            yield Frame(None, None, None, comment=True)
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "id":
                event_id = int(value)
            elif field == "event":
                event = value
            elif field == "data":
                data.append(value)


def rpc_body(method: str, params: dict[str, Any], req_id: int | str = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params}


def user_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}], **extra}
