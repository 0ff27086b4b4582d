"""Host a LangGraph graph unchanged (the ``langgraph`` extra).

``--agent helper=examples.langgraph_agent:graph`` names a compiled graph (or a ``StateGraph``
builder, compiled here) whose state follows the ``MessagesState`` convention: a ``messages``
channel the user's message is appended to; the answer is the last AI message.  Each turn:

* the conversation is a LangGraph thread: ``thread_id`` is the context id (scoped by the
  agent id, and by the caller when an API key names one, so two agents or two callers never
  share a thread), its checkpoints kept by a durable checkpointer beside the hub's tasks
  (:mod:`~a2a_hub.agents.frameworks.langgraph_checkpoints`), so the conversation survives a
  restart and moves between instances on PostgreSQL.  A graph compiled with a checkpointer
  of its own keeps it;
* a thread waiting in ``interrupt()`` is resumed with ``Command(resume=…)`` by the next
  message of the context (its data part if it has one, else its text); otherwise the message
  is appended to ``messages`` as a ``HumanMessage``;
* the graph runs with ``astream``: an AI message's tool calls and each ``ToolMessage`` are
  shown as ``tool_call`` / ``tool_response`` data parts (``working`` statuses, as the hub's
  ``llm`` agent shows its tools); on a streamed request the AI text (``stream_mode=
  "messages"``: token by token from a chat model, whole from a plain node) is an artifact
  ``response`` in chunks, the last one ``lastChunk``;
* the turn ends ``input-required`` with the interrupt's value as the agent's message (text,
  or a data part for structured values) when the graph stopped in ``interrupt()``, else
  ``completed`` with the last AI message (also the ``response`` artifact of a blocking send).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langgraph.graph.state import StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, StreamMode

from a2a_hub.agents.frameworks.langgraph_checkpoints import Checkpoints
from a2a_hub.agents.links import HubLinks
from a2a_hub.engine.executor import (
    AgentExecutor,
    RequestContext,
    TaskUpdater,
    tool_call_part,
    tool_response_part,
)
from a2a_hub.protocol.types import Part
from a2a_hub.settings import AgentSpec, SettingsError

__all__ = ["LangGraphExecutor", "adapt"]

log = logging.getLogger(__name__)

RESPONSE = "response"  # the artifact's name, as the llm agent's


def _text(message: BaseMessage) -> str:
    return str(message.text)  # a property since langchain-core 1.0


def _plain(value: Any) -> Any:
    """A JSON-able form of ``value`` for a data part (its ``str`` if it has none)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    return _plain(dump()) if callable(dump) else str(value)


def _interrupt_parts(interrupts: Any) -> list[Part]:
    """What the graph asks in ``interrupt(value)``: a text, or a data part."""
    parts: list[Part] = []
    for item in interrupts:
        value = getattr(item, "value", item)
        parts.append(Part(text=value) if isinstance(value, str) else Part(data=_plain(value)))
    return parts


def _skills(graph: Pregel[Any, Any, Any, Any]) -> list[dict[str, Any]]:
    """The tools of the graph's tool nodes (``ToolNode``), as the card's skills."""
    skills: list[dict[str, Any]] = []
    for node in graph.nodes.values():
        tools = getattr(getattr(node, "bound", None), "tools_by_name", None)
        if isinstance(tools, dict):
            for name, found in tools.items():
                description = str(getattr(found, "description", "") or name)
                skills.append({"id": name, "name": name, "description": description,
                               "tags": ["tool"]})  # fmt: skip
    return skills


class _Chunks:
    """The ``response`` artifact of a streamed turn, one chunk held back so that the last
    one can say ``lastChunk``."""

    def __init__(self, updater: TaskUpdater) -> None:
        self.updater = updater
        self.artifact_id: str | None = None
        self.held: str | None = None
        self.message_id: str | None = None

    async def add(self, text: str, message_id: str | None) -> None:
        if self.message_id is not None and message_id != self.message_id and self.held:
            text = "\n\n" + text  # another AI message of the same turn
        self.message_id = message_id
        if self.held is not None:
            await self._send(self.held, last=False)
        self.held = text

    async def _send(self, text: str, *, last: bool) -> None:
        self.artifact_id = await self.updater.artifact(
            text,
            name=RESPONSE,
            artifact_id=self.artifact_id,
            append=self.artifact_id is not None,
            last_chunk=last,
        )

    async def end(self) -> bool:
        """Send the held chunk as the last; False if nothing was streamed."""
        if self.held is None:
            return False
        await self._send(self.held, last=True)
        self.held = None
        return True


class LangGraphExecutor(AgentExecutor):
    """A hub executor running a compiled LangGraph graph (see the module docstring)."""

    def __init__(
        self, graph: Pregel[Any, Any, Any, Any], *, agent_id: str, store_url: str | None
    ) -> None:
        self.agent_id = agent_id
        self.checkpoints: Checkpoints | None = None
        if (
            graph.checkpointer is None or graph.checkpointer is True
        ):  # ours: durable, beside the hub's tasks
            self.checkpoints = Checkpoints(store_url)
        self._graph = graph
        self._ready: Pregel[Any, Any, Any, Any] | None = None if self.checkpoints else graph
        self._lock = asyncio.Lock()
        name = getattr(graph, "name", None)
        self.name = name if name and name != "LangGraph" else None
        self.skills = _skills(graph) or None

    async def graph(self) -> Pregel[Any, Any, Any, Any]:
        """The graph with its checkpointer (opened on first use)."""
        if self._ready is not None:
            return self._ready
        async with self._lock:
            if self._ready is None:
                assert self.checkpoints is not None
                saver = await self.checkpoints.saver()
                self._ready = self._graph.copy(update={"checkpointer": saver})
        return self._ready

    def thread_id(self, ctx: RequestContext) -> str:
        """The LangGraph thread of this conversation."""
        if ctx.owner is not None:
            return f"{self.agent_id}/{ctx.owner}/{ctx.context_id}"
        return f"{self.agent_id}/{ctx.context_id}"

    @staticmethod
    def _input(ctx: RequestContext, waiting: Any) -> Any:
        """The graph's input: ``Command(resume=…)`` for a thread waiting in ``interrupt()``,
        else the user's message appended to ``messages``."""
        if waiting:
            data = next(
                (p.data for p in ctx.message.parts if isinstance(p.data, dict | list)), None
            )
            value = data if data is not None else ctx.text
            if len(waiting) > 1:  # several interrupts at once: each gets the answer
                return Command(resume={i.id: value for i in waiting})
            return Command(resume=value)
        return {"messages": [HumanMessage(content=ctx.text, id=ctx.message.message_id)]}

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        graph = await self.graph()
        config: Any = {"configurable": {"thread_id": self.thread_id(ctx)}}
        before = await graph.aget_state(config)
        await updater.start()
        chunks = _Chunks(updater) if ctx.streaming else None
        modes: list[StreamMode] = ["updates", "messages"] if chunks is not None else ["updates"]
        async for mode, payload in graph.astream(
            self._input(ctx, before.interrupts), config, stream_mode=modes
        ):
            if mode == "messages":
                message = payload[0]
                if chunks is not None and isinstance(message, AIMessage | AIMessageChunk):
                    text = _text(message)
                    if text:
                        await chunks.add(text, message.id)
            elif isinstance(payload, dict):
                await self._tools(payload, updater)
        streamed = chunks is not None and await chunks.end()
        after = await graph.aget_state(config)
        if after.interrupts:
            await updater.require_input(_interrupt_parts(after.interrupts))
            return
        messages = (after.values or {}).get("messages") or []
        answer = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        text = _text(answer) if answer is not None else ""
        if not text:
            await updater.fail("the graph ended without an AI message")
            return
        if not streamed:
            await updater.artifact(text, name=RESPONSE)
        await updater.complete(text)

    @staticmethod
    async def _tools(update: dict[str, Any], updater: TaskUpdater) -> None:
        """Tool calls and results of the nodes' updates, as the hub's tool data parts."""
        for node, change in update.items():
            if node.startswith("__") or not isinstance(change, dict):
                continue
            found = change.get("messages")
            for message in found if isinstance(found, list) else [found]:
                if isinstance(message, AIMessage):
                    for call in message.tool_calls:
                        part = tool_call_part(call.get("id") or "", call["name"], call["args"])
                        await updater.working([Part(data=part)])
                elif isinstance(message, ToolMessage):
                    result: dict[str, Any] = (
                        {"status": "error", "error_message": _text(message)}
                        if message.status == "error"
                        else {"status": "success", "data": _plain(message.content)}
                    )
                    part = tool_response_part(message.tool_call_id, result, message.name)
                    await updater.working([Part(data=part)])

    async def close(self) -> None:
        if self.checkpoints is not None:
            await self.checkpoints.close()
            self._ready = None


def adapt(obj: Any, *, spec: AgentSpec, links: HubLinks) -> AgentExecutor:
    """The hub executor running ``obj``: a compiled graph, or a ``StateGraph`` to compile."""
    if isinstance(obj, StateGraph):
        obj = obj.compile()
    if not isinstance(obj, Pregel):
        raise SettingsError(
            f"agent {spec.id!r}: {spec.executor} is a {type(obj).__name__} from LangGraph; "
            "a2a-hub hosts a compiled graph (graph = builder.compile()) or a StateGraph"
        )
    if "messages" not in obj.channels:
        channels = ", ".join(c for c in obj.channels if not c.startswith(("__", "branch:")))
        raise SettingsError(
            f"agent {spec.id!r}: the graph {spec.executor} has no 'messages' state (its "
            f"channels: {channels or 'none'}); a2a-hub hosts graphs whose state follows "
            "MessagesState (class State(MessagesState): …)"
        )
    if obj.checkpointer is False:
        raise SettingsError(
            f"agent {spec.id!r}: the graph {spec.executor} was compiled with checkpointer=False; "
            "a hosted graph keeps each conversation in a checkpointer (compile it without one)"
        )
    if spec.options:
        raise SettingsError(
            f"agent {spec.id!r}: a LangGraph graph takes no options "
            f"(got {', '.join(map(repr, spec.options))})"
        )
    return LangGraphExecutor(obj, agent_id=spec.id, store_url=links.store_url)
