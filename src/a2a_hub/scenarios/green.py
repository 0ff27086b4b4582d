"""The judge kit: :class:`GreenAgent`, and :func:`talk_to_agent` for talking to participants.

A green agent receives an :class:`EvalRequest` (as a data part, or as JSON text),
checks it with :meth:`GreenAgent.validate_request` (a bad request ends the task
``rejected`` with a message naming what is missing), runs the evaluation in
:meth:`GreenAgent.run_eval` while reporting each step with :meth:`GreenAgent.say`
(streamed to whoever follows the task), and returns an :class:`EvalResult`, which
becomes the artifact ``Result``: the reason as text and the result as data.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import msgspec

from a2a_hub.client import A2AClient, Conversation
from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater, text_of
from a2a_hub.protocol.types import Message, Part, Task, TaskState
from a2a_hub.scenarios.models import TIE, EvalRequest, EvalResult

__all__ = ["GreenAgent", "ParticipantError", "Participants", "parse_eval_request", "talk_to_agent"]


class ParticipantError(RuntimeError):
    """A participant could not be reached, or its task failed."""


def parse_eval_request(message: Message) -> EvalRequest | str:
    """The request in ``message`` (a data part, else JSON text), or what is wrong with it."""
    payload: Any = msgspec.UNSET
    for part in message.parts:
        if part.data is not msgspec.UNSET:
            payload = part.data
            break
    if payload is msgspec.UNSET:
        text = text_of(message.parts).strip()
        try:
            payload = msgspec.json.decode(text)
        except msgspec.DecodeError:
            return "the message must be an EvalRequest: JSON with participants and config"
    try:
        return msgspec.convert(payload, EvalRequest)
    except msgspec.ValidationError as exc:
        return f"the EvalRequest is not valid: {exc}"


def reply_text(reply: Task | Message) -> str:
    """The text of an agent's answer: its message, or its status message and artifacts."""
    if isinstance(reply, Message):
        return text_of(reply.parts)
    if reply.status.message is not None and text_of(reply.status.message.parts):
        return text_of(reply.status.message.parts)
    return "\n".join(text_of(a.parts) for a in reply.artifacts or [])


class Participants:
    """One conversation per participant URL, kept across turns."""

    def __init__(self) -> None:
        self._clients: dict[str, A2AClient] = {}
        self._conversations: dict[str, Conversation] = {}

    async def talk(
        self, url: str, content: str | Message, *, new_conversation: bool = False
    ) -> str:
        """Send ``content`` (text, or a message with metadata) to the agent at ``url`` and
        return the text of its answer.

        An ``input-required`` answer is returned like any other (the next call
        continues that task); a failed, rejected or canceled task raises
        :class:`ParticipantError` with the agent's message.
        """
        client = self._clients.get(url)
        if client is None:
            try:
                client = self._clients[url] = await A2AClient.connect(url)
            except Exception as exc:
                raise ParticipantError(f"cannot reach the agent at {url}: {exc}") from exc
        conversation = self._conversations.get(url)
        if conversation is None or new_conversation:
            conversation = self._conversations[url] = Conversation(client)
        try:
            reply = await conversation.send(content)
        except Exception as exc:
            raise ParticipantError(f"the agent at {url} failed: {exc}") from exc
        if isinstance(reply, Task) and reply.status.state in (
            TaskState.FAILED,
            TaskState.REJECTED,
            TaskState.CANCELED,
        ):
            state = reply.status.state.label
            raise ParticipantError(f"the agent at {url} {state} the task: {reply_text(reply)}")
        return reply_text(reply)

    async def close(self) -> None:
        """Close every client."""
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
        self._conversations.clear()


_default = Participants()


async def talk_to_agent(url: str, content: str | Message, new_conversation: bool = False) -> str:
    """Talk to the agent at ``url``, one conversation per agent (see :class:`Participants`)."""
    return await _default.talk(url, content, new_conversation=new_conversation)


class GreenAgent(AgentExecutor):
    """Base of judge agents (see the module docstring).

    ``required_roles`` lists the roles :meth:`validate_request` insists on.
    """

    required_roles: tuple[str, ...] = ()

    def validate_request(self, request: EvalRequest) -> str | None:
        """What is wrong with the request (one clear sentence), or ``None`` if it is fine."""
        missing = [role for role in self.required_roles if not request.participants.get(role)]
        if missing:
            return f"missing participant role(s): {', '.join(missing)}"
        return None

    @abstractmethod
    async def run_eval(self, request: EvalRequest, updater: TaskUpdater) -> EvalResult:
        """Run the evaluation; report progress with :meth:`say`."""

    async def say(self, updater: TaskUpdater, text: str, **metadata: Any) -> None:
        """Stream one step (e.g. a debater's turn) with metadata such as ``role``, ``round``."""
        message = updater.message(text)
        message.metadata = metadata or None
        await updater.working(message)

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        request = parse_eval_request(ctx.message)
        problem = request if isinstance(request, str) else self.validate_request(request)
        if problem is not None:
            await updater.reject(problem)
            return
        assert isinstance(request, EvalRequest)
        await updater.start()
        try:
            result = await self.run_eval(request, updater)
        except ParticipantError as exc:
            await updater.fail(f"Evaluation failed: {exc}")
            return
        data = msgspec.to_builtins(result)
        await updater.artifact([Part(text=result.reason), Part(data=data)], name="Result")
        await updater.complete(
            "Result: a tie" if result.winner == TIE else f"Winner: {result.winner}"
        )
