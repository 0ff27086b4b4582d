"""A stream whose reader falls behind is cut loose and catches up from the event log."""

from __future__ import annotations

import asyncio
import uuid

from a2a_hub import metrics
from a2a_hub.engine import TaskEngine
from a2a_hub.protocol.types import Message, Part, Role, SendMessageRequest
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import ChattyExecutor


def request(text: str) -> SendMessageRequest:
    message = Message(message_id=uuid.uuid4().hex, role=Role.USER, parts=[Part(text=text)])
    return SendMessageRequest(message=message)


async def test_a_reader_that_falls_behind_gets_every_event_once_in_order() -> None:
    chunks = 900  # far more than a subscriber's buffer (256 events)
    engine = TaskEngine("chatty", ChattyExecutor(chunks=chunks), MemoryStore())
    cut_before = metrics.STREAM_CUT_LOOSE.values.get((), 0.0)
    replayed_before = metrics.STREAM_REPLAYED.values.get((), 0.0)
    stream = await engine.send_stream(request("go"))
    run = engine.live(stream.task_id)
    assert run is not None
    await asyncio.wait_for(asyncio.shield(run.finished), 30)  # nothing read meanwhile
    seqs = [event.seq async for event in stream]
    assert seqs == list(range(1, chunks + 4))  # task, working, the chunks, completed
    assert metrics.STREAM_CUT_LOOSE.values.get((), 0.0) == cut_before + 1
    assert metrics.STREAM_REPLAYED.values.get((), 0.0) > replayed_before
    await engine.close()
