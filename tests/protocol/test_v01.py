"""Tests of the legacy A2A 0.1 codec (a2a_hub.protocol.v01)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_hub.protocol import v01
from a2a_hub.protocol.errors import InvalidParamsError
from a2a_hub.protocol.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    Artifact,
    AuthenticationInfo,
    HTTPAuthSecurityScheme,
    Message,
    Part,
    Role,
    SecurityScheme,
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


def _same_content(a: Message, b: Message) -> bool:
    """Equal apart from the things 0.1 cannot carry (ids, context, extensions)."""
    return (a.role, a.parts, a.metadata) == (b.role, b.parts, b.metadata)


# --- examples from the notes ---------------------------------------------------------

NOTES_SEND = {
    "id": "de38c76d-d54c-436c-8b9f-4c2703648d64",
    "sessionId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
    "message": {
        "role": "user",
        "parts": [{"type": "text", "text": "tell me a joke"}],
        "metadata": {},
    },
    "acceptedOutputModes": ["text", "text/plain"],
    "pushNotification": {
        "url": "https://cb",
        "token": "tok",
        "authentication": {"schemes": ["bearer"]},
    },
    "historyLength": 10,
    "metadata": {},
}

NOTES_TASK = {
    "id": "de38c76d-...",
    "sessionId": "c295ea44-...",
    "status": {"state": "completed", "timestamp": "2025-04-02T16:59:35.331844"},
    "artifacts": [
        {"name": "joke", "parts": [{"type": "text", "text": "Why did the chicken..."}], "index": 0}
    ],
    "history": [{"role": "user", "parts": [{"type": "text", "text": "tell me a joke"}]}],
    "metadata": {},
}

NOTES_PARTS = [
    {"type": "text", "text": "hello"},
    {"type": "file", "file": {"name": "a.pdf", "mimeType": "application/pdf", "bytes": "aGk="}},
    {"type": "file", "file": {"name": "a.png", "mimeType": "image/png", "uri": "https://x/a.png"}},
    {"type": "data", "data": {"k": 1}},
]


def test_send_params_from_notes() -> None:
    req, task_id = v01.decode_send_params(NOTES_SEND)
    assert task_id == "de38c76d-d54c-436c-8b9f-4c2703648d64"
    m = req.message
    assert m.message_id.startswith(v01.LEGACY_ID_PREFIX)
    assert len(m.message_id) == len(v01.LEGACY_ID_PREFIX) + 32
    assert m.role is Role.USER
    assert m.parts == [Part(text="tell me a joke")]
    assert m.context_id == "c295ea44-7543-4f78-b524-7a38915ad6e4"
    assert m.task_id is None
    assert m.metadata == {}
    assert req.metadata == {}
    cfg = req.configuration
    assert cfg is not None
    assert cfg.accepted_output_modes == ["text", "text/plain"]
    assert cfg.history_length == 10
    assert cfg.return_immediately is False
    assert cfg.task_push_notification_config == TaskPushNotificationConfig(
        id=task_id,
        task_id=task_id,
        url="https://cb",
        token="tok",
        authentication=AuthenticationInfo(scheme="bearer"),
    )


def test_minimal_send_params() -> None:
    req, task_id = v01.decode_send_params(
        {"id": "t1", "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}}
    )
    assert task_id == "t1"
    assert req.configuration is None
    assert req.metadata is None
    assert req.message.context_id is None


def test_every_decoded_message_gets_a_fresh_id() -> None:
    a, _ = v01.decode_send_params(NOTES_SEND)
    b, _ = v01.decode_send_params(NOTES_SEND)
    assert a.message.message_id != b.message.message_id


def test_parts_from_notes() -> None:
    m = v01.decode_message({"role": "agent", "parts": NOTES_PARTS})
    assert m.role is Role.AGENT
    assert m.parts == [
        Part(text="hello"),
        Part(raw=b"hi", media_type="application/pdf", filename="a.pdf"),
        Part(url="https://x/a.png", media_type="image/png", filename="a.png"),
        Part(data={"k": 1}),
    ]
    assert v01.encode_message(m) == {"role": "agent", "parts": NOTES_PARTS}


def test_file_data_instead_of_bytes_is_accepted() -> None:
    m = v01.decode_message(
        {"role": "user", "parts": [{"type": "file", "file": {"data": "aGk=", "mimeType": "x/y"}}]}
    )
    assert m.parts == [Part(raw=b"hi", media_type="x/y")]
    # ... and re-encoded the right way.
    assert v01.encode_message(m)["parts"] == [
        {"type": "file", "file": {"bytes": "aGk=", "mimeType": "x/y"}}
    ]


def test_notes_task_round_trip_exact() -> None:
    t = v01.decode_task(NOTES_TASK)
    assert t.id == "de38c76d-..."
    assert t.context_id == "c295ea44-..."
    assert t.status.state is TaskState.COMPLETED
    assert t.artifacts == [
        Artifact(artifact_id="artifact-0", name="joke", parts=[Part(text="Why did the chicken...")])
    ]
    assert v01.is_legacy_task(t)
    assert v01.encode_task(t) == NOTES_TASK
    assert msgspec.json.encode(v01.encode_task(t)) == msgspec.json.encode(NOTES_TASK)


def test_encode_task_shape() -> None:
    user = Message(message_id="m1", role=Role.USER, parts=[Part(text="hi")], context_id="c")
    agent = Message(
        message_id="m2",
        role=Role.AGENT,
        parts=[Part(raw=b"\x00\x01", media_type="application/octet-stream", filename="b.bin")],
        context_id="c",
        task_id="t",
        metadata={"k": "v"},
    )
    t = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.INPUT_REQUIRED, message=agent, timestamp="ts"),
        artifacts=[
            Artifact(artifact_id="x", parts=[Part(text="a")]),
            Artifact(artifact_id="y", name="n", description="d", parts=[], metadata={}),
        ],
        history=[user, agent],
        metadata={"m": 1},
    )
    agent_01 = {
        "role": "agent",
        "parts": [
            {
                "type": "file",
                "file": {"bytes": "AAE=", "mimeType": "application/octet-stream", "name": "b.bin"},
            }
        ],
        "metadata": {"k": "v"},
    }
    assert v01.encode_task(t) == {
        "id": "t",
        "sessionId": "c",
        "status": {"state": "input-required", "message": agent_01, "timestamp": "ts"},
        "artifacts": [
            {"parts": [{"type": "text", "text": "a"}], "index": 0},
            {"name": "n", "description": "d", "parts": [], "metadata": {}, "index": 1},
        ],
        "history": [{"role": "user", "parts": [{"type": "text", "text": "hi"}]}, agent_01],
        "metadata": {"m": 1},
    }


def test_encode_task_omissions() -> None:
    t = Task(id="t", status=TaskStatus(state=TaskState.WORKING), artifacts=[])
    assert v01.encode_task(t) == {"id": "t", "status": {"state": "working"}}
    t = Task(id="t", status=TaskStatus(state=TaskState.WORKING), history=[])
    assert v01.encode_task(t) == {"id": "t", "status": {"state": "working"}, "history": []}


# --- states ---------------------------------------------------------------------------


def test_state_mapping() -> None:
    assert set(v01.STATE_TO_V01) == set(TaskState)
    assert set(v01.STATE_TO_V01.values()) == {
        "submitted",
        "working",
        "input-required",
        "completed",
        "canceled",
        "failed",
        "unknown",
    }
    assert v01.STATE_TO_V01[TaskState.REJECTED] == "failed"
    assert v01.STATE_TO_V01[TaskState.AUTH_REQUIRED] == "input-required"
    assert v01.STATE_TO_V01[TaskState.UNSPECIFIED] == "unknown"
    for name, state in v01.V01_TO_STATE.items():
        assert v01.STATE_TO_V01[state] == name
    assert "rejected" not in v01.V01_TO_STATE
    assert "auth-required" not in v01.V01_TO_STATE


# --- legacy marker --------------------------------------------------------------------


def test_is_legacy_task() -> None:
    req, task_id = v01.decode_send_params(NOTES_SEND)
    status = TaskStatus(state=TaskState.WORKING)
    assert v01.is_legacy_task(Task(id=task_id, status=status, history=[req.message]))
    modern = Message(message_id="m1", role=Role.USER, parts=[])
    assert not v01.is_legacy_task(Task(id="t", status=status, history=[modern, req.message]))
    assert not v01.is_legacy_task(Task(id="t", status=status))
    assert not v01.is_legacy_task(Task(id="t", status=status, history=[]))
    assert v01.new_legacy_id().startswith("a2a01-")


# --- streaming ------------------------------------------------------------------------


def test_status_event_shapes() -> None:
    def ev(state: TaskState, **kw: Any) -> StreamResponse:
        return StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id="t1", context_id="c1", status=TaskStatus(state=state, **kw)
            )
        )

    assert v01.encode_stream_event(ev(TaskState.WORKING, timestamp="2025-04-02T16:59:25")) == {
        "id": "t1",
        "status": {"state": "working", "timestamp": "2025-04-02T16:59:25"},
        "final": False,
    }
    assert v01.encode_stream_event(ev(TaskState.COMPLETED)) == {
        "id": "t1",
        "status": {"state": "completed"},
        "final": True,
    }
    assert v01.encode_stream_event(ev(TaskState.INPUT_REQUIRED))["final"] is True  # type: ignore[index]
    auth = v01.encode_stream_event(ev(TaskState.AUTH_REQUIRED))
    assert auth == {"id": "t1", "status": {"state": "input-required"}, "final": True}
    rejected = v01.encode_stream_event(ev(TaskState.REJECTED))
    assert rejected == {"id": "t1", "status": {"state": "failed"}, "final": True}


def test_status_event_metadata() -> None:
    ev = StreamResponse(
        status_update=TaskStatusUpdateEvent(
            task_id="t1",
            context_id="c1",
            status=TaskStatus(state=TaskState.WORKING),
            metadata={"a": 1},
        )
    )
    assert v01.encode_stream_event(ev) == {
        "id": "t1",
        "status": {"state": "working"},
        "final": False,
        "metadata": {"a": 1},
    }


def _art_ev(artifact_id: str, text: str, *, append: bool = False, last: bool = False) -> Any:
    return StreamResponse(
        artifact_update=TaskArtifactUpdateEvent(
            task_id="t1",
            context_id="c1",
            artifact=Artifact(artifact_id=artifact_id, parts=[Part(text=text)]),
            append=append,
            last_chunk=last,
        )
    )


def test_artifact_event_shapes_from_notes() -> None:
    assert v01.encode_stream_event(_art_ev("a", "<section 1...>")) == {
        "id": "t1",
        "artifact": {
            "parts": [{"type": "text", "text": "<section 1...>"}],
            "index": 0,
            "append": False,
            "lastChunk": False,
        },
    }
    assert v01.encode_stream_event(_art_ev("a", "<section 2...>", append=True, last=True)) == {
        "id": "t1",
        "artifact": {
            "parts": [{"type": "text", "text": "<section 2...>"}],
            "index": 0,
            "append": True,
            "lastChunk": True,
        },
    }


def test_artifact_indexer() -> None:
    ix = v01.ArtifactIndexer()
    snapshot = Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(state=TaskState.WORKING),
        artifacts=[Artifact(artifact_id="old", parts=[])],
    )
    first = v01.encode_stream_event(StreamResponse(task=snapshot), ix)
    assert first == {"id": "t1", "status": {"state": "working"}, "final": False}

    def index(ev: Any) -> int:
        out = v01.encode_stream_event(ev, ix)
        assert out is not None
        return int(out["artifact"]["index"])

    assert index(_art_ev("new", "x")) == 1
    assert index(_art_ev("old", "y", append=True)) == 0
    assert index(_art_ev("new", "z", append=True)) == 1
    assert index(_art_ev("newer", "w")) == 2
    # Without an indexer the index is 0.
    assert v01.encode_stream_event(_art_ev("newer", "w"))["artifact"]["index"] == 0  # type: ignore[index]


def test_task_snapshot_event() -> None:
    def snap(state: TaskState) -> dict[str, Any] | None:
        return v01.encode_stream_event(
            StreamResponse(task=Task(id="t1", status=TaskStatus(state=state)))
        )

    assert snap(TaskState.SUBMITTED) == {
        "id": "t1",
        "status": {"state": "submitted"},
        "final": False,
    }
    assert snap(TaskState.INPUT_REQUIRED) == {
        "id": "t1",
        "status": {"state": "input-required"},
        "final": False,
    }
    assert snap(TaskState.CANCELED) == {"id": "t1", "status": {"state": "canceled"}, "final": True}


def test_message_events_are_skipped() -> None:
    m = Message(message_id="m", role=Role.USER, parts=[Part(text="hi")])
    assert v01.encode_stream_event(StreamResponse(message=m)) is None


# --- push -----------------------------------------------------------------------------


def test_push_set_and_encode_from_notes() -> None:
    params = {
        "id": "de38c76d-...",
        "pushNotificationConfig": {
            "url": "https://example.com/callback",
            "token": "tok",
            "authentication": {"schemes": ["jwt"]},
        },
    }
    c = v01.decode_push_set(params)
    assert c == TaskPushNotificationConfig(
        id="de38c76d-...",
        task_id="de38c76d-...",
        url="https://example.com/callback",
        token="tok",
        authentication=AuthenticationInfo(scheme="jwt"),
    )
    assert v01.encode_push_config("de38c76d-...", c) == params


def test_push_encode_with_credentials_and_config_id() -> None:
    c = TaskPushNotificationConfig(
        id="p1",
        task_id="t1",
        url="u",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="x"),
    )
    assert v01.encode_push_config("t1", c) == {
        "id": "t1",
        "pushNotificationConfig": {
            "url": "u",
            "authentication": {"schemes": ["Bearer"], "credentials": "x"},
        },
    }


# --- agent card -----------------------------------------------------------------------


def _card(**kw: Any) -> AgentCard:
    base: dict[str, Any] = {
        "name": "Google Maps Agent",
        "description": "Plan routes, remember places, and generate directions",
        "supported_interfaces": [
            AgentInterface(url="https://x/rpc", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        "version": "1.0.0",
        "capabilities": AgentCapabilities(streaming=True, extended_agent_card=True),
        "default_input_modes": ["text/plain"],
        "default_output_modes": ["text/plain", "application/html"],
        "skills": [
            AgentSkill(
                id="route-planner",
                name="Route planning",
                description="Helps plan routing between two locations",
                tags=["maps", "routing"],
                examples=["plan my route from Sunnyvale to Mountain View"],
                output_modes=["application/html", "video/mp4"],
            )
        ],
    }
    base.update(kw)
    return AgentCard(**base)


def test_card_from_notes() -> None:
    card = _card(
        provider=AgentProvider(organization="Google", url="https://google.com"),
        documentation_url="https://example.com/docs",
        security_schemes={
            "oauth": SecurityScheme(oauth2_security_scheme={"flows": {}}),
            "oauth-again": SecurityScheme(oauth2_security_scheme={"flows": {}}),
        },
    )
    expected = {
        "name": "Google Maps Agent",
        "description": "Plan routes, remember places, and generate directions",
        "url": "https://maps-agent.google.com",
        "provider": {"organization": "Google", "url": "https://google.com"},
        "version": "1.0.0",
        "documentationUrl": "https://example.com/docs",
        "capabilities": {
            "streaming": True,
            "pushNotifications": False,
            "stateTransitionHistory": False,
        },
        "authentication": {"schemes": ["OAuth2"]},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain", "application/html"],
        "skills": [
            {
                "id": "route-planner",
                "name": "Route planning",
                "description": "Helps plan routing between two locations",
                "tags": ["maps", "routing"],
                "examples": ["plan my route from Sunnyvale to Mountain View"],
                "outputModes": ["application/html", "video/mp4"],
            }
        ],
    }
    out = v01.encode_card(card, "https://maps-agent.google.com")
    assert out == expected
    assert msgspec.json.encode(out) == msgspec.json.encode(expected)


def test_minimal_card_has_no_optional_fields() -> None:
    out = v01.encode_card(_card(), "https://h/")
    assert "provider" not in out
    assert "documentationUrl" not in out
    assert "authentication" not in out
    assert out["url"] == "https://h/"


def test_card_http_scheme_name() -> None:
    card = _card(
        security_schemes={
            "b": SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        }
    )
    assert v01.encode_card(card, "u")["authentication"] == {"schemes": ["Bearer"]}


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
    st.builds(Part, url=st.text(min_size=1, max_size=20), media_type=_opt_text, filename=_opt_text),
)

messages = st.builds(
    Message,
    message_id=st.text(min_size=1, max_size=12),
    role=st.sampled_from([Role.USER, Role.AGENT]),
    parts=st.lists(_parts, max_size=4),
    metadata=_metadata,
)


@given(messages)
def test_message_round_trip(m: Message) -> None:
    back = v01.decode_message(wire(v01.encode_message(m)))
    assert _same_content(back, m)
    assert back.message_id.startswith(v01.LEGACY_ID_PREFIX)
    # And the 0.1 side is reproduced exactly.
    assert v01.encode_message(back) == v01.encode_message(m)


_v01_states = st.sampled_from(sorted(v01.V01_TO_STATE.values(), key=lambda s: s.value))


@given(
    task_id=st.text(min_size=1, max_size=8),
    context_id=st.text(min_size=1, max_size=8),
    state=_v01_states,
    status_message=st.none() | messages,
    history=st.none() | st.lists(messages, max_size=3),
    artifact_parts=st.lists(st.lists(_parts, max_size=2), max_size=3),
    metadata=_metadata,
)
def test_task_round_trip(
    task_id: str,
    context_id: str,
    state: TaskState,
    status_message: Message | None,
    history: list[Message] | None,
    artifact_parts: list[list[Part]],
    metadata: dict[str, Any] | None,
) -> None:
    t = Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=state, message=status_message, timestamp="2025-04-02T16:59:35"),
        artifacts=[
            Artifact(artifact_id=f"artifact-{i}", parts=p) for i, p in enumerate(artifact_parts)
        ]
        or None,
        history=history,
        metadata=metadata,
    )
    encoded = v01.encode_task(t)
    back = v01.decode_task(wire(encoded))
    assert v01.encode_task(back) == encoded
    assert (back.id, back.context_id, back.status.state) == (task_id, context_id, state)
    assert back.artifacts == t.artifacts
    assert back.metadata == metadata
    if status_message is None:
        assert back.status.message is None
    else:
        assert back.status.message is not None
        assert _same_content(back.status.message, status_message)
    if history is None:
        assert back.history is None
    else:
        assert back.history is not None
        assert len(back.history) == len(history)
        assert all(_same_content(a, b) for a, b in zip(back.history, history, strict=True))
        assert all(m.task_id == task_id and m.context_id == context_id for m in back.history)


@given(messages, st.text(min_size=1, max_size=8), st.none() | st.text(min_size=1, max_size=8))
def test_send_params_round_trip(m: Message, task_id: str, session: str | None) -> None:
    params: dict[str, Any] = {"id": task_id, "message": v01.encode_message(m)}
    if session is not None:
        params["sessionId"] = session
    req, got_id = v01.decode_send_params(wire(params))
    assert got_id == task_id
    assert _same_content(req.message, m)
    assert req.message.context_id == session
    assert req.message.task_id is None


# --- bad input ------------------------------------------------------------------------


def _send(**msg: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"role": "user", "parts": [{"type": "text", "text": "x"}]}
    d.update(msg)
    return {"id": "t1", "message": d}


@pytest.mark.parametrize(
    ("params", "where"),
    [
        (None, "params: expected an object, got null"),
        ({"message": _send()["message"]}, "params.id: required"),
        ({**_send(), "id": 5}, "params.id: expected a string, got number"),
        ({**_send(), "sessionId": 5}, "params.sessionId: expected a string"),
        ({"id": "t1"}, "params.message: required"),
        ({"id": "t1", "message": []}, "params.message: expected an object, got array"),
        (_send(parts={}), "params.message.parts: expected an array, got object"),
        (_send(parts=[{"type": "foo"}]), "params.message.parts[0]: unknown part type 'foo'"),
        (
            _send(parts=[{"kind": "text", "text": "x"}]),
            "params.message.parts[0].type: required",
        ),
        (_send(parts=[{"type": "text", "text": None}]), "params.message.parts[0].text: required"),
        (
            _send(parts=[{"type": "text", "text": ["x"]}]),
            "params.message.parts[0].text: expected a string",
        ),
        (
            _send(parts=[{"type": "file", "file": {"bytes": "a", "uri": "u"}}]),
            "params.message.parts[0].file: must have exactly one",
        ),
        (
            _send(parts=[{"type": "file", "file": {"data": "$$"}}]),
            "params.message.parts[0].file.data: invalid base64",
        ),
        (
            _send(parts=[{"type": "file", "file": {"name": "n"}}]),
            "params.message.parts[0].file: must have one of",
        ),
        (_send(role="system"), "params.message.role: unknown role 'system'"),
        (_send(role=None), "params.message.role: required"),
        (_send(metadata="x"), "params.message.metadata: Expected `object | null`, got `str`"),
        (
            {**_send(), "historyLength": 1.5},
            "params.historyLength: expected an integer",
        ),
        (
            {**_send(), "acceptedOutputModes": [1]},
            "params.acceptedOutputModes[0]: expected a string",
        ),
        (
            {**_send(), "pushNotification": {"token": "t"}},
            "params.pushNotification.url: required",
        ),
        (
            {**_send(), "pushNotification": "https://cb"},
            "params.pushNotification: expected an object",
        ),
    ],
)
def test_bad_send_params(params: Any, where: str) -> None:
    with pytest.raises(InvalidParamsError) as exc:
        v01.decode_send_params(params)
    assert exc.value.message.startswith(where), exc.value.message


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({}, "params.id: required"),
        ({"id": 1}, "params.id: expected a string"),
        ({"id": "t", "historyLength": "3"}, "params.historyLength: expected an integer"),
    ],
)
def test_bad_task_query(params: Any, where: str) -> None:
    with pytest.raises(InvalidParamsError) as exc:
        v01.decode_task_query(params)
    assert exc.value.message.startswith(where), exc.value.message


def test_task_query_and_id() -> None:
    assert v01.decode_task_query({"id": "t", "historyLength": 0, "metadata": {}}) == ("t", 0)
    assert v01.decode_task_id({"id": "t"}) == "t"
    with pytest.raises(InvalidParamsError, match=r"^params\.id: required"):
        v01.decode_task_id({"metadata": {}})


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"pushNotificationConfig": {"url": "u"}}, "params.id: required"),
        ({"id": "t"}, "params.pushNotificationConfig: required"),
        (
            {"id": "t", "pushNotificationConfig": {"url": "u", "authentication": {}}},
            "params.pushNotificationConfig.authentication.schemes: required",
        ),
    ],
)
def test_bad_push_set(params: Any, where: str) -> None:
    with pytest.raises(InvalidParamsError) as exc:
        v01.decode_push_set(params)
    assert exc.value.message.startswith(where), exc.value.message


def test_bad_task_state() -> None:
    with pytest.raises(
        InvalidParamsError, match=r"^task\.status\.state: unknown task state 'rejected'"
    ):
        v01.decode_task({"id": "t", "status": {"state": "rejected"}})
