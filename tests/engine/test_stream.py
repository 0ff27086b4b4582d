"""A stream whose reader falls behind is cut loose and catches up from the event log."""

from __future__ import annotations

import asyncio
import uuid

from a2a_hub import metrics
from a2a_hub.engine import TaskEngine
from a2a_hub.protocol.types import Message, Part, Role, SendMessageRequest
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import ChattyExecutor, Stepper


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


async def test_a_quiet_stream_calls_its_listener_once_at_the_next_event() -> None:
    """``next(wait=False)`` says the stream is quiet instead of waiting; ``listen`` then
    stands in for the wait: one call at the next event, which ``next`` returns."""
    stepper = Stepper()
    engine = TaskEngine("stepper", stepper, MemoryStore())
    stream = await engine.send_stream(request("go"))
    stream.until_terminal = True  # follow past the turn, as a subscription does
    first = await asyncio.wait_for(stream.next(), 5)
    assert first is not None and first.event.task is not None
    await asyncio.wait_for(stepper.started.wait(), 5)
    while (event := await asyncio.wait_for(stream.next(wait=False), 5)) is not None:
        pass  # what came before the quiet: working
    woken = asyncio.Event()
    calls: list[int] = []
    stream.listen(lambda: (calls.append(1), woken.set()))
    stepper.step("a")
    await asyncio.wait_for(woken.wait(), 5)
    event = await asyncio.wait_for(stream.next(wait=False), 5)
    assert event is not None and event.event.artifact_update is not None
    assert await stream.next(wait=False) is None  # quiet again
    stepper.step("b")  # no listener now: nothing is called
    await asyncio.wait_for(stream.next(), 5)
    assert calls == [1]
    stream.listen(lambda: calls.append(2))
    stream.close()  # a closed stream forgets its listener
    stepper.finish()
    await asyncio.wait_for(asyncio.shield(engine.live(stream.task_id).finished), 5)  # type: ignore[union-attr]
    assert calls == [1]
    stream.listen(lambda: calls.append(3))  # and takes none
    assert stream.sub.listener is None
    await engine.close()
