"""The ``llm`` agent kind: an instruction and a model, holding a conversation.

Every turn sends the instruction (as the system message), the messages of the
earlier tasks of the same context and of this task, and the new message to the
provider.  When the hub keeps conversations (it has a registry), the earlier messages
come from the conversation store, which holds every message of the context in order
(immediate replies too, and turns whose tasks were deleted since), merged with the
tasks' messages not recorded yet; only the conversation of the task's owner is used.
When the client streams, the reply is streamed as chunks of one
artifact; either way the task completes with the whole reply as its message, so
it is in the history of the next turn.  A provider that keeps failing (timeouts,
429, 5xx, after its retries) fails the task with the provider's message.

**Tools.**  With ``mcp_servers`` (names of ``[[mcp_servers]]`` in hub.toml, or inline
``http(s)://…/mcp`` / ``stdio:command args``), optionally narrowed by ``tools`` (tool
names), the agent offers those tools to the model and runs the loop: the model answers or
asks for tool calls; each call and its result is shown as a data part on a ``working``
status (see :mod:`a2a_hub.tools.base`) and fed back to the model; this repeats until the
model answers, or fails the task after ``max_steps`` model calls.  Each tool call is
limited to ``tool_timeout`` seconds (default: the server's ``timeout``).  ``exit_tool``
adds the built-in ``exit`` tool: calling it completes the task with the data part
``{"done": true}``, which ends a ``loop`` composite.  Only providers that can call tools
take tools (``openai`` with a model that supports them, ``scripted``); the ``embedded``
model cannot, and an agent configured so is refused with the reason.

**Client-side tools.**  ``client_tools`` (names, or tables ``{name, description,
parameters}``) are tools the *client* runs (the WebSocket's ``tool_call`` /
``tool_response``, or any binding answering the data part).  When the model calls one,
the agent asks the client through ``updater.call_client_tool`` (the task goes
``input-required`` with the call) and keeps the loop's state (the model conversation, the
calls still to run, the step) in that status message's metadata (``a2a-hub/llm-loop``);
the client's ``tool_response`` continues the task and the loop goes on where it stopped.
"""

from __future__ import annotations

import inspect
import logging
import time
from typing import Any

import msgspec

from a2a_hub import metrics
from a2a_hub.agents._options import NAMED, named_options
from a2a_hub.agents.links import HubLinks
from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater, text_of
from a2a_hub.llm import ChatMessage, LazyProvider, LLMError, LLMProvider, provider_class
from a2a_hub.llm.base import ToolCall
from a2a_hub.protocol.errors import A2AError
from a2a_hub.protocol.types import Message, Part, Role
from a2a_hub.settings import MCPServerSpec
from a2a_hub.tools.base import (
    EXIT_TOOL,
    ExitTool,
    Tool,
    ToolResult,
    tool_call_data,
    tool_response_data,
)

__all__ = [
    "LOOP_KEY",
    "ClientTool",
    "LLMExecutor",
    "chat_messages",
    "check_provider_options",
    "listed",
]

log = logging.getLogger("a2a_hub.agents.llm")

#: Status-message metadata key of a tool loop paused on a client-side tool.
LOOP_KEY = "a2a-hub/llm-loop"


class ClientTool(Tool):
    """A tool the client runs: offered to the model, asked of the client when called."""

    def __init__(
        self, name: str, description: str = "", parameters: dict[str, Any] | None = None
    ) -> None:
        self.name = name
        self.description = (
            description or "Runs on the user's side (the client) and returns its result."
        )
        self.parameters = parameters or {"type": "object", "properties": {}}

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(ok=False, text=f"{self.name} runs on the client, not here")


def _client_tool(entry: Any) -> ClientTool:
    if isinstance(entry, str) and entry.strip():
        return ClientTool(entry.strip())
    if isinstance(entry, dict) and isinstance(entry.get("name"), str):
        unknown = set(entry) - {"name", "description", "parameters"}
        if unknown:
            raise ValueError(
                f"client_tools entry {entry['name']!r}: unknown key(s) "
                f"{', '.join(sorted(unknown))} (name, description, parameters)"
            )
        return ClientTool(entry["name"], entry.get("description", ""), entry.get("parameters"))
    raise ValueError(f"client_tools: {entry!r} is neither a tool name nor a table with a 'name'")


class _Loop(msgspec.Struct):
    """A tool loop paused on a client-side tool: what it needs to go on."""

    messages: list[ChatMessage]
    #: The model's calls of this step still to run (the first is the client's).
    calls: list[ToolCall]
    step: int
    exits: list[str] = msgspec.field(default_factory=list)
    text: str = ""


def check_provider_options(
    cls: type, last: type, provider: str | None, options: dict[str, Any]
) -> None:
    """Refuse ``options`` the provider's constructor does not take (ValueError listing the
    valid ones: the named parameters of ``cls`` down to ``last``, then the provider's)."""
    kind = provider_class(provider)  # ValueError naming the known providers
    takes = [
        name
        for name, param in inspect.signature(kind).parameters.items()
        if param.kind in NAMED and name not in ("model", "base_url", "api_key")
    ]
    unknown = sorted(set(options) - set(takes))
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        raise ValueError(
            f"unknown option{plural} {', '.join(map(repr, unknown))} for {cls.__name__}; valid "
            f"options: {', '.join(named_options(cls, last))}; and for LLM provider "
            f"{kind.name}: {', '.join(takes) or 'none'}"
        )


def listed(value: Any) -> list[Any]:
    """An option that is a list, or a comma-separated string (as ``--agent`` flags give)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def chat_messages(
    instruction: str, history: list[Message], *, limit: int = 20
) -> list[ChatMessage]:
    """The chat-completions view of a conversation: system, then the last ``limit`` turns."""
    messages = [ChatMessage(role="system", content=instruction)] if instruction else []
    for message in history[-limit:]:
        text = text_of(message.parts)
        if text:
            role = "assistant" if message.role is Role.AGENT else "user"
            messages.append(ChatMessage(role=role, content=text))
    return messages


class LLMExecutor(AgentExecutor):
    """An agent that answers with a language model (see the module docstring)."""

    name = "LLM agent"
    description = "Answers with a language model, remembering the conversation."
    skills = [
        {
            "id": "chat",
            "name": "Chat",
            "description": "Holds a conversation following its instruction.",
            "tags": ["llm", "chat"],
        }
    ]

    def __init__(
        self,
        instruction: str = "You are a helpful assistant. Answer briefly.",
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int | str = 200,
        temperature: float | str = 0.7,
        history_turns: int | str = 20,
        mcp_servers: Any = None,
        tools: Any = None,
        tool_timeout: float | str | None = None,
        max_steps: int | str = 5,
        exit_tool: bool | str = False,
        client_tools: Any = None,
        links: HubLinks | None = None,
        **options: Any,
    ) -> None:
        self.instruction = instruction
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.history_turns = int(history_turns)
        check_provider_options(type(self), LLMExecutor, provider, options)
        self.max_steps = int(max_steps)
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.tool_timeout = None if tool_timeout in (None, "") else float(tool_timeout)
        self.exit_tool = _flag(exit_tool)
        self.tool_names = {str(t) for t in listed(tools)} or None
        self.links = links or HubLinks()
        self.servers = [self._server(ref, self.links) for ref in listed(mcp_servers)]
        self.client_tools = {t.name: t for t in map(_client_tool, listed(client_tools))}
        if provider_class(provider).name == "embedded":
            from a2a_hub.llm.embedded import NO_TOOLS, check_installed

            if self.uses_tools:
                raise ValueError(NO_TOOLS)
            try:  # at start-up, not at the first message
                check_installed()
            except LLMError as exc:
                raise ValueError(str(exc)) from None
        if self.servers:
            import importlib.util

            from a2a_hub.tools.mcp import INSTALL_HINT

            if importlib.util.find_spec("mcp") is None:
                raise ValueError(f"MCP tools need the mcp package: {INSTALL_HINT}")
        self._tools: list[Tool] | None = None
        self._llm = LazyProvider(
            provider, model=model, base_url=base_url, api_key=api_key, **options
        )

    @staticmethod
    def _server(ref: Any, links: HubLinks) -> MCPServerSpec:
        from a2a_hub.tools.mcp import inline_spec

        if isinstance(ref, dict):
            spec = MCPServerSpec(**{"name": "inline", **ref})
        elif isinstance(ref, str) and ref in links.mcp_servers:
            return links.mcp_servers[ref]
        elif isinstance(ref, str) and ref.startswith(("http://", "https://", "stdio:")):
            spec = inline_spec(ref)
        else:
            known = ", ".join(sorted(links.mcp_servers)) or "none declared"
            raise ValueError(
                f"unknown MCP server {ref!r} (servers in [[mcp_servers]]: {known}; or write "
                "'http(s)://host/mcp' or 'stdio:command args')"
            )
        problem = spec.problem()
        if problem is not None:
            raise ValueError(problem)
        return spec

    @property
    def uses_tools(self) -> bool:
        """Whether this agent offers tools to its model."""
        return bool(self.servers) or self.exit_tool or bool(self.client_tools)

    async def _check_url(self, spec: MCPServerSpec) -> None:
        """An inline MCP server over HTTP of an agent from the admin API or the registry
        passes the hub's outbound address policy (``[[mcp_servers]]`` are the operator's)."""
        policy = self.links.outbound
        named = self.links.mcp_servers.get(spec.name) == spec
        if policy is not None and not self.links.configured and not named and spec.url:
            await policy.resolve(spec.url, f"MCP server {spec.name!r} URL")

    async def tools(self) -> list[Tool]:
        """The tools offered to the model (MCP servers connected and listed once)."""
        if self._tools is None:
            from a2a_hub.tools.mcp import mcp_tools

            found: list[Tool] = []
            for spec in self.servers:
                await self._check_url(spec)
                found.extend(await mcp_tools(spec, only=self.tool_names, limit=self.tool_timeout))
            if self.exit_tool:
                found.append(ExitTool())
            if self.tool_names is not None:
                missing = self.tool_names - {t.name for t in found} - set(self.client_tools)
                if missing:
                    raise ValueError(
                        f"no MCP server offers the tool(s) {', '.join(sorted(missing))} "
                        f"(offered: {', '.join(t.name for t in found) or 'none'})"
                    )
            self._tools = [*found, *self.client_tools.values()]
        return self._tools

    @property
    def provider(self) -> LLMProvider:
        """The provider, created on first use (the embedded model loads then)."""
        return self._llm.get()

    def messages_for(self, history: list[Message]) -> list[ChatMessage]:
        """What the model is sent for a conversation (override to shape prompts)."""
        return chat_messages(self.instruction, history, limit=self.history_turns)

    async def history(self, ctx: RequestContext) -> list[Message]:
        """The conversation so far: the recorded one (when the hub keeps conversations),
        then the messages of the context's tasks it does not hold yet (the recorder
        writes a moment after each event), the incoming message last."""
        tasks = await ctx.context_history()
        recorded = await self.links.conversations(
            ctx.agent_id, ctx.context_id, ctx.owner, max(self.history_turns * 4, 50)
        )
        if not recorded:
            return tasks
        seen = {m.message_id for m in recorded}
        return [*recorded, *(m for m in tasks if m.message_id not in seen)]

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        messages = self.messages_for(await self.history(ctx))
        provider_name = self.provider.name
        began = time.perf_counter()
        if self.uses_tools:
            await self._tool_loop(messages, updater, _paused(ctx))
            return
        try:
            if ctx.streaming:
                # hold one chunk back, so that the last one can say lastChunk
                chunks: list[str] = []
                held: str | None = None
                artifact_id: str | None = None
                async for chunk in self.provider.stream(
                    messages, max_tokens=self.max_tokens, temperature=self.temperature
                ):
                    if not chunk:
                        continue
                    if held is not None:
                        artifact_id = await updater.artifact(
                            held,
                            name="response",
                            artifact_id=artifact_id,
                            append=artifact_id is not None,
                        )
                    held = chunk
                    chunks.append(chunk)
                if held is not None:
                    await updater.artifact(
                        held,
                        name="response",
                        artifact_id=artifact_id,
                        append=artifact_id is not None,
                        last_chunk=True,
                    )
                text = "".join(chunks)
            else:
                text = await self.provider.complete(
                    messages, max_tokens=self.max_tokens, temperature=self.temperature
                )
                await updater.artifact(text, name="response")
        except LLMError as exc:
            metrics.llm_call(provider_name, "error", time.perf_counter() - began)
            _log_failure(updater, exc)
            await updater.fail(f"the language model failed: {exc}")
            return
        metrics.llm_call(provider_name, "ok", time.perf_counter() - began)
        await updater.complete(text.strip() or "(the model returned no text)")

    async def _tool_loop(
        self,
        messages: list[ChatMessage],
        updater: TaskUpdater,
        paused: tuple[_Loop, dict[str, Any] | None, str] | None = None,
    ) -> None:
        """Model, tool calls, model … until an answer (see the module docstring); with
        ``paused``, first the client's result of the call the loop waits on."""
        from a2a_hub.tools.mcp import MCPError

        provider = self.provider
        if not provider.supports_tools:
            await updater.fail(str(provider.tools_refused()))
            return
        try:
            tools = await self.tools()
        except (MCPError, ValueError, A2AError) as exc:
            await updater.fail(f"the agent's tools are not available: {exc}")
            return
        by_name = {tool.name: tool for tool in tools}
        offered = [tool.definition() for tool in tools]
        first = 0
        if paused is not None:
            loop, answer, said = paused
            messages, first = loop.messages, loop.step
            call, rest = loop.calls[0], loop.calls[1:]
            result = _client_result(answer, said)
            await updater.working([Part(data=tool_response_data(call, result))])
            messages.append(ChatMessage(role="tool", content=result.text, tool_call_id=call.id))
            loop = _Loop(messages, rest, first, loop.exits, loop.text)
            if await self._run_calls(loop, by_name, updater) or await self._finish(loop, updater):
                return
            first += 1
        for step in range(first, self.max_steps):
            try:
                reply = await provider.chat(
                    messages,
                    tools=offered,
                    max_tokens=self.max_tokens,
                    temperature=self.temperature,
                )
            except LLMError as exc:
                _log_failure(updater, exc)
                await updater.fail(f"the language model failed: {exc}")
                return
            if not reply.tool_calls:
                text = reply.text.strip() or "(the model returned no text)"
                await updater.artifact(text, name="response")
                await updater.complete(text)
                return
            messages.append(
                ChatMessage(role="assistant", content=reply.text, tool_calls=reply.tool_calls)
            )
            loop = _Loop(messages, list(reply.tool_calls), step, [], reply.text)
            if await self._run_calls(loop, by_name, updater) or await self._finish(loop, updater):
                return
        await updater.fail(
            f"the model was still calling tools after max_steps={self.max_steps} steps "
            "without answering"
        )

    async def _run_calls(self, loop: _Loop, tools: dict[str, Tool], updater: TaskUpdater) -> bool:
        """Run the step's calls in order; True when one is the client's (the turn ends,
        asking the client, with the loop's state on the question)."""
        while loop.calls:
            call = loop.calls[0]
            tool = tools.get(call.name)
            if isinstance(tool, ClientTool):
                state = msgspec.to_builtins(loop)
                await updater.call_client_tool(
                    call.name, call.arguments, metadata={LOOP_KEY: state}
                )
                return True
            loop.calls = loop.calls[1:]
            result = await self._run_tool(tools, call, updater)
            loop.messages.append(
                ChatMessage(role="tool", content=result.text, tool_call_id=call.id)
            )
            if call.name == EXIT_TOOL and result.ok:
                loop.exits.append(result.text)
        return False

    async def _finish(self, loop: _Loop, updater: TaskUpdater) -> bool:
        """After a step's calls: True (and the task completed) when one was ``exit``."""
        if not loop.exits:
            return False
        text = loop.text.strip() or loop.exits[0]
        await updater.artifact([Part(text=text), Part(data={"done": True})], name="response")
        await updater.complete(text)
        return True

    async def _run_tool(
        self, tools: dict[str, Tool], call: ToolCall, updater: TaskUpdater
    ) -> ToolResult:
        """Run one call, showing it and its result as data parts on working statuses."""
        await updater.working([Part(data=tool_call_data(call))])
        tool = tools.get(call.name)
        if tool is None:
            result = ToolResult(
                ok=False,
                text=f"there is no tool {call.name!r}; tools: {', '.join(tools) or 'none'}",
            )
        else:
            result = await tool.call(call.arguments)
        metrics.tool_called(call.name, result.ok)
        await updater.working([Part(data=tool_response_data(call, result))])
        return result


def _paused(ctx: RequestContext) -> tuple[_Loop, dict[str, Any] | None, str] | None:
    """The tool loop this turn continues (the task waited on a client-side tool): its
    state, the client's result of that call (``None`` if it sent none) and its text."""
    question = ctx.task.status.message if ctx.task is not None else None
    if question is None or not question.metadata or LOOP_KEY not in question.metadata:
        return None
    try:
        loop = msgspec.convert(question.metadata[LOOP_KEY], _Loop)
    except msgspec.ValidationError:
        return None
    if not loop.calls:
        return None
    call_id = next(
        (
            p.data.get("tool_call_id")
            for p in question.parts
            if isinstance(p.data, dict) and p.data.get("kind") == "tool_call"
        ),
        None,
    )
    return loop, ctx.tool_response(call_id) if call_id else None, ctx.text


def _client_result(answer: dict[str, Any] | None, said: str) -> ToolResult:
    """The client's ``tool_response`` result as the model reads it."""
    if answer is None:
        return ToolResult(ok=False, text=f"the client did not run the tool; it said: {said}")
    if answer.get("status", "success") != "success":
        return ToolResult(ok=False, text=str(answer.get("error_message") or "the tool failed"))
    data = answer.get("data")
    text = data if isinstance(data, str) else msgspec.json.encode(data).decode()
    return ToolResult(ok=True, text=text, data=data)


def _log_failure(updater: TaskUpdater, exc: LLMError) -> None:
    """A provider's failure in the server's log too (the caller sees it in the task)."""
    log.warning("task %s: %s", updater.task_id, exc)
