"""The a2a-sdk adapter's conversions and request context, held to the SDK's own behaviour: a
hub message becomes the protobuf message the JSON binding would parse from its wire form and
comes back unchanged; the request context an SDK executor gets has what the SDK's
``RequestContext`` would have."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from a2a.server.agent_execution import RequestContext as SdkRequestContext
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format

from a2a_hub.agents.frameworks._sdk_convert import (
    message_from_pb,
    message_to_pb,
    parts_from_pb,
    task_to_pb,
)
from a2a_hub.agents.frameworks.a2a_sdk import SdkExecutor, call_context
from a2a_hub.engine.executor import RequestContext
from a2a_hub.protocol.types import (
    Artifact,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    Task,
    TaskState,
    TaskStatus,
)
from tests.agents.test_framework_a2a_sdk import ToolUser

PARTS = {
    "text": [Part(text="hello")],
    "empty text": [Part(text="")],
    "text with metadata": [Part(text="hi", metadata={"n": 3, "x": [1.5, "y"], "d": {"k": None}})],
    "text with a media type": [Part(text="# title", media_type="text/markdown")],
    "raw": [Part(raw=b"\x00\x01png", filename="a.png", media_type="image/png")],
    "url": [Part(url="https://example.com/a.pdf", filename="a.pdf")],
    "data": [Part(data={"kind": "tool_call", "params": {"t": 220, "f": 0.5, "l": [1, 2]}})],
    "several": [Part(text="a"), Part(data=[1, "two"]), Part(text="b")],
}


def message(parts: list[Part], **fields: Any) -> Message:
    return Message(
        message_id="m1", role=Role.USER, parts=parts, context_id="c1", task_id="t1", **fields
    )


def as_the_json_binding(value: Any, into: Any) -> Any:
    return json_format.ParseDict(msgspec.to_builtins(value), into)


@pytest.mark.parametrize("shape", list(PARTS))
def test_a_message_converts_as_the_json_binding_would_and_back(shape: str) -> None:
    sent = message(PARTS[shape], metadata={"trace": "x", "n": 1})
    converted = message_to_pb(sent)
    assert converted == as_the_json_binding(sent, pb.Message())
    assert message_from_pb(converted, task_id="t1", context_id="c1") == sent


def test_a_message_with_extensions_and_references_both_ways() -> None:
    sent = message([Part(text="x")], extensions=["urn:e"], reference_task_ids=["t0"])
    converted = message_to_pb(sent)
    assert converted == as_the_json_binding(sent, pb.Message())
    assert message_from_pb(converted, task_id="t1", context_id="c1") == sent


def test_agent_parts_of_every_shape_come_back_as_hub_parts() -> None:
    parts = [p for shape in PARTS.values() for p in shape]
    converted = pb.Artifact(artifact_id="a")
    as_the_json_binding(Artifact(artifact_id="a", parts=parts), converted)
    assert parts_from_pb(converted.parts) == parts


def test_a_stored_task_converts_as_the_json_binding_would() -> None:
    first = message([Part(text="a pizza")])
    question = Message(
        message_id="m2", role=Role.AGENT, parts=[Part(text="Which?")], context_id="c1", task_id="t1"
    )
    task = Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(state=TaskState.INPUT_REQUIRED, message=question),
        artifacts=[
            Artifact(artifact_id="a1", name="menu", parts=PARTS["several"], metadata={"v": 2})
        ],
        history=[first, question],
        metadata={"owner": "x"},
    )
    reply = message([Part(text="margherita")])
    history = [first, question, reply]
    expected = as_the_json_binding(msgspec.structs.replace(task, history=history), pb.Task())
    assert task_to_pb(task, history) == expected


def hub_context(**fields: Any) -> RequestContext:
    return RequestContext(
        agent_id="pizza",
        message=message([Part(text="a large one")]),
        task_id="t1",
        context_id="c1",
        **fields,
    )


def test_the_request_context_has_what_the_sdks_own_would_have() -> None:
    task = Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(state=TaskState.INPUT_REQUIRED),
        history=[message([Part(text="a pizza")])],
    )
    ctx = hub_context(
        task=task,
        configuration=SendMessageConfiguration(
            accepted_output_modes=["text/plain"], history_length=3
        ),
        metadata={"origin": "test", "n": 2},
        extensions=frozenset({"urn:x"}),
        owner="alice",
    )
    ours = SdkExecutor(ToolUser(), agent_id="pizza").request_context(ctx)
    # the SDK's own, built from the same request as its handler would
    request = pb.SendMessageRequest(
        message=message_to_pb(ctx.message),
        configuration=pb.SendMessageConfiguration(
            accepted_output_modes=["text/plain"], history_length=3
        ),
    )
    request.metadata.update({"origin": "test", "n": 2})
    theirs = SdkRequestContext(
        call_context(ctx),
        request,
        task_id="t1",
        context_id="c1",
        task=task_to_pb(task, ctx.history),
    )
    assert ours.message == theirs.message and ours.message is not None
    assert (ours.task_id, ours.context_id) == (theirs.task_id, theirs.context_id)
    assert ours.current_task == theirs.current_task
    assert ours.configuration == theirs.configuration
    assert ours.metadata == theirs.metadata == {"origin": "test", "n": 2}
    assert ours.get_user_input() == theirs.get_user_input() == "a large one"
    assert ours.related_tasks == theirs.related_tasks == []
    # the call context, made when first read
    assert ours.call_context.user.user_name == "alice" and ours.call_context.user.is_authenticated
    assert ours.requested_extensions == theirs.requested_extensions == {"urn:x"}
    assert ours.tenant == theirs.tenant == ""
    assert ours.call_context.state == {"agent_id": "pizza"}
    assert ours.call_context is ours.call_context
    # and no attribute of the SDK's is missing (a newer SDK's __init__ adding one fails here)
    assert set(vars(theirs)) <= set(vars(ours))


def test_an_anonymous_turn_without_a_task() -> None:
    ours = SdkExecutor(ToolUser(), agent_id="pizza").request_context(hub_context())
    assert ours.current_task is None
    assert ours.configuration == pb.SendMessageConfiguration()  # unset, as the SDK reads it
    assert not ours.call_context.user.is_authenticated
    assert ours.requested_extensions == set()
    assert ours.message is not None and ours.message.task_id == "t1"
