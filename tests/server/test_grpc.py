"""The gRPC binding against the official a2a-sdk gRPC client, on a real loopback port.

The client finds the gRPC interface in our card (over HTTP), as any SDK user would, and
talks to the same engine as the HTTP bindings.  Raw-stub tests check what the SDK hides:
the status codes, the ``ErrorInfo`` details and the service parameters in metadata.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory
from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
from a2a.helpers import get_artifact_text, get_message_text, new_text_message
from a2a.types import a2a_pb2_grpc
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from google.protobuf import struct_pb2
from google.protobuf.timestamp_pb2 import Timestamp
from google.rpc import error_details_pb2, status_pb2

from a2a_hub import AgentSpec, Hub, Settings
from a2a_hub.protocol.types import AgentExtension
from a2a_hub.server.grpc import convert
from a2a_hub.stores.memory import MemoryStore
from tests.support.agents import ChattyExecutor, ExtensionAware, PizzaExecutor, SlowExecutor
from tests.support.hub import LiveServer

SHOUT = "https://example.com/ext/shout/v1"
TRACE = "https://example.com/ext/trace/v1"
SIGNED = "https://example.com/ext/signed/v1"


def grpc_hub(*, default_agent: str | None = "echo", **settings: Any) -> Hub:
    """echo, pizza, slow, chatty, ext (declares SHOUT and TRACE) and strict (requires SIGNED)."""
    executors = {
        "pizza": PizzaExecutor(),
        "slow": SlowExecutor(),
        "chatty": ChattyExecutor(chunks=20, pause_every=2, delay=0.3),
        "ext": ExtensionAware(),
        "strict": ExtensionAware(),
    }
    specs = [AgentSpec(id="echo")] + [
        AgentSpec(id=name, kind="python", executor="x:y") for name in executors
    ]
    specs[-1].extensions = [AgentExtension(uri=SIGNED, description="signed", required=True)]
    settings.setdefault("grpc_port", 0)
    config = Settings.from_flat(
        agents=specs, default_agent=default_agent, store="memory://", **settings
    )
    return Hub(config, store=MemoryStore(), executors=executors)


@pytest.fixture
async def live() -> AsyncIterator[LiveServer]:
    async with LiveServer(grpc_hub()) as server:
        yield server


def grpc_address(live: LiveServer) -> str:
    assert live.hub.grpc is not None and live.hub.grpc.port
    return f"127.0.0.1:{live.hub.grpc.port}"


@pytest.fixture
async def clients(live: LiveServer) -> AsyncIterator[Callable[..., Any]]:
    """``await make(agent_id, streaming=False)``: an SDK client on our card's GRPC interface."""
    made: list[Any] = []
    async with httpx.AsyncClient(timeout=30) as http:

        async def make(agent_id: str, *, streaming: bool = False) -> Any:
            card = await A2ACardResolver(http, f"{live.url}/a2a/{agent_id}").get_agent_card()
            config = ClientConfig(
                streaming=streaming,
                supported_protocol_bindings=["GRPC"],
                grpc_channel_factory=grpc.aio.insecure_channel,
            )
            client = ClientFactory(config).create(card)
            made.append(client)
            return client

        yield make
        for client in made:
            await client.close()


@pytest.fixture
async def stub(live: LiveServer) -> AsyncIterator[Any]:
    async with grpc.aio.insecure_channel(grpc_address(live)) as channel:
        yield a2a_pb2_grpc.A2AServiceStub(channel)


def user(text: str, task_id: str | None = None, context_id: str | None = None) -> Any:
    return new_text_message(text, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)


async def one(stream: Any) -> Any:
    events = [e async for e in stream]
    assert len(events) == 1
    return events[0]


def error_of(exc: grpc.aio.AioRpcError) -> tuple[grpc.StatusCode, error_details_pb2.ErrorInfo]:
    """The status code and the ErrorInfo detail of a failed call."""
    details = dict(exc.trailing_metadata() or ())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(details)
    assert status.code == exc.code().value[0] and status.message == exc.details()
    info = error_details_pb2.ErrorInfo()
    assert len(status.details) == 1 and status.details[0].Unpack(info)
    assert info.domain == "a2a-protocol.org"
    return exc.code(), info


# --- the SDK client, found through the card -----------------------------------------------


async def test_card_lists_the_grpc_interface(live: LiveServer) -> None:
    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{live.url}/a2a/pizza/.well-known/agent-card.json")).json()
    grpc_iface = [i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert grpc_iface == [
        {
            "url": grpc_address(live),
            "protocolBinding": "GRPC",
            "protocolVersion": "1.0",
            "tenant": "pizza",
        }
    ]


async def test_sdk_client_uses_grpc(clients: Callable[..., Any]) -> None:
    client = await clients("echo")
    assert type(client._transport._base).__name__ == "GrpcTransport"  # under the tenant decorator


async def test_send_and_get(clients: Callable[..., Any]) -> None:
    echo = await clients("echo")
    ev = await one(echo.send_message(SendMessageRequest(message=user("hello"))))
    task = ev.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(task.artifacts[0]) == "echo: hello"
    assert task.status.HasField("timestamp") and task.status.timestamp.seconds > 1_700_000_000
    got = await echo.get_task(GetTaskRequest(id=task.id, history_length=10))
    assert got.id == task.id and got.status.state == TaskState.TASK_STATE_COMPLETED
    assert [get_message_text(m) for m in got.history] == ["hello"]
    with pytest.raises(TaskNotFoundError):
        await echo.get_task(GetTaskRequest(id="no-such-task"))


async def test_send_answered_with_a_message(clients: Callable[..., Any]) -> None:
    ext = await clients("ext")
    ev = await one(ext.send_message(SendMessageRequest(message=user("hi"))))
    assert ev.WhichOneof("payload") == "message"
    assert ev.message.role == Role.ROLE_AGENT
    assert get_message_text(ev.message) == "active: none"


async def test_list(clients: Callable[..., Any]) -> None:
    echo = await clients("echo")
    first = (await one(echo.send_message(SendMessageRequest(message=user("one"))))).task
    context = first.context_id
    second = (
        await one(echo.send_message(SendMessageRequest(message=user("two", context_id=context))))
    ).task
    page = await echo.list_tasks(ListTasksRequest(context_id=context, page_size=1))
    assert [t.id for t in page.tasks] == [second.id]
    assert page.total_size == 2 and page.page_size == 1 and page.next_page_token
    rest = await echo.list_tasks(
        ListTasksRequest(context_id=context, page_size=1, page_token=page.next_page_token)
    )
    assert [t.id for t in rest.tasks] == [first.id]
    done = await echo.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED))
    assert {first.id, second.id} <= {t.id for t in done.tasks}
    before, after = Timestamp(), Timestamp()
    before.FromSeconds(second.status.timestamp.seconds - 60)
    after.FromSeconds(second.status.timestamp.seconds + 60)
    recent = await echo.list_tasks(
        ListTasksRequest(context_id=context, status_timestamp_after=before)
    )
    assert recent.total_size == 2
    none = await echo.list_tasks(ListTasksRequest(context_id=context, status_timestamp_after=after))
    assert none.total_size == 0 and not none.tasks


async def test_cancel(clients: Callable[..., Any]) -> None:
    slow = await clients("slow")
    config = SendMessageConfiguration(return_immediately=True)
    ev = await one(
        slow.send_message(SendMessageRequest(message=user("work"), configuration=config))
    )
    assert ev.task.status.state == TaskState.TASK_STATE_SUBMITTED
    canceled = await slow.cancel_task(CancelTaskRequest(id=ev.task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    with pytest.raises(TaskNotCancelableError):
        await slow.cancel_task(CancelTaskRequest(id=ev.task.id))


async def test_two_turn_input_required(clients: Callable[..., Any]) -> None:
    pizza = await clients("pizza")
    first = (await one(pizza.send_message(SendMessageRequest(message=user("I want pizza"))))).task
    assert first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert get_message_text(first.status.message) == "What kind of pizza?"
    second = (
        await one(
            pizza.send_message(
                SendMessageRequest(
                    message=user("pineapple", task_id=first.id, context_id=first.context_id)
                )
            )
        )
    ).task
    assert second.id == first.id and second.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(second.artifacts[0]) == "order: pineapple"
    assert [get_message_text(m) for m in second.history][:3] == [
        "I want pizza",
        "What kind of pizza?",
        "pineapple",
    ]


async def test_streaming_send(clients: Callable[..., Any]) -> None:
    echo = await clients("echo", streaming=True)
    events = [e async for e in echo.send_message(SendMessageRequest(message=user("s")))]
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds == ["task", "status_update", "artifact_update", "status_update"]
    assert get_artifact_text(events[2].artifact_update.artifact) == "echo: s"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def test_subscribe_to_a_running_task(clients: Callable[..., Any]) -> None:
    chatty = await clients("chatty")
    follower = await clients("chatty", streaming=True)
    config = SendMessageConfiguration(return_immediately=True)
    task = (
        await one(chatty.send_message(SendMessageRequest(message=user("go"), configuration=config)))
    ).task
    events = [e async for e in follower.subscribe(SubscribeToTaskRequest(id=task.id))]
    assert events[0].WhichOneof("payload") == "task"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    chunks = [
        get_artifact_text(e.artifact_update.artifact)
        for e in events
        if e.WhichOneof("payload") == "artifact_update"
    ]
    assert chunks and chunks[-1] == "000019.."


async def test_extensions_through_the_sdk(clients: Callable[..., Any], live: LiveServer) -> None:
    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{live.url}/a2a/ext/.well-known/agent-card.json")).json()
    assert card["capabilities"]["extensions"] == [
        {"uri": SHOUT, "description": "Answers in capitals"},
        {"uri": TRACE, "params": {"level": 2}},
    ]
    ext = await clients("ext")
    params = ServiceParametersFactory.create([with_a2a_extensions([SHOUT, "urn:unknown"])])
    ev = await one(
        ext.send_message(
            SendMessageRequest(message=user("hi")),
            context=ClientCallContext(service_parameters=params),
        )
    )
    assert get_message_text(ev.message) == f"active: {SHOUT}"


# --- the raw stub: statuses, details, metadata --------------------------------------------


async def test_unknown_task_is_not_found(stub: Any) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetTask(GetTaskRequest(tenant="echo", id="nope"))
    code, info = error_of(caught.value)
    assert code == grpc.StatusCode.NOT_FOUND and info.reason == "TASK_NOT_FOUND"
    assert info.metadata["taskId"] == "nope" and "nope" in caught.value.details()


async def test_cancel_of_a_terminal_task_is_failed_precondition(stub: Any) -> None:
    sent = await stub.SendMessage(SendMessageRequest(tenant="echo", message=user("done")))
    assert sent.task.status.state == TaskState.TASK_STATE_COMPLETED
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.CancelTask(CancelTaskRequest(tenant="echo", id=sent.task.id))
    code, info = error_of(caught.value)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and info.reason == "TASK_NOT_CANCELABLE"
    assert "completed" in caught.value.details()


async def test_invalid_message_is_invalid_argument(stub: Any) -> None:
    bad = Message(message_id="m", role=Role.ROLE_AGENT, parts=[Part(text="x")])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(SendMessageRequest(tenant="echo", message=bad))
    code, info = error_of(caught.value)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and info.reason == "INVALID_PARAMS"
    assert "ROLE_USER" in caught.value.details()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(SendMessageRequest(tenant="echo"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "message is required" in caught.value.details()


async def test_agent_by_tenant_then_metadata_then_default(stub: Any, live: LiveServer) -> None:
    by_meta = await stub.SendMessage(
        SendMessageRequest(message=user("I want pizza")), metadata=[("x-a2a-hub-agent", "pizza")]
    )
    assert by_meta.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    tenant_wins = await stub.SendMessage(
        SendMessageRequest(tenant="echo", message=user("x")),
        metadata=[("x-a2a-hub-agent", "pizza")],
    )
    assert get_artifact_text(tenant_wins.task.artifacts[0]) == "echo: x"
    default = await stub.SendMessage(SendMessageRequest(message=user("root")))
    assert get_artifact_text(default.task.artifacts[0]) == "echo: root"
    # the task lives with its agent: the pizza agent's task is not the echo agent's
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetTask(GetTaskRequest(tenant="echo", id=by_meta.task.id))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetTask(GetTaskRequest(tenant="ghost", id="x"))
    code, info = error_of(caught.value)
    assert code == grpc.StatusCode.NOT_FOUND and info.reason == "AGENT_NOT_FOUND"
    assert "ghost" in caught.value.details() and "pizza" in caught.value.details()


async def test_no_default_agent_needs_a_tenant() -> None:
    hub = grpc_hub(default_agent=None)
    await hub.start()
    try:
        assert hub.grpc is not None
        async with grpc.aio.insecure_channel(f"127.0.0.1:{hub.grpc.port}") as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.SendMessage(SendMessageRequest(message=user("x")))
            code, info = error_of(caught.value)
            assert code == grpc.StatusCode.NOT_FOUND and info.reason == "AGENT_NOT_FOUND"
            assert "tenant" in caught.value.details() or "agent" in caught.value.details()
    finally:
        await hub.close()
    assert hub.grpc is None


async def test_version_metadata(stub: Any) -> None:
    ok = await stub.SendMessage(
        SendMessageRequest(tenant="echo", message=user("v")), metadata=[("a2a-version", "1.0")]
    )
    assert ok.task.status.state == TaskState.TASK_STATE_COMPLETED
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(
            SendMessageRequest(tenant="echo", message=user("v")),
            metadata=[("a2a-version", "0.3")],
        )
    code, info = error_of(caught.value)
    # the spec since 1.0.1 (§5.4), the SDK and the TCK: not 1.0.0's UNIMPLEMENTED
    assert code == grpc.StatusCode.FAILED_PRECONDITION and info.reason == "VERSION_NOT_SUPPORTED"
    assert info.metadata["requested"] == "0.3"


async def test_extensions_metadata_echo_and_required(stub: Any) -> None:
    call = stub.SendMessage(
        SendMessageRequest(tenant="ext", message=user("hi")),
        metadata=[("a2a-extensions", f"{TRACE}, urn:nope,{SHOUT}")],
    )
    answer = await call
    assert get_message_text(answer.message) == f"active: {SHOUT},{TRACE}"
    assert dict(await call.initial_metadata())["a2a-extensions"] == f"{SHOUT},{TRACE}"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(SendMessageRequest(tenant="strict", message=user("hi")))
    code, info = error_of(caught.value)
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert info.reason == "EXTENSION_SUPPORT_REQUIRED" and SIGNED in caught.value.details()
    signed = await stub.SendMessage(
        SendMessageRequest(tenant="strict", message=user("hi")),
        metadata=[("a2a-extensions", SIGNED)],
    )
    assert get_message_text(signed.message) == f"active: {SIGNED}"
    stream = stub.SendStreamingMessage(
        SendMessageRequest(tenant="strict", message=user("hi")),
        metadata=[("a2a-extensions", SIGNED)],
    )
    events = [e async for e in stream]
    assert dict(await stream.initial_metadata())["a2a-extensions"] == SIGNED
    assert get_message_text(events[-1].message) == f"active: {SIGNED}"


async def test_push_configs_over_grpc() -> None:
    """Create, get, list and delete a task's webhook through the SDK's own gRPC stub; the
    credentials never come back in clear; an unknown task or config is NOT_FOUND."""
    async with (
        LiveServer(grpc_hub(push_allow_hosts="127.0.0.1")) as live,
        grpc.aio.insecure_channel(grpc_address(live)) as channel,
    ):
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        sent = await stub.SendMessage(
            SendMessageRequest(tenant="pizza", message=user("a pizza please"))
        )
        task_id = sent.task.id
        assert sent.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        hook = "http://127.0.0.1:9/hook"
        config = TaskPushNotificationConfig(tenant="pizza", task_id=task_id, url=hook)
        config.token = "tok-1"
        config.authentication.scheme = "Bearer"
        config.authentication.credentials = "s3cret"
        made = await stub.CreateTaskPushNotificationConfig(config)
        assert made.id and made.task_id == task_id and made.url == hook
        assert made.authentication.scheme == "Bearer"
        assert "s3cret" not in made.SerializeToString().decode("latin-1")
        got = await stub.GetTaskPushNotificationConfig(
            GetTaskPushNotificationConfigRequest(tenant="pizza", task_id=task_id, id=made.id)
        )
        assert got.id == made.id and got.url == hook
        listed = await stub.ListTaskPushNotificationConfigs(
            ListTaskPushNotificationConfigsRequest(tenant="pizza", task_id=task_id)
        )
        assert [c.id for c in listed.configs] == [made.id]
        await stub.DeleteTaskPushNotificationConfig(
            DeleteTaskPushNotificationConfigRequest(tenant="pizza", task_id=task_id, id=made.id)
        )
        listed = await stub.ListTaskPushNotificationConfigs(
            ListTaskPushNotificationConfigsRequest(tenant="pizza", task_id=task_id)
        )
        assert list(listed.configs) == []
        for call in (
            stub.GetTaskPushNotificationConfig(
                GetTaskPushNotificationConfigRequest(tenant="pizza", task_id=task_id, id=made.id)
            ),
            stub.ListTaskPushNotificationConfigs(
                ListTaskPushNotificationConfigsRequest(tenant="pizza", task_id="no-such-task")
            ),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call
            assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        # a loopback webhook without the allow-list is refused, naming the reason
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CreateTaskPushNotificationConfig(
                TaskPushNotificationConfig(tenant="pizza", task_id=task_id, url="http://10.0.0.1/h")
            )
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_extended_card_is_refused_when_none_is_configured(stub: Any) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetExtendedAgentCard(GetExtendedAgentCardRequest(tenant="echo"))
    assert error_of(caught.value)[1].reason == "EXTENDED_AGENT_CARD_NOT_CONFIGURED"


async def test_an_unexpected_error_is_internal_and_logged_once(
    stub: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The binding's catch-all: a bug answers INTERNAL with its ErrorInfo, in a unary call
    and in a stream after its first event, and its traceback is logged once."""
    sent = await stub.SendMessage(SendMessageRequest(tenant="echo", message=user("x")))

    def broken(*args: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(convert, "task_to_pb", broken)
    with (
        caplog.at_level(logging.ERROR, logger="a2a_hub.server"),
        pytest.raises(grpc.aio.AioRpcError) as caught,
    ):
        await stub.GetTask(GetTaskRequest(tenant="echo", id=sent.task.id))
    code, info = error_of(caught.value)
    assert code == grpc.StatusCode.INTERNAL and info.reason == "INTERNAL_ERROR"
    assert "a bug" not in caught.value.details()
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in logged] == ["gRPC GetTask: internal error"]
    assert logged[0].exc_info is not None

    caplog.clear()
    monkeypatch.setattr(convert, "stream_response", broken)
    with (
        caplog.at_level(logging.ERROR, logger="a2a_hub.server"),
        pytest.raises(grpc.aio.AioRpcError) as caught,
    ):
        async for _ in stub.SubscribeToTask(
            SubscribeToTaskRequest(tenant="echo", id=sent.task.id),
            metadata=[("last-event-id", "1")],
        ):
            pass
    code, info = error_of(caught.value)
    assert code == grpc.StatusCode.INTERNAL and info.reason == "INTERNAL_ERROR"
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in logged] == [
        f"gRPC SubscribeToTask of task {sent.task.id}: internal error"
    ]


async def test_subscribe_replays_after_last_event_id(stub: Any) -> None:
    sent = await stub.SendMessage(SendMessageRequest(tenant="echo", message=user("r")))
    events = [
        e
        async for e in stub.SubscribeToTask(
            SubscribeToTaskRequest(tenant="echo", id=sent.task.id),
            metadata=[("last-event-id", "1")],
        )
    ]
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds == ["status_update", "artifact_update", "status_update"]
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in stub.SubscribeToTask(SubscribeToTaskRequest(tenant="echo", id=sent.task.id)):
            pass
    assert error_of(caught.value)[1].reason == "UNSUPPORTED_OPERATION"


async def test_rich_content_crosses_bindings(stub: Any, live: LiveServer) -> None:
    """Parts of every kind and Struct metadata sent over gRPC read back over JSON-RPC."""
    metadata = struct_pb2.Struct()
    metadata.update({"n": 3, "x": 1.5, "deep": {"list": [1, "two", None, True]}})
    data = struct_pb2.Value()
    data.struct_value.update({"k": [1, 2]})
    message = Message(
        message_id="rich",
        role=Role.ROLE_USER,
        parts=[
            Part(text="hello", media_type="text/plain"),
            Part(raw=b"\x00\x01bytes", filename="b.bin", media_type="application/octet-stream"),
            Part(url="https://example.com/f.png", filename="f.png"),
            Part(data=data),
        ],
        metadata=metadata,
        reference_task_ids=["t-0"],
        extensions=[TRACE],
    )
    sent = await stub.SendMessage(SendMessageRequest(tenant="echo", message=message))
    async with httpx.AsyncClient() as http:
        r = await http.post(
            f"{live.url}/a2a/echo",
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": sent.task.id}},
            headers={"A2A-Version": "1.0"},
        )
    first = r.json()["result"]["history"][0]
    assert first["metadata"] == {"n": 3, "x": 1.5, "deep": {"list": [1, "two", None, True]}}
    assert first["referenceTaskIds"] == ["t-0"] and first["extensions"] == [TRACE]
    assert first["parts"] == [
        {"text": "hello", "mediaType": "text/plain"},
        {"raw": "AAFieXRlcw==", "filename": "b.bin", "mediaType": "application/octet-stream"},
        {"url": "https://example.com/f.png", "filename": "f.png"},
        {"data": {"k": [1, 2]}},
    ]
    back = await stub.GetTask(GetTaskRequest(tenant="echo", id=sent.task.id))
    assert back.history[0] == sent.task.history[0]
    assert back.history[0].parts[1].raw == b"\x00\x01bytes"


async def test_a_cancelled_call_leaves_the_task_running(stub: Any) -> None:
    message = Message(message_id="dl", role=Role.ROLE_USER, parts=[Part(text="work")])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(SendMessageRequest(tenant="slow", message=message), timeout=0.5)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    page = await stub.ListTasks(ListTasksRequest(tenant="slow"))
    while not page.tasks:  # the send may still be on its way to its first write
        await asyncio.sleep(0.05)
        page = await stub.ListTasks(ListTasksRequest(tenant="slow"))
    task = page.tasks[0]
    assert task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    canceled = await stub.CancelTask(CancelTaskRequest(tenant="slow", id=task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED


async def test_port_in_use_is_a_clear_error(live: LiveServer) -> None:
    assert live.hub.grpc is not None
    hub = grpc_hub(grpc_port=live.hub.grpc.port)
    with pytest.raises(OSError, match=r"gRPC cannot listen on 127\.0\.0\.1:"):
        await hub.start()


async def test_an_agent_added_later_is_served_over_grpc(live: LiveServer, stub: Any) -> None:
    live.hub.add(AgentSpec(id="late"))
    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{live.url}/a2a/late/.well-known/agent-card.json")).json()
    assert card["supportedInterfaces"][-1] == {
        "url": grpc_address(live),
        "protocolBinding": "GRPC",
        "protocolVersion": "1.0",
        "tenant": "late",
    }
    message = Message(message_id="late-1", role=Role.ROLE_USER, parts=[Part(text="hi")])
    answer = await stub.SendMessage(SendMessageRequest(tenant="late", message=message))
    assert answer.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert answer.task.artifacts[0].parts[0].text == "echo: hi"
    await live.hub.remove("late")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetTask(GetTaskRequest(tenant="late", id=answer.task.id))
    code, info = error_of(caught.value)
    assert code == grpc.StatusCode.NOT_FOUND and info.reason == "AGENT_NOT_FOUND"


# --- API keys ------------------------------------------------------------------------------


async def test_api_keys_over_grpc(tmp_path: Any) -> None:
    """Keys in metadata (x-api-key, authorization: Bearer): UNAUTHENTICATED without or with a
    bad one, PERMISSION_DENIED for another agent's or a read-only key; callers see only
    their own tasks; an open agent needs no key."""
    specs = [
        AgentSpec(id="locked", auth="api-key"),
        AgentSpec(id="other", auth="api-key"),
        AgentSpec(id="open"),
    ]
    config = Settings.from_flat(
        agents=specs,
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
        grpc_port=0,
    )
    async with LiveServer(Hub(config, store=MemoryStore())) as live:
        registry = live.hub.registry
        assert registry is not None
        alice, _ = await registry.create_key(agents=["locked"], principal="alice")
        bob, _ = await registry.create_key(agents=["locked"], principal="bob")
        elsewhere, _ = await registry.create_key(agents=["other"])
        reader, _ = await registry.create_key(agents=["locked"], scopes=["read-all"])

        async with grpc.aio.insecure_channel(grpc_address(live)) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)

            async def send(agent: str, *metadata: tuple[str, str]) -> Any:
                request = SendMessageRequest(tenant=agent, message=user("hi"))
                return await stub.SendMessage(request, metadata=metadata)

            for metadata, code, reason in (
                ((), grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"),
                ((("x-api-key", "a2ah_nope"),), grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"),
                ((("authorization", "Bearer wrong"),), grpc.StatusCode.UNAUTHENTICATED,
                 "UNAUTHENTICATED"),
                ((("x-api-key", elsewhere),), grpc.StatusCode.PERMISSION_DENIED,
                 "PERMISSION_DENIED"),
                ((("x-api-key", reader),), grpc.StatusCode.PERMISSION_DENIED,
                 "PERMISSION_DENIED"),
            ):  # fmt: skip
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await send("locked", *metadata)
                got, info = error_of(refused.value)
                assert (got, info.reason) == (code, reason), metadata

            answer = await send("locked", ("x-api-key", alice))
            task_id = answer.task.id
            assert answer.task.status.state == TaskState.TASK_STATE_COMPLETED
            mine = await stub.GetTask(
                GetTaskRequest(tenant="locked", id=task_id),
                metadata=(("authorization", f"Bearer {alice}"),),
            )
            assert mine.id == task_id
            # bob gets exactly what an unknown id gets
            codes = []
            for some in (task_id, "no-such-task"):
                with pytest.raises(grpc.aio.AioRpcError) as hidden:
                    await stub.GetTask(
                        GetTaskRequest(tenant="locked", id=some), metadata=(("x-api-key", bob),)
                    )
                codes.append((hidden.value.code(), error_of(hidden.value)[1].reason))
            assert codes[0] == codes[1] == (grpc.StatusCode.NOT_FOUND, "TASK_NOT_FOUND")
            listed = await stub.ListTasks(
                ListTasksRequest(tenant="locked"), metadata=(("x-api-key", bob),)
            )
            assert list(listed.tasks) == []
            # the read-all key reads it
            seen = await stub.GetTask(
                GetTaskRequest(tenant="locked", id=task_id), metadata=(("x-api-key", reader),)
            )
            assert seen.id == task_id
            # an open agent: no key needed
            assert (await send("open")).task.status.state == TaskState.TASK_STATE_COMPLETED
