"""Hosting a pydantic-ai ``Agent`` unchanged (``--agent ID=module:agent``).

Each turn runs the agent once (``Agent.run_stream_events``) on the incoming message, with the
conversation of the context as its ``message_history``:

* **history**: the context's messages as the hub keeps them
  (:func:`~a2a_hub.agents.frameworks._turns.earlier_messages`).  Every agent message that
  ends a turn carries that run's own pydantic-ai messages in its metadata
  (``a2a-hub/pydantic-ai``), so the next turn gets them back exactly (system prompt, tool
  calls and returns); other messages count by their text.  The history survives a restart
  on a durable store, and any instance sharing the store continues the conversation.
* **output**: text is streamed as chunks of one ``response`` artifact when the client
  streams, else one artifact; the task completes with the run's output as its message (a
  structured output as a data part).
* **tools**: each function tool call and its result is a ``tool_call`` / ``tool_response``
  data part on a ``working`` status.
* **deferred tools**: when the run ends with ``DeferredToolRequests`` (tools declared with
  ``requires_approval=True``, ``ApprovalRequired``, or external tools, with
  ``DeferredToolRequests`` in the agent's ``output_type``), the task goes
  ``input-required`` with the calls; the next message answers (``yes``/``no``, or a
  ``tool_response`` part per call, see :mod:`._turns`) and the run goes on with
  ``DeferredToolResults``.
* **model**: an agent without a model, or whose model names the hub (``"a2a-hub"``,
  ``"a2a-hub:NAME"`` with ``defer_model_check=True``), uses the hub's LLM endpoint through
  pydantic-ai's OpenAI chat model; any other model is the agent's own.
* **errors**: a run that raises fails the task with the error's text.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from pydantic import TypeAdapter
from pydantic_ai import (
    Agent,
    AgentRunResultEvent,
    DeferredToolRequests,
    DeferredToolResults,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessagesTypeAdapter,
    ModelRetry,
    PartDeltaEvent,
    PartStartEvent,
    ToolApproved,
    ToolDenied,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from a2a_hub.agents.frameworks._turns import (
    Call,
    TextOutput,
    answer_for,
    decision,
    earlier_messages,
    hub_llm,
    hub_model_name,
    native,
    prompt_of,
    question,
    show_call,
    show_result,
)
from a2a_hub.agents.links import HubLinks
from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater, text_of
from a2a_hub.protocol.types import Message, Part, Role
from a2a_hub.settings import AgentSpec, SettingsError

__all__ = ["KEY", "PydanticAIExecutor", "adapt", "model_history"]

log = logging.getLogger(__name__)

#: Metadata key of the pydantic-ai messages of a turn, on the agent message ending it.
KEY = "a2a-hub/pydantic-ai"


def adapt(obj: Any, *, spec: AgentSpec, links: HubLinks) -> AgentExecutor:
    """The executor hosting the pydantic-ai agent ``obj``."""
    if not isinstance(obj, Agent):
        raise SettingsError(
            f"agent {spec.id!r}: {spec.executor} is a pydantic-ai {type(obj).__name__}, not an "
            "Agent instance (name the Agent object, e.g. module:agent)"
        )
    return PydanticAIExecutor(obj, links=links)


def _tools(agent: Agent[Any, Any]) -> dict[str, Any]:
    """The agent's function tools by name (tools of other toolsets, such as MCP servers,
    are only known once they run)."""
    found: dict[str, Any] = {}
    for toolset in agent.toolsets:
        tools = getattr(toolset, "tools", None)
        if isinstance(tools, dict):
            found.update(tools)
    return found


class PydanticAIExecutor(AgentExecutor):
    """A pydantic-ai ``Agent`` as a hub executor (see the module docstring)."""

    def __init__(self, agent: Agent[Any, Any], *, links: HubLinks | None = None) -> None:
        self.agent = agent
        self.links = links or HubLinks()
        self.name = agent.name
        self.description = agent.description if isinstance(agent.description, str) else None
        tools = _tools(agent)
        self.skills = [
            {
                "id": name,
                "name": name,
                "description": getattr(tool, "description", None) or name,
                "tags": ["tool"],
            }
            for name, tool in tools.items()
        ] or None
        #: Tools that always wait for approval: their calls are shown in the question only.
        self._asked = {
            name for name, tool in tools.items() if getattr(tool, "requires_approval", False)
        }
        #: HTTP clients to the hub's LLM endpoint, by (base URL, key).
        self._clients: dict[tuple[str, str], Any] = {}

    def _model(self) -> Any:
        """The hub's model when the agent has none or names the hub, else ``None``."""
        model = self.agent.model
        name = "a2a-hub" if model is None else hub_model_name(model)
        if name is None:
            return None
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        where = hub_llm()
        client = self._clients.get(where)
        if client is None:  # the executor's own, closed with it (not pydantic-ai's shared one)
            from openai import AsyncOpenAI

            client = self._clients[where] = AsyncOpenAI(base_url=where[0], api_key=where[1])
        return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        earlier = await earlier_messages(ctx, self.links)
        waiting = _waiting(ctx)
        results: DeferredToolResults | None = None
        prompt: str | None = None
        if waiting is not None:
            record, calls = waiting
            results = _results(ctx, calls)
            if results is None:
                asked = updater.message(question(calls, again="Please answer the question."))
                asked.metadata = {KEY: record}
                await updater.require_input(asked)
                return
            history = model_history(earlier, resuming=True)
        else:
            history = model_history(earlier)
            prompt = prompt_of(ctx.message)
        out = TextOutput(updater, streaming=ctx.streaming)
        try:
            result = await self._run(prompt, history, results, ctx, updater, out)
        except Exception as exc:
            log.warning("pydantic-ai agent %s failed", ctx.agent_id, exc_info=True)
            await out.finish()
            await updater.fail(f"the pydantic-ai agent failed: {_reason(exc)}")
            return
        new = ModelMessagesTypeAdapter.dump_python(result.new_messages(), mode="json")
        output = result.output
        if isinstance(output, DeferredToolRequests):
            await out.finish()
            pending = _pending(output)
            asked = updater.message(question(pending))
            asked.metadata = {
                KEY: {"messages": new, "pending": [dataclasses.asdict(c) for c in pending]}
            }
            await updater.require_input(asked)
            return
        if isinstance(output, str):
            await out.finish(output)
            parts = [Part(text=output)]
        else:
            await out.finish()
            data = TypeAdapter(type(output)).dump_python(output, mode="json")
            parts = [Part(data=data if isinstance(data, dict) else {"output": data})]
            await updater.artifact(parts, name="output")
        answer = updater.message(parts)
        answer.metadata = {KEY: {"messages": new}}
        await updater.complete(answer)

    async def _run(
        self,
        prompt: str | None,
        history: list[ModelMessage],
        results: DeferredToolResults | None,
        ctx: RequestContext,
        updater: TaskUpdater,
        out: TextOutput,
    ) -> Any:
        """One run of the agent, its events shown as they come; returns its result."""
        result: Any = None
        async with self.agent.run_stream_events(
            prompt,
            message_history=history or None,
            deferred_tool_results=results,
            model=self._model(),
            conversation_id=ctx.context_id,
        ) as events:
            async for event in events:
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    if event.part.content and out.text:
                        await out.add("\n\n")
                    await out.add(event.part.content)
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    await out.add(event.delta.content_delta)
                elif isinstance(event, FunctionToolCallEvent):
                    if event.part.tool_name not in self._asked:
                        await show_call(
                            updater, event.part.tool_call_id, event.part.tool_name,
                            _args(event.part),
                        )  # fmt: skip
                elif isinstance(event, FunctionToolResultEvent):
                    await _show_return(updater, event)
                elif isinstance(event, AgentRunResultEvent):
                    result = event.result
        if result is None:
            raise RuntimeError("the run ended without a result")
        return result


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _args(part: ToolCallPart) -> dict[str, Any]:
    try:
        return part.args_as_dict()
    except ValueError:
        return {"arguments": part.args if isinstance(part.args, str) else str(part.args)}


async def _show_return(updater: TaskUpdater, event: FunctionToolResultEvent) -> None:
    part = getattr(event, "part", None) or getattr(event, "result", None)
    if isinstance(part, ToolReturnPart):
        await show_result(updater, part.tool_call_id, part.tool_name, ok=True, data=part.content)
    elif isinstance(part, RetryPromptPart):
        await show_result(
            updater, part.tool_call_id, part.tool_name or "", ok=False,
            data=part.content if isinstance(part.content, str) else part.model_response(),
        )  # fmt: skip


def _pending(requests: DeferredToolRequests) -> list[Call]:
    calls = [Call(p.tool_call_id, p.tool_name, _args(p)) for p in requests.approvals]
    calls += [Call(p.tool_call_id, p.tool_name, _args(p), external=True) for p in requests.calls]
    return calls


def _waiting(ctx: RequestContext) -> tuple[dict[str, Any], list[Call]] | None:
    """The run this turn continues (the task waits on deferred tool calls): the record on
    the question and its calls; ``None`` for a fresh turn."""
    asked = ctx.task.status.message if ctx.task is not None else None
    record = native(asked, KEY) if asked is not None else None
    if record is None or not record.get("pending"):
        return None
    try:
        calls = [Call(**c) for c in record["pending"]]
    except TypeError:
        return None
    return record, calls


def _results(ctx: RequestContext, calls: list[Call]) -> DeferredToolResults | None:
    """The answers of the incoming message to ``calls``; ``None`` when one is missing."""
    said = decision(ctx.text)
    results = DeferredToolResults()
    for call in calls:
        answer = answer_for(ctx, call, said)
        if answer is None:
            return None
        ok, data = answer
        if call.external:
            results.calls[call.call_id] = data if ok else ModelRetry(str(data))
        else:
            results.approvals[call.call_id] = (
                ToolApproved() if ok else ToolDenied(f"The user denied this call: {data}")
            )
    return results


def model_history(messages: list[Message], *, resuming: bool = False) -> list[ModelMessage]:
    """The pydantic-ai view of a context's messages (oldest first).

    An agent message carrying its turn's pydantic-ai messages (:data:`KEY`) stands for the
    whole turn (the user's words of that turn are in it); others count by their text: a
    user message as a prompt, an agent message as a model response.  Tool calls left
    unanswered (a question canceled, a turn cut short) are dropped, except the last
    response's when ``resuming`` (the calls the incoming message answers).
    """
    out: list[ModelMessage] = []
    pending: list[str] = []
    for message in messages:
        if message.role is Role.USER:
            said = prompt_of(message)
            if said:
                pending.append(said)
            continue
        record = native(message, KEY)
        if record is not None and isinstance(record.get("messages"), list):
            try:
                out.extend(ModelMessagesTypeAdapter.validate_python(record["messages"]))
            except ValueError:
                log.warning("unreadable pydantic-ai messages on message %s", message.message_id)
            else:
                pending.clear()
                continue
        text = text_of(message.parts)
        if text:
            if pending:
                out.append(ModelRequest(parts=[UserPromptPart(p) for p in pending]))
                pending.clear()
            out.append(ModelResponse(parts=[TextPart(text)]))
    if pending:
        out.append(ModelRequest(parts=[UserPromptPart(p) for p in pending]))
    return _answered(out, keep_last=resuming)


def _answered(history: list[ModelMessage], *, keep_last: bool) -> list[ModelMessage]:
    """``history`` without tool calls that no following request answers, starting at a
    request (a history cut short may begin with a response)."""
    while history and not isinstance(history[0], ModelRequest):
        history = history[1:]
    kept: list[ModelMessage] = []
    for i, message in enumerate(history):
        if isinstance(message, ModelResponse):
            calls = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
            last = i == len(history) - 1
            if calls and not (last and keep_last):
                following = history[i + 1] if not last else None
                answered = (
                    {
                        p.tool_call_id
                        for p in following.parts
                        if isinstance(p, ToolReturnPart | RetryPromptPart)
                    }
                    if isinstance(following, ModelRequest)
                    else set()
                )
                if not calls <= answered:
                    parts = [
                        p
                        for p in message.parts
                        if not isinstance(p, ToolCallPart) or p.tool_call_id in answered
                    ]
                    if not parts:
                        continue
                    message = dataclasses.replace(message, parts=parts)
        kept.append(message)
    return kept
