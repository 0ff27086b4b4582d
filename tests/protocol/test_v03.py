"""Tests of the A2A 0.3 codec (a2a_hub.protocol.v03)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_hub.protocol import v03
from a2a_hub.protocol.errors import InvalidAgentResponseError, InvalidParamsError
from a2a_hub.protocol.types import (
    Artifact,
    AuthenticationInfo,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)


def wire(d: Any) -> Any:
    """Round-trip through JSON bytes, as a real request would."""
    return msgspec.json.decode(msgspec.json.encode(d))


# --- examples from the notes ---------------------------------------------------------

NOTES_MESSAGE = {
    "kind": "message",
    "role": "user",
    "messageId": "m1",
    "contextId": "c1",
    "taskId": "t1",
    "referenceTaskIds": ["t0"],
    "parts": [{"kind": "text", "text": "hi"}],
    "extensions": ["https://ext.uri"],
    "metadata": {},
}

NOTES_TASK = {
    "kind": "task",
    "id": "t1",
    "contextId": "c1",
    "status": {"state": "working", "timestamp": "2025-01-01T00:00:00Z"},
    "artifacts": [{"artifactId": "a1", "name": "out", "parts": [{"kind": "text", "text": "r"}]}],
    "history": [
        {
            "kind": "message",
            "role": "user",
            "messageId": "m1",
            "contextId": "c1",
            "taskId": "t1",
            "parts": [{"kind": "text", "text": "hi"}],
        }
    ],
    "metadata": {},
}

NOTES_PARTS = [
    {"kind": "text", "text": "hi"},
    {"kind": "file", "file": {"bytes": "aGVsbG8=", "mimeType": "text/plain", "name": "a.txt"}},
    {"kind": "file", "file": {"uri": "https://x/y.png", "mimeType": "image/png"}},
    {"kind": "data", "data": {"k": 1}},
]


def test_notes_message_decodes_and_reencodes_exactly() -> None:
    m = v03.decode_message(NOTES_MESSAGE)
    assert m == Message(
        message_id="m1",
        role=Role.USER,
        parts=[Part(text="hi")],
        context_id="c1",
        task_id="t1",
        reference_task_ids=["t0"],
        extensions=["https://ext.uri"],
        metadata={},
    )
    assert v03.encode_message(m) == NOTES_MESSAGE
    assert list(v03.encode_message(m)) == list(NOTES_MESSAGE)  # key order too


def test_notes_parts_map_to_canonical_parts() -> None:
    m = v03.decode_message({"role": "agent", "messageId": "m", "parts": NOTES_PARTS})
    assert m.role is Role.AGENT
    assert m.parts == [
        Part(text="hi"),
        Part(raw=b"hello", media_type="text/plain", filename="a.txt"),
        Part(url="https://x/y.png", media_type="image/png"),
        Part(data={"k": 1}),
    ]
    assert v03.encode_message(m)["parts"] == NOTES_PARTS


def test_notes_task_round_trip_exact() -> None:
    t = v03.decode_task(NOTES_TASK)
    assert t.status.state is TaskState.WORKING
    assert t.artifacts is not None and t.artifacts[0].artifact_id == "a1"
    assert v03.encode_task(t) == NOTES_TASK
    assert msgspec.json.encode(v03.encode_task(t)) == msgspec.json.encode(NOTES_TASK)


def test_encode_task_always_has_kind_and_context_id() -> None:
    t = Task(id="t1", status=TaskStatus(state=TaskState.SUBMITTED))
    assert v03.encode_task(t) == {
        "kind": "task",
        "id": "t1",
        "contextId": "",
        "status": {"state": "submitted"},
    }


def test_status_with_message() -> None:
    msg = Message(message_id="m2", role=Role.AGENT, parts=[Part(text="need more")], context_id="c")
    t = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.INPUT_REQUIRED, message=msg))
    out = v03.encode_task(t)
    assert out["status"] == {
        "state": "input-required",
        "message": {
            "kind": "message",
            "role": "agent",
            "messageId": "m2",
            "contextId": "c",
            "parts": [{"kind": "text", "text": "need more"}],
        },
    }
    assert v03.decode_task(wire(out)) == t


def test_artifact_shape() -> None:
    a = Artifact(
        artifact_id="a1",
        name="out",
        description="d",
        parts=[Part(data=[1, 2])],
        metadata={"x": 1},
        extensions=["e"],
    )
    assert v03.encode_artifact(a) == {
        "artifactId": "a1",
        "name": "out",
        "description": "d",
        "parts": [{"kind": "data", "data": [1, 2]}],
        "metadata": {"x": 1},
        "extensions": ["e"],
    }
    assert v03.decode_artifact(wire(v03.encode_artifact(a))) == a


# --- states ---------------------------------------------------------------------------


def test_state_mapping_is_total_and_reversible() -> None:
    assert set(v03.STATE_TO_V03) == set(TaskState)
    assert v03.STATE_TO_V03[TaskState.UNSPECIFIED] == "unknown"
    assert v03.STATE_TO_V03[TaskState.INPUT_REQUIRED] == "input-required"
    assert v03.STATE_TO_V03[TaskState.AUTH_REQUIRED] == "auth-required"
    for state, name in v03.STATE_TO_V03.items():
        assert v03.V03_TO_STATE[name] is state
    assert len(v03.V03_TO_STATE) == len(TaskState)


@pytest.mark.parametrize("state", list(TaskState))
def test_every_state_round_trips_through_a_task(state: TaskState) -> None:
    t = Task(id="t", context_id="c", status=TaskStatus(state=state))
    assert v03.decode_task(wire(v03.encode_task(t))) == t


# --- send params ----------------------------------------------------------------------

NOTES_SEND_PARAMS = {
    "message": {
        "kind": "message",
        "role": "user",
        "messageId": "m1",
        "parts": [{"kind": "text", "text": "hi"}],
    },
    "configuration": {
        "acceptedOutputModes": ["text/plain"],
        "blocking": True,
        "historyLength": 5,
        "pushNotificationConfig": {
            "id": "p1",
            "url": "https://cb",
            "token": "tok",
            "authentication": {"schemes": ["Bearer"], "credentials": "x"},
        },
    },
    "metadata": {},
}


def test_send_params_from_notes() -> None:
    req = v03.decode_send_params(NOTES_SEND_PARAMS)
    assert isinstance(req, SendMessageRequest)
    assert req.message == Message(message_id="m1", role=Role.USER, parts=[Part(text="hi")])
    assert req.metadata == {}
    cfg = req.configuration
    assert cfg is not None
    assert cfg.accepted_output_modes == ["text/plain"]
    assert cfg.history_length == 5
    assert cfg.return_immediately is False
    assert cfg.task_push_notification_config == TaskPushNotificationConfig(
        id="p1",
        url="https://cb",
        token="tok",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="x"),
    )


@pytest.mark.parametrize(
    ("configuration", "return_immediately"),
    [
        (None, False),
        ({}, False),
        ({"blocking": True}, False),
        ({"blocking": None}, False),
        ({"blocking": False}, True),
    ],
)
def test_blocking_maps_to_return_immediately(
    configuration: dict[str, Any] | None, return_immediately: bool
) -> None:
    params: dict[str, Any] = {"message": {"role": "user", "messageId": "m", "parts": []}}
    if configuration is not None:
        params["configuration"] = configuration
    req = v03.decode_send_params(params)
    got = req.configuration.return_immediately if req.configuration else False
    assert got is return_immediately


def test_send_params_ignore_unknown_keys_and_do_not_mutate_input() -> None:
    params = wire(NOTES_SEND_PARAMS)
    params["extra"] = 1
    params["message"]["whatever"] = {"x": 1}
    before = wire(params)
    v03.decode_send_params(params)
    assert params == before


def test_first_of_several_schemes_is_used() -> None:
    params = {
        "message": {"role": "user", "messageId": "m", "parts": []},
        "configuration": {
            "pushNotificationConfig": {
                "url": "https://cb",
                "authentication": {"schemes": ["Basic", "Bearer"]},
            }
        },
    }
    cfg = v03.decode_send_params(params).configuration
    assert cfg is not None and cfg.task_push_notification_config is not None
    assert cfg.task_push_notification_config.authentication == AuthenticationInfo(scheme="Basic")


# --- task query / id ------------------------------------------------------------------


def test_task_query_and_id() -> None:
    assert v03.decode_task_query({"id": "t1", "historyLength": 3}) == ("t1", 3)
    assert v03.decode_task_query({"id": "t1", "metadata": {}}) == ("t1", None)
    assert v03.decode_task_id({"id": "t1"}) == "t1"


# --- streaming ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "final"),
    [
        (TaskState.SUBMITTED, False),
        (TaskState.WORKING, False),
        (TaskState.INPUT_REQUIRED, True),
        (TaskState.AUTH_REQUIRED, True),
        (TaskState.COMPLETED, True),
        (TaskState.FAILED, True),
        (TaskState.CANCELED, True),
        (TaskState.REJECTED, True),
    ],
)
def test_status_update_final_flag(state: TaskState, final: bool) -> None:
    ev = StreamResponse(
        status_update=TaskStatusUpdateEvent(
            task_id="t1", context_id="c1", status=TaskStatus(state=state)
        )
    )
    out = v03.encode_stream_event(ev)
    assert out == {
        "kind": "status-update",
        "taskId": "t1",
        "contextId": "c1",
        "status": {"state": v03.STATE_TO_V03[state]},
        "final": final,
    }
    assert v03.decode_stream_event(wire(out)) == ev


def test_status_update_shape_from_notes() -> None:
    ev = StreamResponse(
        status_update=TaskStatusUpdateEvent(
            task_id="t1",
            context_id="c1",
            status=TaskStatus(state=TaskState.COMPLETED),
            metadata={},
        )
    )
    assert v03.encode_stream_event(ev) == {
        "kind": "status-update",
        "taskId": "t1",
        "contextId": "c1",
        "status": {"state": "completed"},
        "final": True,
        "metadata": {},
    }


def test_artifact_update_shape_from_notes() -> None:
    ev = StreamResponse(
        artifact_update=TaskArtifactUpdateEvent(
            task_id="t1",
            context_id="c1",
            artifact=Artifact(artifact_id="a1", name="out", parts=[Part(text="r")]),
            last_chunk=True,
            metadata={},
        )
    )
    expected = {
        "kind": "artifact-update",
        "taskId": "t1",
        "contextId": "c1",
        "artifact": {"artifactId": "a1", "name": "out", "parts": [{"kind": "text", "text": "r"}]},
        "append": False,
        "lastChunk": True,
        "metadata": {},
    }
    out = v03.encode_stream_event(ev)
    assert out == expected
    assert msgspec.json.encode(out) == msgspec.json.encode(expected)
    assert v03.decode_stream_event(wire(out)) == ev


def test_task_and_message_stream_events() -> None:
    t = v03.decode_task(NOTES_TASK)
    m = v03.decode_message(NOTES_MESSAGE)
    assert v03.encode_stream_event(StreamResponse(task=t)) == NOTES_TASK
    assert v03.encode_stream_event(StreamResponse(message=m)) == NOTES_MESSAGE
    assert v03.decode_stream_event(NOTES_TASK) == StreamResponse(task=t)
    assert v03.decode_stream_event(NOTES_MESSAGE) == StreamResponse(message=m)


def test_empty_stream_event_is_an_agent_error() -> None:
    with pytest.raises(InvalidAgentResponseError):
        v03.encode_stream_event(StreamResponse())


def test_send_result() -> None:
    t = v03.decode_task(NOTES_TASK)
    m = v03.decode_message(NOTES_MESSAGE)
    assert v03.encode_send_result(t) == NOTES_TASK
    assert v03.encode_send_result(m) == NOTES_MESSAGE
    assert v03.decode_send_result(NOTES_TASK) == t
    assert v03.decode_send_result(NOTES_MESSAGE) == m


# --- push configs ---------------------------------------------------------------------


def test_push_config_set_from_notes() -> None:
    params = {
        "taskId": "t1",
        "pushNotificationConfig": {"id": "p1", "url": "https://cb", "token": "tok"},
    }
    c = v03.decode_push_config_set(params)
    assert c == TaskPushNotificationConfig(id="p1", task_id="t1", url="https://cb", token="tok")
    assert v03.encode_push_config(c) == params


def test_push_config_id_defaults_to_task_id() -> None:
    c = v03.decode_push_config_set({"taskId": "t1", "pushNotificationConfig": {"url": "u"}})
    assert c.id == "t1"
    assert c.task_id == "t1"


def test_push_config_with_authentication_round_trip() -> None:
    params = {
        "taskId": "t1",
        "pushNotificationConfig": {
            "id": "p1",
            "url": "https://cb",
            "token": "tok",
            "authentication": {"schemes": ["Bearer"], "credentials": "x"},
        },
    }
    c = v03.decode_push_config_set(params)
    assert c.authentication == AuthenticationInfo(scheme="Bearer", credentials="x")
    assert v03.encode_push_config(c) == params


def test_push_config_ref() -> None:
    assert v03.decode_push_config_ref({"id": "t1", "pushNotificationConfigId": "p1"}) == (
        "t1",
        "p1",
    )
    assert v03.decode_push_config_ref({"id": "t1"}) == ("t1", None)
    with pytest.raises(InvalidParamsError, match=r"params\.pushNotificationConfigId"):
        v03.decode_push_config_ref({"id": "t1"}, require_config_id=True)


# --- hypothesis round trips -----------------------------------------------------------

_json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
_json = st.recursive(
    _json_leaf,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
_json_obj = st.dictionaries(st.text(max_size=5), _json, max_size=3)
_opt_text = st.none() | st.text(max_size=12)
_metadata = st.none() | _json_obj

_parts = st.one_of(
    st.builds(Part, text=st.text(max_size=20), metadata=_metadata),
    st.builds(Part, data=_json_obj, metadata=_metadata),
    st.builds(
        Part,
        raw=st.binary(max_size=40),
        media_type=_opt_text,
        filename=_opt_text,
        metadata=_metadata,
    ),
    st.builds(Part, url=st.text(min_size=1, max_size=20), media_type=_opt_text),
)

messages = st.builds(
    Message,
    message_id=st.text(min_size=1, max_size=12),
    role=st.sampled_from([Role.USER, Role.AGENT]),
    parts=st.lists(_parts, max_size=4),
    context_id=_opt_text,
    task_id=_opt_text,
    metadata=_metadata,
    extensions=st.none() | st.lists(st.text(max_size=8), max_size=2),
    reference_task_ids=st.none() | st.lists(st.text(max_size=8), max_size=2),
)

artifacts = st.builds(
    Artifact,
    artifact_id=st.text(min_size=1, max_size=8),
    parts=st.lists(_parts, max_size=3),
    name=_opt_text,
    description=_opt_text,
    metadata=_metadata,
)

tasks = st.builds(
    Task,
    id=st.text(min_size=1, max_size=8),
    context_id=st.text(max_size=8),
    status=st.builds(
        TaskStatus,
        state=st.sampled_from(list(TaskState)),
        message=st.none() | messages,
        timestamp=_opt_text,
    ),
    artifacts=st.none() | st.lists(artifacts, max_size=2),
    history=st.none() | st.lists(messages, max_size=2),
    metadata=_metadata,
)


@given(messages)
def test_message_round_trip(m: Message) -> None:
    assert v03.decode_message(wire(v03.encode_message(m))) == m


@given(tasks)
def test_task_round_trip(t: Task) -> None:
    assert v03.decode_task(wire(v03.encode_task(t))) == t


@given(messages)
def test_send_params_round_trip(m: Message) -> None:
    req = v03.decode_send_params(wire({"message": v03.encode_message(m)}))
    assert req == SendMessageRequest(message=m)


# --- bad input ------------------------------------------------------------------------


def _msg(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "role": "user",
        "messageId": "m1",
        "parts": [{"kind": "text", "text": "x"}],
    }
    d.update(over)
    return {"message": d}


@pytest.mark.parametrize(
    ("params", "where"),
    [
        (None, "params: expected an object"),
        ([1], "params: expected an object, got array"),
        ({}, "params.message: required"),
        ({"message": "hi"}, "params.message: expected an object, got string"),
        (_msg(parts="x"), "params.message.parts: expected an array"),
        (_msg(parts=None), "params.message.parts: required"),
        (_msg(parts=[{"kind": "foo"}]), "params.message.parts[0]: unknown part kind 'foo'"),
        (_msg(parts=[{"text": "x"}]), "params.message.parts[0].kind: required"),
        (_msg(parts=["x"]), "params.message.parts[0]: expected an object"),
        (_msg(parts=[{"kind": "text", "text": 5}]), "params.message.parts[0].text: expected a str"),
        (_msg(parts=[{"kind": "text"}]), "params.message.parts[0].text: required"),
        (_msg(parts=[{"kind": "data"}]), "params.message.parts[0].data: required"),
        (_msg(parts=[{"kind": "file"}]), "params.message.parts[0].file: required"),
        (
            _msg(parts=[{"kind": "file", "file": {}}]),
            "params.message.parts[0].file: must have one of",
        ),
        (
            _msg(parts=[{"kind": "file", "file": {"bytes": "aGk=", "uri": "u"}}]),
            "params.message.parts[0].file: must have exactly one",
        ),
        (
            _msg(parts=[{"kind": "file", "file": {"bytes": "!!"}}]),
            "params.message.parts[0].file.bytes: invalid base64",
        ),
        (
            _msg(parts=[{"kind": "file", "file": {"bytes": 3}}]),
            "params.message.parts[0].file.bytes: expected a base64 string",
        ),
        (
            _msg(parts=[{"kind": "file", "file": {"uri": "u", "mimeType": 1}}]),
            "params.message.parts[0].file.mimeType: expected a string",
        ),
        (
            _msg(parts=[{"kind": "text", "text": "x", "metadata": 1}]),
            "params.message.parts[0].metadata: Expected `object | null`",
        ),
        (_msg(role="robot"), "params.message.role: unknown role 'robot'"),
        (_msg(role=None), "params.message.role: required"),
        (_msg(kind="task"), "params.message.kind: expected 'message'"),
        (_msg(messageId=7), "params.message.messageId: Expected `str`, got `int`"),
        (_msg(messageId=None), "params.message: Object missing required field `messageId`"),
        (_msg(metadata=[]), "params.message.metadata: Expected `object | null`, got `array`"),
        (
            {**_msg(), "configuration": []},
            "params.configuration: expected an object, got array",
        ),
        (
            {**_msg(), "configuration": {"blocking": "no"}},
            "params.configuration.blocking: expected a boolean",
        ),
        (
            {**_msg(), "configuration": {"historyLength": "5"}},
            "params.configuration.historyLength: expected an integer",
        ),
        (
            {**_msg(), "configuration": {"historyLength": -1}},
            "params.configuration.historyLength: must not be negative",
        ),
        (
            {**_msg(), "configuration": {"acceptedOutputModes": "text"}},
            "params.configuration.acceptedOutputModes: expected an array",
        ),
        (
            {**_msg(), "configuration": {"pushNotificationConfig": {}}},
            "params.configuration.pushNotificationConfig.url: required",
        ),
        (
            {
                **_msg(),
                "configuration": {
                    "pushNotificationConfig": {"url": "u", "authentication": {"schemes": "B"}}
                },
            },
            "params.configuration.pushNotificationConfig.authentication.schemes: expected an array",
        ),
    ],
)
def test_bad_send_params(params: Any, where: str) -> None:
    with pytest.raises(InvalidParamsError) as exc:
        v03.decode_send_params(params)
    assert exc.value.message.startswith(where), exc.value.message


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({}, "params.id: required"),
        ({"id": 1}, "params.id: expected a string"),
        ({"id": ""}, "params.id: must not be empty"),
        ("t1", "params: expected an object"),
        ({"id": "t", "historyLength": True}, "params.historyLength: expected an integer"),
    ],
)
def test_bad_task_query(params: Any, where: str) -> None:
    with pytest.raises(InvalidParamsError) as exc:
        v03.decode_task_query(params)
    assert exc.value.message.startswith(where), exc.value.message


@pytest.mark.parametrize("params", [{}, {"id": None}, {"id": 5}, None])
def test_bad_task_id(params: Any) -> None:
    with pytest.raises(InvalidParamsError, match=r"^params"):
        v03.decode_task_id(params)


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"pushNotificationConfig": {"url": "u"}}, "params.taskId: required"),
        ({"taskId": "t"}, "params.pushNotificationConfig: required"),
        (
            {"taskId": "t", "pushNotificationConfig": {"url": 5}},
            "params.pushNotificationConfig.url: expected a string",
        ),
        (
            {"taskId": "t", "pushNotificationConfig": {"url": "u", "token": 5}},
            "params.pushNotificationConfig.token: expected a string",
        ),
        (
            {
                "taskId": "t",
                "pushNotificationConfig": {"url": "u", "authentication": {"schemes": [1]}},
            },
            "params.pushNotificationConfig.authentication.schemes[0]: expected a string",
        ),
    ],
)
def test_bad_push_config_set(params: Any, where: str) -> None:
    with pytest.raises(InvalidParamsError) as exc:
        v03.decode_push_config_set(params)
    assert exc.value.message.startswith(where), exc.value.message


def test_bad_task_state_and_event_kind() -> None:
    bad = wire(NOTES_TASK)
    bad["status"]["state"] = "TASK_STATE_WORKING"
    with pytest.raises(InvalidParamsError, match=r"^task\.status\.state: unknown task state"):
        v03.decode_task(bad)
    with pytest.raises(InvalidParamsError, match=r"^result\.kind: unknown event kind 'nope'"):
        v03.decode_stream_event({"kind": "nope"})
    with pytest.raises(InvalidParamsError, match=r"^task\.history\[0\]\.parts\[0\]: unknown"):
        v03.decode_task({**NOTES_TASK, "history": [{**NOTES_MESSAGE, "parts": [{"kind": "x"}]}]})


def test_decode_message_uses_given_path() -> None:
    with pytest.raises(InvalidParamsError, match=r"^params\.message\.parts\[1\]: unknown part"):
        v03.decode_message(
            {
                "role": "user",
                "messageId": "m",
                "parts": [{"kind": "text", "text": ""}, {"kind": 1}],
            },
            "params.message",
        )
