"""AG-UI endpoint: ``POST /a2a/{agent_id}/ag-ui`` (RunAgentInput in, AG-UI events as SSE out).

So that existing AG-UI front ends can drive any hosted agent.  A run is one turn
of an A2A task in the context ``threadId``:

* the last ``user`` message starts a task (or continues the thread's task that
  waits for input); a ``tool`` message, or a ``resume`` entry whose
  ``interruptId`` is a pending tool call id, answers a client-side tool call
  (``updater.call_client_tool``) and continues its task;
* ``RUN_STARTED``; artifact chunks as ``TEXT_MESSAGE_START`` / ``CONTENT`` /
  ``END`` (one message per artifact); a final status message as one more text
  message; status data parts ``tool_call`` / ``tool_response`` as
  ``TOOL_CALL_START`` / ``ARGS`` / ``END`` and ``TOOL_CALL_RESULT``; each
  ``working`` status as a ``STATE_SNAPSHOT`` (``taskId``, ``status``,
  ``progress``, ``message``);
* the end: ``RUN_FINISHED`` (outcome ``success``; ``interrupt`` for
  input-required, one interrupt per pending tool call or one for the input
  asked, with the task id in its metadata; ``cancelled`` for a canceled task),
  or ``RUN_ERROR`` for a failed or rejected task and for a protocol error.

The wire shapes are msgspec structs here (camelCase, like AG-UI's JSON); the tests
validate them against the ``ag-ui-protocol`` package's models.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from a2a_hub.engine.executor import PROGRESS_KEY, text_of
from a2a_hub.engine.state import new_id
from a2a_hub.engine.stream import TaskStream
from a2a_hub.protocol import fieldnames
from a2a_hub.protocol.errors import InvalidParamsError, JSONParseError
from a2a_hub.protocol.types import (
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a_hub.server.caller import caller_of
from a2a_hub.server.errors import protocol_endpoint, protocol_error
from a2a_hub.server.http import agent_of, hub_of, read_body
from a2a_hub.server.hub import HostedAgent
from a2a_hub.server.sse import SSE_HEADERS
from a2a_hub.server.ws_events import TOOL_CALL_KIND, TOOL_RESPONSE_KIND, tool_parts
from a2a_hub.stores.base import TaskEvent

__all__ = ["RunAgentInput", "ag_ui_run"]


class _In(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    pass


class InputMessage(_In):
    """One message of the thread (only the fields a run needs)."""

    id: str
    role: str
    content: Any = None
    tool_call_id: str | None = None
    error: str | None = None


class ResumeEntry(_In):
    """The answer to an interrupt."""

    interrupt_id: str
    status: str = "resolved"
    payload: Any = None


class RunAgentInput(_In):
    """AG-UI's ``RunAgentInput`` (tools, context and state are accepted and not used)."""

    thread_id: str
    run_id: str
    messages: list[InputMessage] = msgspec.field(default_factory=list)
    state: Any = None
    tools: list[Any] = msgspec.field(default_factory=list)
    context: list[Any] = msgspec.field(default_factory=list)
    forwarded_props: Any = None
    resume: list[ResumeEntry] | None = None


class _Ev(msgspec.Struct, rename="camel", omit_defaults=True, tag_field="type", kw_only=True):
    timestamp: int = msgspec.field(default_factory=lambda: int(time.time() * 1000))


class RunStarted(_Ev, tag="RUN_STARTED", kw_only=True):
    thread_id: str
    run_id: str


class RunFinished(_Ev, tag="RUN_FINISHED", kw_only=True):
    thread_id: str
    run_id: str
    result: Any = None
    outcome: dict[str, Any] | None = None


class RunError(_Ev, tag="RUN_ERROR", kw_only=True):
    message: str
    code: str | None = None


class TextMessageStart(_Ev, tag="TEXT_MESSAGE_START", kw_only=True):
    message_id: str
    role: str = "assistant"


class TextMessageContent(_Ev, tag="TEXT_MESSAGE_CONTENT", kw_only=True):
    message_id: str
    delta: str


class TextMessageEnd(_Ev, tag="TEXT_MESSAGE_END", kw_only=True):
    message_id: str


class ToolCallStart(_Ev, tag="TOOL_CALL_START", kw_only=True):
    tool_call_id: str
    tool_call_name: str


class ToolCallArgs(_Ev, tag="TOOL_CALL_ARGS", kw_only=True):
    tool_call_id: str
    delta: str


class ToolCallEnd(_Ev, tag="TOOL_CALL_END", kw_only=True):
    tool_call_id: str


class ToolCallResult(_Ev, tag="TOOL_CALL_RESULT", kw_only=True):
    message_id: str
    tool_call_id: str
    content: str
    role: str = "tool"


class StateSnapshot(_Ev, tag="STATE_SNAPSHOT", kw_only=True):
    snapshot: Any


AgUiEvent = (
    RunStarted
    | RunFinished
    | RunError
    | TextMessageStart
    | TextMessageContent
    | TextMessageEnd
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolCallResult
    | StateSnapshot
)

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder(RunAgentInput)
_any_dec = msgspec.json.Decoder()


def _sse(event: AgUiEvent) -> bytes:
    return b"data: " + _enc.encode(event) + b"\n\n"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts: their text
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


@protocol_endpoint
async def ag_ui_run(request: Request) -> Response:
    """``POST …/ag-ui``: one run of the agent, streamed as AG-UI events."""
    hub = hub_of(request)
    agent = agent_of(request, hub)
    body = await read_body(request, hub.settings.server.max_body_bytes)
    try:
        run = fieldnames.decode_with(_dec, body)
    except msgspec.DecodeError as exc:
        if isinstance(exc, msgspec.ValidationError):
            raise InvalidParamsError(f"RunAgentInput: {exc}") from None
        raise JSONParseError(f"body is not JSON: {exc}") from None
    caller = caller_of(request)
    message = await _a2a_message(agent, run, caller)
    stream = await agent.engine.send_stream(SendMessageRequest(message=message), caller=caller)
    return StreamingResponse(
        _events(run, stream), media_type="text/event-stream", headers=SSE_HEADERS
    )


async def _a2a_message(agent: HostedAgent, run: RunAgentInput, caller: Any) -> Message:
    """The A2A message this run sends: a user turn, or the answer to a tool call."""
    answers: dict[str, Any] = {}
    for entry in run.resume or []:
        answers[entry.interrupt_id] = (
            {"status": "success", "data": entry.payload}
            if entry.status == "resolved"
            else {"status": "error", "error_message": "cancelled by the user"}
        )
    last = run.messages[-1] if run.messages else None
    if last is not None and last.role == "tool" and last.tool_call_id:
        content = last.content
        if isinstance(content, str):
            with contextlib.suppress(msgspec.DecodeError):
                content = fieldnames.decode_with(_any_dec, content.encode())
        answers[last.tool_call_id] = (
            {"status": "error", "error_message": last.error}
            if last.error
            else {"status": "success", "data": content}
        )
    waiting = await agent.engine.list_tasks(
        ListTasksRequest(context_id=run.thread_id, status=TaskState.INPUT_REQUIRED, page_size=20),
        caller=caller,
    )
    for task in waiting.tasks:
        for data in tool_parts(task.status.message):
            call_id = data.get("tool_call_id")
            if data.get("kind") == TOOL_CALL_KIND and call_id in answers:
                part = Part(
                    data={
                        "kind": TOOL_RESPONSE_KIND,
                        "tool_call_id": call_id,
                        "result": answers[call_id],
                    }
                )
                return Message(
                    message_id=new_id(),
                    role=Role.USER,
                    parts=[part],
                    context_id=run.thread_id,
                    task_id=task.id,
                )
        if task.id in answers:  # an input-required interrupt answered through resume
            payload = answers[task.id].get("data")
            text = payload if isinstance(payload, str) else msgspec.json.encode(payload).decode()
            return Message(
                message_id=new_id(),
                role=Role.USER,
                parts=[Part(text=text)],
                context_id=run.thread_id,
                task_id=task.id,
            )
    if answers:
        raise InvalidParamsError(
            f"no task of thread {run.thread_id!r} waits for {', '.join(sorted(answers))}"
        )
    if last is None or last.role != "user":
        raise InvalidParamsError("RunAgentInput.messages must end with a user message")
    text = _text(last.content)
    if not text:
        raise InvalidParamsError("the last user message has no text")
    task_id = waiting.tasks[0].id if waiting.tasks else None
    return Message(
        message_id=last.id,
        role=Role.USER,
        parts=[Part(text=text)],
        context_id=run.thread_id,
        task_id=task_id,
    )


async def _events(run: RunAgentInput, stream: TaskStream) -> AsyncIterator[bytes]:
    yield _sse(RunStarted(thread_id=run.thread_id, run_id=run.run_id))
    mapper = _Mapper(run)
    first = stream.after is None  # a continued task: its snapshot is the state before this run
    try:
        async for event in stream:
            if first:
                first = False
                continue
            for out in mapper.map(event):
                yield _sse(out)
            if mapper.finished:
                return
    except Exception as exc:
        err = protocol_error(exc, f"AG-UI run of task {stream.task_id}")
        for out in mapper.close_messages():
            yield _sse(out)
        yield _sse(RunError(message=err.message, code=err.ws_code))
        return
    finally:
        stream.close()
    for out in mapper.close_messages():
        yield _sse(out)
    yield _sse(RunFinished(thread_id=run.thread_id, run_id=run.run_id, outcome={"type": "success"}))


class _Mapper:
    """A2A task events -> AG-UI events, for one run."""

    def __init__(self, run: RunAgentInput) -> None:
        self.run = run
        self.open: dict[str, str] = {}  # artifact id -> AG-UI message id
        self.finished = False
        self.task_id = ""

    def close_messages(self) -> list[AgUiEvent]:
        out: list[AgUiEvent] = [TextMessageEnd(message_id=m) for m in self.open.values()]
        self.open.clear()
        return out

    def _text_message(self, text: str) -> list[AgUiEvent]:
        mid = new_id()
        return [
            TextMessageStart(message_id=mid),
            TextMessageContent(message_id=mid, delta=text),
            TextMessageEnd(message_id=mid),
        ]

    def map(self, event: TaskEvent) -> list[AgUiEvent]:
        payload = event.event
        run = self.run
        out: list[AgUiEvent] = []
        if payload.message is not None:
            if payload.message.role is Role.USER:
                return []
            text = text_of(payload.message.parts)
            if text:
                out += self._text_message(text)
            self.finished = True
            out.append(
                RunFinished(thread_id=run.thread_id, run_id=run.run_id, outcome={"type": "success"})
            )
            return out
        if payload.task is not None:
            self.task_id = payload.task.id
            return [
                StateSnapshot(
                    snapshot={"taskId": payload.task.id, "status": payload.task.status.state.label}
                )
            ]
        if payload.artifact_update is not None:
            update = payload.artifact_update
            art = update.artifact
            mid = self.open.get(art.artifact_id)
            if mid is None or not update.append:
                if mid is not None:
                    out.append(TextMessageEnd(message_id=mid))
                mid = self.open[art.artifact_id] = new_id()
                out.append(TextMessageStart(message_id=mid))
            chunk = text_of(art.parts)
            if chunk:
                out.append(TextMessageContent(message_id=mid, delta=chunk))
            if update.last_chunk:
                out.append(TextMessageEnd(message_id=mid))
                del self.open[art.artifact_id]
            return out
        if payload.status_update is None:
            return out
        status = payload.status_update.status
        state = status.state
        message = status.message
        text = text_of(message.parts) if message is not None else ""
        calls: list[dict[str, Any]] = []
        for data in tool_parts(message):
            call_id = str(data.get("tool_call_id") or new_id())
            if data.get("kind") == TOOL_CALL_KIND:
                calls.append(data)
                out += [
                    ToolCallStart(tool_call_id=call_id, tool_call_name=str(data.get("tool_id"))),
                    ToolCallArgs(
                        tool_call_id=call_id, delta=_enc.encode(data.get("params") or {}).decode()
                    ),
                    ToolCallEnd(tool_call_id=call_id),
                ]
            else:
                out.append(
                    ToolCallResult(
                        message_id=new_id(),
                        tool_call_id=call_id,
                        content=_enc.encode(data.get("result")).decode(),
                    )
                )
        if state is TaskState.WORKING or state is TaskState.SUBMITTED:
            meta = message.metadata if message is not None else None
            snapshot: dict[str, Any] = {
                "taskId": payload.status_update.task_id,
                "status": state.label,
            }
            if meta and isinstance(meta.get(PROGRESS_KEY), int | float):
                snapshot["progress"] = meta[PROGRESS_KEY]
            if text:
                snapshot["message"] = text
            out.append(StateSnapshot(snapshot=snapshot))
            return out
        out += self.close_messages()
        self.finished = True
        task_id = payload.status_update.task_id
        if state is TaskState.COMPLETED:
            if text:
                out += self._text_message(text)
            out.append(
                RunFinished(
                    thread_id=run.thread_id,
                    run_id=run.run_id,
                    result={"taskId": task_id},
                    outcome={"type": "success"},
                )
            )
        elif state.interrupted:
            if calls:
                interrupts = [
                    {
                        "id": str(c.get("tool_call_id")),
                        "reason": "tool_call",
                        "toolCallId": str(c.get("tool_call_id")),
                        "message": text or None,
                        "metadata": {"taskId": task_id, "toolId": c.get("tool_id")},
                    }
                    for c in calls
                ]
            else:
                interrupts = [
                    {
                        "id": task_id,
                        "reason": state.label,
                        "message": text or None,
                        "metadata": {"taskId": task_id},
                    }
                ]
            for item in interrupts:
                if item["message"] is None:
                    del item["message"]
            out.append(
                RunFinished(
                    thread_id=run.thread_id,
                    run_id=run.run_id,
                    result={"taskId": task_id},
                    outcome={"type": "interrupt", "interrupts": interrupts},
                )
            )
        elif state is TaskState.CANCELED:
            out.append(
                RunFinished(
                    thread_id=run.thread_id,
                    run_id=run.run_id,
                    result={"taskId": task_id},
                    outcome={"type": "cancelled"},
                )
            )
        else:
            out.append(RunError(message=text or f"task {state.label}", code=state.label))
        return out
