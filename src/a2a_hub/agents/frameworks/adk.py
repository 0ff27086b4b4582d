"""Google ADK agents hosted unchanged: ``--agent ID=module:root_agent`` (any ``BaseAgent``,
or an ADK ``App``).

Each turn runs the agent with an ADK ``Runner`` in the ADK session of the task's context
(session id = context id, user id = the caller's principal, app name = the agent's id).  The
sessions are kept in the hub's own database: ADK's ``DatabaseSessionService`` on the task
store's SQLite file or PostgreSQL database (``sqlite+aiosqlite`` / ``postgresql+asyncpg``, with
the store's SQLite pragmas), so a conversation goes on after a restart and on another instance
sharing the database; a memory store keeps them in memory, and a Redis store in a SQLite file
of this instance (``.a2a-hub/adk-sessions.db``).

What the agent does shows as the hub's events:

* text: an artifact per model response, streamed as chunks (ADK's SSE mode, partial events)
  when the client streams; the turn completes with the last response's text;
* function calls and their results: ``tool_call`` / ``tool_response`` data parts on
  ``working`` statuses (the WebSocket shows them as such);
* long-running functions (``LongRunningFunctionTool``): the turn ends ``input-required`` with
  their calls as ``tool_call`` parts; the next message resumes them: a ``tool_response`` part
  for a call answers it, else the message's text (or data) is the answer of every waiting call;
* an error event or an exception: the task fails with the reason, in one line.

Other parts (files, ADK's own data parts) go through ADK's A2A part converters.  The card
comes from the agent: its name, description, and skills from ADK's ``AgentCardBuilder`` (the
agent and its tools).  An agent's model reaches the hub's LLM through LiteLLM:
``LiteLlm(model="openai/default", api_base=llm_base_url(), api_key=llm_api_key())``.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import logging
import os
import warnings
from collections.abc import Iterator
from typing import Any

from a2a_hub.agents.links import HubLinks
from a2a_hub.engine.executor import (
    AgentExecutor,
    RequestContext,
    TaskUpdater,
    tool_call_part,
    tool_response_part,
)
from a2a_hub.protocol.types import Part, Task
from a2a_hub.settings import AgentSpec, SettingsError
from a2a_hub.stores.sql.database import engine_url, open_engine

# LiteLLM would fetch its model catalogue from the internet when first imported
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from google.adk.agents import BaseAgent
from google.adk.agents.run_config import RunConfig, StreamingMode  # type: ignore[attr-defined]
from google.adk.apps import App
from google.adk.runners import Runner
from google.adk.sessions import (
    BaseSessionService,
    DatabaseSessionService,
    InMemorySessionService,
)
from google.genai import types as genai

__all__ = ["PENDING_KEY", "AdkExecutor", "adapt", "session_service"]

log = logging.getLogger("a2a_hub.agents.adk")

#: Status-message metadata of an ``input-required`` turn: the long-running calls waiting.
PENDING_KEY = "a2a-hub/adk-pending"
#: Where a hub on Redis keeps its ADK sessions.
REDIS_SESSIONS = "sqlite:///.a2a-hub/adk-sessions.db"


def adapt(obj: Any, *, spec: AgentSpec, links: HubLinks) -> AgentExecutor:
    """The executor hosting an ADK agent (see the module docstring)."""
    if not isinstance(obj, BaseAgent | App):
        raise SettingsError(
            f"agent {spec.id!r}: {spec.executor} is a {type(obj).__name__} from Google ADK; "
            "a2a-hub hosts an ADK agent (a BaseAgent such as root_agent) or an ADK App"
        )
    return AdkExecutor(obj, app_name=spec.id, store_url=links.store_url)


def session_service(store_url: str | None) -> BaseSessionService:
    """Where the ADK sessions live for a hub on ``store_url`` (see the module docstring)."""
    url = store_url or "memory://"
    scheme = url.partition(":")[0].partition("+")[0].lower()
    if scheme in ("redis", "rediss"):
        url = REDIS_SESSIONS
    elif scheme not in ("sqlite", "postgresql", "postgres") or url.rstrip("/") == "sqlite:":
        return InMemorySessionService()

    def unsupported(shown: str) -> Exception:
        return SettingsError(f"ADK sessions cannot be kept at {shown}")

    engine = open_engine(*engine_url(url, unsupported))
    return DatabaseSessionService(db_engine=engine)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """ADK's A2A converters warn that they are experimental at every call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def _root(agent: BaseAgent | App) -> BaseAgent | None:
    """The agent itself, or an App's root agent (``None`` for an App of another node)."""
    if isinstance(agent, App):
        return agent.root_agent if isinstance(agent.root_agent, BaseAgent) else None
    return agent


def _skills(agent: BaseAgent | App) -> list[dict[str, Any]] | None:
    """The agent's skills as ADK's ``AgentCardBuilder`` sees them (the agent, its tools)."""
    root = _root(agent)
    if root is None:
        return None
    try:
        from google.adk.a2a.utils.agent_card_builder import AgentCardBuilder
        from google.protobuf.json_format import MessageToDict

        def build() -> Any:
            with _quiet():
                return asyncio.run(AgentCardBuilder(agent=root).build())

        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a loop of its own
            card = pool.submit(build).result(timeout=60)
        keep = ("id", "name", "description", "tags", "examples")
        return [
            {k: v for k, v in MessageToDict(skill).items() if k in keep} for skill in card.skills
        ]
    except Exception as exc:  # the card is a courtesy: never a reason not to serve
        log.warning("no skills for ADK agent %s on its card: %s", root.name, exc)
        return None


class AdkExecutor(AgentExecutor):
    """Runs an ADK agent (or App) for each turn (see the module docstring)."""

    def __init__(self, agent: BaseAgent | App, *, app_name: str, store_url: str | None) -> None:
        self.agent = agent
        root = _root(agent)
        self.name = root.name if root is not None else agent.name
        self.description = (root.description if root is not None else None) or None
        self.skills = _skills(agent)
        self.app_name = app_name
        self.store_url = store_url
        self._runner: Runner | None = None
        self._service: BaseSessionService | None = None

    def runner(self) -> Runner:
        """The runner, made on first use (the session service opens its database then)."""
        if self._runner is None:
            self._service = session_service(self.store_url)
            if isinstance(self.agent, App):
                self._runner = Runner(
                    app=self.agent, session_service=self._service, auto_create_session=True
                )
            else:
                self._runner = Runner(
                    agent=self.agent, app_name=self.app_name, session_service=self._service,
                    auto_create_session=True,
                )  # fmt: skip
        return self._runner

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        pending = _pending(ctx.task)
        content = _content(ctx, pending)
        await updater.start()
        mode = StreamingMode.SSE if ctx.streaming else StreamingMode.NONE
        turn = _Turn(updater)
        try:
            runner = self.runner()
            events = runner.run_async(
                user_id=ctx.owner or "anonymous", session_id=ctx.context_id,
                new_message=content, run_config=RunConfig(streaming_mode=mode),
            )  # fmt: skip
            async with contextlib.aclosing(events):
                async for event in events:
                    await turn.on_event(event)
        except Exception as exc:
            log.info("ADK agent %s raised", self.name, exc_info=exc)
            await updater.fail(f"the ADK agent {self.name} failed: {_one_line(exc)}")
            return
        await turn.finish()

    async def close(self) -> None:
        service, self._service, self._runner = self._service, None, None
        if isinstance(service, DatabaseSessionService):
            await service.close()
            await service.db_engine.dispose()  # ours: the service does not own it


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:299] + "…"


def _pending(task: Task | None) -> list[dict[str, Any]]:
    """The long-running calls an ``input-required`` task waits on (``{"id", "name"}``)."""
    message = task.status.message if task is not None else None
    found = (message.metadata or {}).get(PENDING_KEY) if message is not None else None
    return [c for c in found or () if isinstance(c, dict) and isinstance(c.get("id"), str)]


def _answer(result: dict[str, Any]) -> dict[str, Any]:
    """A client's ``tool_response`` result as an ADK function response."""
    if result.get("status") == "error":
        return {"error": result.get("error_message") or "the tool failed"}
    data = result.get("data")
    return data if isinstance(data, dict) else {"result": data}


def _content(ctx: RequestContext, pending: list[dict[str, Any]]) -> genai.Content:
    """The incoming message as ADK content; waiting calls answered first."""
    parts: list[genai.Part] = []
    others = [p for p in ctx.message.parts if not (isinstance(p.data, dict) and p.data.get("kind"))]
    if pending:
        said: dict[str, Any] = {"result": ctx.text} if ctx.text else {}
        data = [p.data for p in others if isinstance(p.data, dict)]
        if data and not said:
            said = data[0]
        for call in pending:
            result = ctx.tool_response(call["id"])
            response = _answer(result) if result is not None else said
            parts.append(genai.Part(function_response=genai.FunctionResponse(
                id=call["id"], name=call.get("name") or "", response=response)))  # fmt: skip
        return genai.Content(role="user", parts=parts)
    for part in others:
        parts.extend(_to_genai(part))
    return genai.Content(role="user", parts=parts or [genai.Part(text="")])


def _to_genai(part: Part) -> list[genai.Part]:
    """A hub part as ADK parts: text as is, the rest through ADK's A2A part converter."""
    if part.text is not None:
        return [genai.Part(text=part.text)]
    from a2a.types import Part as SdkPart
    from google.adk.a2a.converters.part_converter import convert_a2a_part_to_genai_part
    from google.protobuf.json_format import ParseDict

    wire: dict[str, Any] = {"metadata": part.metadata or {}}
    if part.raw is not None:
        wire["raw"] = base64.b64encode(part.raw).decode()
    elif part.url is not None:
        wire["url"] = part.url
    else:
        wire["data"] = part.data
    for key, value in (("filename", part.filename), ("mediaType", part.media_type)):
        if value:
            wire[key] = value
    with _quiet():
        converted = convert_a2a_part_to_genai_part(ParseDict(wire, SdkPart()))
    if converted is None:
        return []
    return converted if isinstance(converted, list) else [converted]


def _from_genai(part: genai.Part) -> list[Part]:
    """An ADK part other than text and function calls as hub parts (ADK's converter)."""
    from google.adk.a2a.converters.part_converter import convert_genai_part_to_a2a_part
    from google.protobuf.json_format import MessageToDict

    with _quiet():
        converted = convert_genai_part_to_a2a_part(part)
    found = []
    for sdk in converted if isinstance(converted, list) else [converted] if converted else []:
        wire = MessageToDict(sdk)
        raw = wire.get("raw")
        found.append(
            Part(
                text=wire.get("text"),
                raw=base64.b64decode(raw) if raw else None,
                url=wire.get("url"),
                data=wire["data"] if "data" in wire else Part().data,
                metadata=wire.get("metadata"),
                filename=wire.get("filename"),
                media_type=wire.get("mediaType"),
            )
        )
    return found


class _Turn:
    """What one run of the agent shows: chunks, tool parts, the answer (module docstring)."""

    def __init__(self, updater: TaskUpdater) -> None:
        self.updater = updater
        self.artifact_id: str | None = None  # of the response being streamed
        self.held: str | None = None  # its last chunk, sent with lastChunk at its end
        self.text = ""
        self.error: str | None = None
        self.pending: list[dict[str, Any]] = []

    async def _chunk(self, text: str, author: str, *, last: bool = False) -> None:
        self.artifact_id = await self.updater.artifact(
            text, name=author, artifact_id=self.artifact_id,
            append=self.artifact_id is not None, last_chunk=last,
        )  # fmt: skip

    async def on_event(self, event: Any) -> None:
        if event.error_code or event.error_message:
            self.error = " ".join(str(x) for x in (event.error_code, event.error_message) if x)
        content = event.content
        if content is None or not content.parts or event.author == "user":
            return
        author = event.author or "agent"
        if event.partial:
            for part in content.parts:
                if part.text and not part.thought:
                    if self.held is not None:
                        await self._chunk(self.held, author)
                    self.held = part.text
            return
        waiting = set(event.long_running_tool_ids or ())
        text = "".join(p.text for p in content.parts if p.text and not p.thought)
        if text:
            if self.held is not None:  # streamed: end the artifact
                await self._chunk(self.held, author, last=True)
            elif self.artifact_id is None:
                await self.updater.artifact(text, name=author)
            self.artifact_id, self.held, self.text = None, None, text
        for part in content.parts:
            if part.function_call is not None:
                call = part.function_call
                if call.id in waiting:
                    self.pending.append({"id": call.id, "name": call.name, "args": call.args})
                    continue
                await self.updater.working(
                    [Part(data=tool_call_part(call.id or "", call.name or "", call.args or {}))]
                )
            elif part.function_response is not None:
                answer = part.function_response
                if any(c["id"] == answer.id for c in self.pending):
                    continue  # a long-running call's first answer: the client's is awaited
                result = {"status": "success", "data": answer.response}
                await self.updater.working(
                    [Part(data=tool_response_part(answer.id or "", result, answer.name))]
                )
            elif not part.text and not part.thought:
                shown = _from_genai(part)
                if shown:
                    await self.updater.artifact(shown, name=author)

    async def finish(self) -> None:
        if self.held is not None:  # a stream that never got its whole response
            await self._chunk(self.held, "agent", last=True)
        if self.error is not None:
            await self.updater.fail(f"the ADK agent failed: {self.error}")
        elif self.pending:
            parts = [Part(data=tool_call_part(c["id"], c["name"] or "", c["args"] or {}))
                     for c in self.pending]  # fmt: skip
            if self.text:
                parts.insert(0, Part(text=self.text))
            question = self.updater.message(parts)
            question.metadata = {
                PENDING_KEY: [{"id": c["id"], "name": c["name"]} for c in self.pending]
            }
            await self.updater.require_input(question)
        else:
            await self.updater.complete(self.text or "(the agent answered without text)")
