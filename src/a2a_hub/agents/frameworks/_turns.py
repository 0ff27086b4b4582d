"""What the pydantic-ai and OpenAI Agents SDK adapters share: one turn of a hosted agent.

Both frameworks run a model with tools in a loop and take the conversation so far as a list
of their own messages, so their adapters do the same around the run:

* **the conversation so far** (:func:`earlier_messages`): the context's messages as the hub
  keeps them: the recorded conversation (when the hub has a registry) merged with the
  messages of the context's tasks it does not hold yet (the recorder writes a moment after
  each event), the incoming message left out.  Each agent message that ends a turn carries
  the framework's own messages of that turn in its metadata (under the adapter's key), so
  the next turn's history keeps tool calls and system prompts exactly; messages without
  them (a failed turn, another writer) count by their text.
* **output** (:class:`TextOutput`): streamed text becomes chunks of one ``response``
  artifact when the client follows the task as a stream (one chunk held back so the last
  says ``lastChunk``), else one artifact at the end;
* **tool parts** (:func:`show_call`, :func:`show_result`): each tool call and its result is
  a data part on a ``working`` status (``tool_call`` / ``tool_response``, as the ``llm``
  kind shows them; the WebSocket and AG-UI read them);
* **approvals** (:func:`decision`, :func:`question`): a run that stops for a person's
  approval (or for a tool the client runs) ends the turn ``input-required`` with the calls
  as ``tool_call`` parts; the next message answers: ``yes``/``no`` in words for every
  call, or a ``tool_response`` part per call (``status: "success"`` approves, or carries a
  client-run tool's result; ``"error"`` denies, with its ``error_message``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from a2a_hub.agents.links import HubLinks
from a2a_hub.engine.executor import (
    TOOL_RESPONSE_KIND,
    RequestContext,
    TaskUpdater,
    tool_call_part,
    tool_response_part,
)
from a2a_hub.protocol.types import Message, Part

__all__ = [
    "HISTORY_LIMIT",
    "HUB_MODEL",
    "Call",
    "TextOutput",
    "answer_for",
    "decision",
    "earlier_messages",
    "hub_llm",
    "hub_model_name",
    "native",
    "prompt_of",
    "question",
    "show_call",
    "show_result",
]

#: How many recorded messages of a context a turn reads at most.
HISTORY_LIMIT = 400

#: The model name that points an agent at the hub's LLM endpoint (``"a2a-hub"``, or
#: ``"a2a-hub:NAME"`` / ``"a2a-hub/NAME"`` for one of the hub's models).
HUB_MODEL = "a2a-hub"


def hub_model_name(model: object) -> str | None:
    """The hub model ``model`` names (``"a2a-hub:smollm2"`` -> ``"smollm2"``, plain
    ``"a2a-hub"`` -> ``"a2a-hub"``, which the hub takes as its default), else ``None``."""
    if not isinstance(model, str):
        return None
    if model == HUB_MODEL:
        return HUB_MODEL
    for sep in (":", "/"):
        if model.startswith(HUB_MODEL + sep):
            return model[len(HUB_MODEL) + 1 :] or HUB_MODEL
    return None


def hub_llm() -> tuple[str, str]:
    """The base URL and the key of the hub's OpenAI-compatible LLM endpoint, for an
    agent's client (:func:`a2a_hub.llm.served.llm_base_url`)."""
    from a2a_hub.llm.served import llm_api_key, llm_base_url

    return llm_base_url(), llm_api_key()


async def earlier_messages(
    ctx: RequestContext, links: HubLinks, limit: int = HISTORY_LIMIT
) -> list[Message]:
    """The messages of the context before the incoming one, oldest first (see the module
    docstring): only the conversation of the task's owner is read."""
    tasks = await ctx.context_history()
    recorded = await links.conversations(ctx.agent_id, ctx.context_id, ctx.owner, limit)
    merged = tasks
    if recorded:
        seen = {m.message_id for m in recorded}
        merged = [*recorded, *(m for m in tasks if m.message_id not in seen)]
    current = ctx.message.message_id
    return [m for m in merged if m.message_id != current]


def native(message: Message, key: str) -> dict[str, Any] | None:
    """The framework's own record an adapter put on ``message`` under ``key``, if any."""
    found = (message.metadata or {}).get(key)
    return found if isinstance(found, dict) else None


def prompt_of(message: Message) -> str:
    """What a user message says to a model: its text, and its data parts as JSON (tool
    answers left out)."""
    texts = []
    for part in message.parts:
        if part.text is not None:
            texts.append(part.text)
        elif part.data is not None and not (
            isinstance(part.data, dict) and part.data.get("kind") == TOOL_RESPONSE_KIND
        ):
            texts.append(json.dumps(part.data, ensure_ascii=False))
    return "\n".join(t for t in texts if t)


class TextOutput:
    """The text of a run as the client sees it: streamed as chunks of one artifact (one
    chunk held back, so that the last one says ``lastChunk``), or one artifact at the end."""

    def __init__(self, updater: TaskUpdater, *, streaming: bool, name: str = "response") -> None:
        self.updater = updater
        self.streaming = streaming
        self.name = name
        self.chunks: list[str] = []
        self._held: str | None = None
        self._artifact_id: str | None = None

    async def add(self, chunk: str) -> None:
        """One more piece of text from the model."""
        if not chunk:
            return
        self.chunks.append(chunk)
        if not self.streaming:
            return
        if self._held is not None:
            await self._send(self._held, last=False)
        self._held = chunk

    async def _send(self, text: str, *, last: bool) -> None:
        self._artifact_id = await self.updater.artifact(
            text,
            name=self.name,
            artifact_id=self._artifact_id,
            append=self._artifact_id is not None,
            last_chunk=last,
        )

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    async def finish(self, final: str | None = None) -> None:
        """Close the artifact: the held chunk as the last one when streaming, else one
        artifact holding ``final`` (the run's answer; the streamed text if ``None``)."""
        if self.streaming:
            if self._held is not None:
                await self._send(self._held, last=True)
                self._held = None
            elif final and self._artifact_id is None:
                await self._send(final, last=True)
            return
        text = self.text if final is None else final
        if text:
            await self._send(text, last=True)


async def show_call(updater: TaskUpdater, call_id: str, tool: str, params: dict[str, Any]) -> None:
    """A tool call as a ``tool_call`` data part on a ``working`` status."""
    await updater.working([Part(data=tool_call_part(call_id, tool, params))])


async def show_result(
    updater: TaskUpdater, call_id: str, tool: str, *, ok: bool, data: Any
) -> None:
    """A tool's result as a ``tool_response`` data part on a ``working`` status."""
    result: dict[str, Any] = (
        {"status": "success", "data": _jsonable(data)}
        if ok
        else {"status": "error", "error_message": str(data)}
    )
    await updater.working([Part(data=tool_response_part(call_id, result, tool))])


def _jsonable(value: Any) -> Any:
    """``value`` if JSON can carry it, else its text."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


# --- approvals -------------------------------------------------------------------------

_YES = frozenset({"y", "yes", "ok", "okay", "approve", "approved", "allow", "sure", "go",
                  "accept", "confirm", "confirmed", "proceed"})  # fmt: skip
_NO = frozenset({"n", "no", "deny", "denied", "reject", "rejected", "refuse", "cancel",
                 "stop", "don't", "dont", "nope", "decline"})  # fmt: skip


def decision(text: str) -> bool | None:
    """What a person's answer says: ``True`` (yes), ``False`` (no) or ``None`` (neither),
    read from its first word."""
    words = re.findall(r"[a-z']+", text.lower())
    if not words:
        return None
    if words[0] in _YES:
        return True
    if words[0] in _NO:
        return False
    return None


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call the run stopped on: to approve, or (``external``) for the client to run."""

    call_id: str
    tool: str
    params: dict[str, Any]
    external: bool = False

    def line(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        if self.external:
            return (
                f"- run {self.tool}({args}) and answer with a tool_response part "
                f"(tool_call_id {self.call_id!r})"
            )
        return f"- {self.tool}({args})"


def question(calls: Sequence[Call], *, again: str | None = None) -> list[Part]:
    """The parts of the ``input-required`` status asking about ``calls``."""
    approvals = [c for c in calls if not c.external]
    lines = [again] if again else []
    if approvals:
        lines.append("The agent wants to call:")
        lines += [c.line() for c in approvals]
        lines.append("Approve? Answer yes or no.")
    external = [c for c in calls if c.external]
    if external:
        lines.append("The agent asks you to:")
        lines += [c.line() for c in external]
    parts = [Part(text="\n".join(lines))]
    parts += [Part(data=tool_call_part(c.call_id, c.tool, c.params)) for c in calls]
    return parts


def answer_for(ctx: RequestContext, call: Call, said: bool | None) -> tuple[bool, Any] | None:
    """The answer to one call from the incoming message: ``(ok, data)`` (for an approval
    ``data`` is the reason of a denial), or ``None`` when it gives none."""
    result = ctx.tool_response(call.call_id)
    if result is not None:
        ok = result.get("status", "success") == "success"
        return ok, result.get("data") if ok else (result.get("error_message") or "refused")
    if call.external or said is None:
        return None
    return said, None if said else (ctx.text.strip() or "no")
