"""Hosting an OpenAI Agents SDK ``Agent`` unchanged (``--agent ID=module:agent``).

Each turn runs the agent once (``Runner.run_streamed``) on the context's conversation, the
incoming message last:

* **history**: the context's messages as the hub keeps them
  (:func:`~a2a_hub.agents.frameworks._turns.earlier_messages`).  Every agent message that
  ends a turn carries that run's own items (``new_items`` as input items: tool calls,
  their outputs, the answer) in its metadata (``a2a-hub/openai-agents``), so the next turn
  gets them back exactly; user messages and other agent messages count by their text.  The
  history survives a restart on a durable store and is shared by the instances of a store.
* **output**: text deltas are streamed as chunks of one ``response`` artifact when the
  client streams, else one artifact; the task completes with the final output as its
  message (a structured output as a data part).
* **tools**: each tool call and its output is a ``tool_call`` / ``tool_response`` data part
  on a ``working`` status.
* **approvals**: tools declared with ``needs_approval`` stop the run with interruptions;
  the task goes ``input-required`` with the calls and the run's ``RunState`` (its JSON, on
  the question's metadata, so any instance can resume it); the next message answers
  (``yes``/``no``, or a ``tool_response`` part per call, see :mod:`._turns`), the state is
  approved or rejected accordingly and the run resumes from it.
* **model**: the run's model provider maps an agent without a model, or with a model named
  ``"a2a-hub"`` / ``"a2a-hub/NAME"``, to the hub's LLM endpoint (OpenAI chat completions);
  any other model name goes to the SDK's own provider.  Tracing to OpenAI is off (the
  hub has its own).
* **errors**: a run that raises fails the task with the error's text.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from agents import (
    Agent,
    Model,
    ModelProvider,
    MultiProvider,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    RunState,
)
from openai.types.responses import ResponseTextDeltaEvent
from pydantic import TypeAdapter

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

__all__ = ["KEY", "HubModelProvider", "OpenAIAgentsExecutor", "adapt", "input_items"]

log = logging.getLogger(__name__)

#: Metadata key of the run's items (or, on a question, its RunState) on the agent message.
KEY = "a2a-hub/openai-agents"


def adapt(obj: Any, *, spec: AgentSpec, links: HubLinks) -> AgentExecutor:
    """The executor hosting the OpenAI Agents SDK agent ``obj``."""
    if not isinstance(obj, Agent):
        raise SettingsError(
            f"agent {spec.id!r}: {spec.executor} is an OpenAI Agents SDK {type(obj).__name__}, "
            "not an Agent instance (name the Agent object, e.g. module:agent)"
        )
    return OpenAIAgentsExecutor(obj, links=links)


class HubModelProvider(ModelProvider):
    """Models of a run: the hub's endpoint for no model or a hub model name (see
    :func:`~a2a_hub.agents.frameworks._turns.hub_model_name`), else the SDK's provider."""

    def __init__(self) -> None:
        self._others: MultiProvider | None = None
        self._clients: dict[tuple[str, str], Any] = {}

    def get_model(self, model_name: str | None) -> Model:
        name = "a2a-hub" if model_name is None else hub_model_name(model_name)
        if name is None:
            if self._others is None:
                self._others = MultiProvider()
            return self._others.get_model(model_name)
        from openai import AsyncOpenAI

        where = hub_llm()
        client = self._clients.get(where)
        if client is None:
            client = self._clients[where] = AsyncOpenAI(base_url=where[0], api_key=where[1])
        return OpenAIChatCompletionsModel(model=name, openai_client=client)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


class OpenAIAgentsExecutor(AgentExecutor):
    """An OpenAI Agents SDK ``Agent`` as a hub executor (see the module docstring)."""

    def __init__(self, agent: Agent[Any], *, links: HubLinks | None = None) -> None:
        self.agent = agent
        self.links = links or HubLinks()
        self.name = agent.name
        self.description = agent.handoff_description
        self.skills = [
            {
                "id": tool.name,
                "name": tool.name,
                "description": getattr(tool, "description", None) or tool.name,
                "tags": ["tool"],
            }
            for tool in agent.tools
            if isinstance(getattr(tool, "name", None), str)
        ] or None
        #: Tools that always wait for approval: their calls are shown in the question only.
        self._asked = {t.name for t in agent.tools if getattr(t, "needs_approval", False) is True}
        self.provider = HubModelProvider()

    async def close(self) -> None:
        await self.provider.aclose()

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        waiting = _waiting(ctx)
        run_input: Any
        if waiting is not None:
            record, calls = waiting
            state = await RunState.from_json(self.agent, record["state"])
            if not _answer(ctx, calls, state):
                asked = updater.message(question(calls, again="Please answer the question."))
                asked.metadata = {KEY: record}
                await updater.require_input(asked)
                return
            run_input = state
        else:
            earlier = await earlier_messages(ctx, self.links)
            prompt = {"role": "user", "content": prompt_of(ctx.message)}
            run_input = [*input_items(earlier), prompt]
        out = TextOutput(updater, streaming=ctx.streaming)
        try:
            result = await self._run(run_input, updater, out)
        except Exception as exc:
            log.warning("OpenAI Agents SDK agent %s failed", ctx.agent_id, exc_info=True)
            await out.finish()
            await updater.fail(f"the OpenAI Agents SDK agent failed: {_reason(exc)}")
            return
        if result.interruptions:
            await out.finish()
            pending = [_call(item) for item in result.interruptions]
            asked = updater.message(question(pending))
            asked.metadata = {
                KEY: {
                    "state": result.to_state().to_json(),
                    "pending": [
                        {"call_id": c.call_id, "tool": c.tool, "params": c.params} for c in pending
                    ],
                }
            }
            await updater.require_input(asked)
            return
        output = result.final_output
        if isinstance(output, str):
            await out.finish(output)
            parts = [Part(text=output)]
        else:
            await out.finish()
            data = TypeAdapter(type(output)).dump_python(output, mode="json")
            parts = [Part(data=data if isinstance(data, dict) else {"output": data})]
            await updater.artifact(parts, name="output")
        items = [i.to_input_item() for i in result.new_items if i.type != "tool_approval_item"]
        answer = updater.message(parts)
        answer.metadata = {KEY: {"items": json.loads(json.dumps(items, default=str))}}
        await updater.complete(answer)

    async def _run(self, run_input: Any, updater: TaskUpdater, out: TextOutput) -> Any:
        """One run, its events shown as they come; returns the finished result."""
        config = RunConfig(model_provider=self.provider, tracing_disabled=True)
        result = Runner.run_streamed(self.agent, run_input, run_config=config)
        names: dict[str, str] = {}
        gap = False
        try:
            async for event in result.stream_events():
                if event.type == "raw_response_event":
                    if isinstance(event.data, ResponseTextDeltaEvent):
                        if gap and out.text:
                            await out.add("\n\n")
                        gap = False
                        await out.add(event.data.delta)
                elif event.type == "run_item_stream_event":
                    if event.name == "tool_called":
                        gap = True
                        call_id, tool, params = _called(event.item.raw_item)
                        names[call_id] = tool
                        if tool not in self._asked:
                            await show_call(updater, call_id, tool, params)
                    elif event.name == "tool_output":
                        call_id = _field(event.item.raw_item, "call_id") or ""
                        await show_result(
                            updater, call_id, names.get(call_id, ""), ok=True,
                            data=event.item.output,
                        )  # fmt: skip
        except asyncio.CancelledError:
            result.cancel()
            raise
        return result


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _field(raw: Any, name: str) -> Any:
    return raw.get(name) if isinstance(raw, dict) else getattr(raw, name, None)


def _called(raw: Any) -> tuple[str, str, dict[str, Any]]:
    """A tool call item's id, tool name and arguments."""
    call_id = str(_field(raw, "call_id") or _field(raw, "id") or "")
    tool = str(_field(raw, "name") or _field(raw, "type") or "tool")
    arguments = _field(raw, "arguments")
    params: dict[str, Any]
    try:
        loaded = json.loads(arguments) if isinstance(arguments, str) and arguments else {}
        params = loaded if isinstance(loaded, dict) else {"arguments": loaded}
    except ValueError:
        params = {"arguments": arguments}
    return call_id, tool, params


def _call(item: Any) -> Call:
    call_id, tool, params = _called(item.raw_item)
    return Call(call_id, getattr(item, "tool_name", None) or tool, params)


def _waiting(ctx: RequestContext) -> tuple[dict[str, Any], list[Call]] | None:
    """The run this turn resumes (the task waits for approvals): the record on the
    question and its calls; ``None`` for a fresh turn."""
    asked = ctx.task.status.message if ctx.task is not None else None
    record = native(asked, KEY) if asked is not None else None
    if record is None or "state" not in record or not record.get("pending"):
        return None
    try:
        calls = [Call(**c) for c in record["pending"]]
    except TypeError:
        return None
    return record, calls


def _answer(ctx: RequestContext, calls: list[Call], state: RunState[Any, Any]) -> bool:
    """Approve or reject each interruption of ``state`` as the incoming message says;
    False (nothing changed) when it does not answer every call."""
    said = decision(ctx.text)
    answers = [answer_for(ctx, call, said) for call in calls]
    if any(a is None for a in answers):
        return False
    items = {_called(i.raw_item)[0]: i for i in state.get_interruptions()}
    for call, answer in zip(calls, answers, strict=True):
        item = items.get(call.call_id)
        if item is None or answer is None:
            continue
        ok, why = answer
        if ok:
            state.approve(item)
        else:
            state.reject(item, rejection_message=f"The user denied this call: {why}")
    return True


def input_items(messages: list[Message]) -> list[Any]:
    """The SDK's input items for a context's messages (oldest first).

    An agent message carrying its run's items (:data:`KEY`) gives them; other messages count
    by their text.  The answers to a question (the user's messages right after an agent
    message holding a RunState) are left out: the resumed run's items stand for them.  Tool
    calls without their output (a turn cut short) are dropped.
    """
    items: list[Any] = []
    answering = False
    for message in messages:
        text = text_of(message.parts)
        if message.role is Role.USER:
            said = prompt_of(message)
            if said and not answering:
                items.append({"role": "user", "content": said})
            continue
        record = native(message, KEY)
        if record is not None and "state" in record:
            answering = True
            continue
        if record is not None and isinstance(record.get("items"), list):
            items.extend(record["items"])
            answering = False
        elif text:
            items.append({"role": "assistant", "content": text})
            answering = False
    answered = {_field(i, "call_id") for i in items if _field(i, "type") == "function_call_output"}
    return [
        i for i in items if _field(i, "type") != "function_call" or _field(i, "call_id") in answered
    ]
