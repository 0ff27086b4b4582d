"""The debate: two LLM debaters and a judge that runs the rounds and scores them.

Rounds follow the founding note: the pro side opens, the con side opens answering
it, then each side rebuts the other's last argument; every turn is streamed as it
happens.  The judge then scores both sides 0 to 10 on five criteria and names a
winner with a reason — structured output checked against :data:`VERDICT_SCHEMA`,
asked again once if invalid, else the task fails with a clear message.
"""

from __future__ import annotations

from typing import Any

from a2a_hub.agents.llm import LLMExecutor
from a2a_hub.engine.executor import TaskUpdater
from a2a_hub.llm import ChatMessage, LazyProvider, LLMError, LLMProvider, structured
from a2a_hub.scenarios.green import GreenAgent, ParticipantError, Participants
from a2a_hub.scenarios.models import EvalRequest, EvalResult

__all__ = ["CRITERIA", "VERDICT_SCHEMA", "DebateJudge", "Debater"]

CRITERIA = ("emotional_appeal", "clarity", "logic", "evidence", "persuasiveness")
ROLES = ("pro_debater", "con_debater")

_SCORES = {
    "type": "object",
    "properties": {c: {"type": "integer", "minimum": 0, "maximum": 10} for c in CRITERIA},
    "required": list(CRITERIA),
}
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pro_debater": _SCORES,
        "con_debater": _SCORES,
        "winner": {"type": "string", "enum": list(ROLES)},
        # bounded, so that a rambling model cannot run out of tokens mid-string
        "reason": {"type": "string", "minLength": 1, "maxLength": 300},
    },
    "required": ["pro_debater", "con_debater", "winner", "reason"],
}


class Debater(LLMExecutor):
    """An LLM debater arguing for (``stance=pro``) or against (``stance=con``) a topic."""

    name = "Debater"
    description = "Argues one side of a debate topic, answering the opponent."
    skills = [
        {
            "id": "debate",
            "name": "Debate",
            "description": "Argues for or against a topic and rebuts the opponent.",
            "tags": ["debate", "llm"],
        }
    ]

    def __init__(self, stance: str = "pro", **options: Any) -> None:
        if stance not in ("pro", "con"):
            raise ValueError(f"stance must be 'pro' or 'con', not {stance!r}")
        side = "FOR" if stance == "pro" else "AGAINST"
        options.setdefault(
            "instruction",
            f"You are a debater. You argue {side} the topic you are given. Be persuasive "
            "and concrete, answer your opponent's points, and use at most three sentences.",
        )
        options.setdefault("max_tokens", 120)
        options.setdefault("history_turns", 2)  # each prompt carries what the turn needs
        super().__init__(**options)
        self.stance = stance
        self.name = f"{stance.capitalize()} debater"


def _num_rounds(config: dict[str, Any]) -> int | str:
    value = config.get("num_rounds")
    if value is None:
        return "config.num_rounds is missing"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"config.num_rounds must be an integer, not {value!r}"
    if not 1 <= value <= 20:
        return f"config.num_rounds must be between 1 and 20, not {value}"
    return value


class DebateJudge(GreenAgent):
    """Runs a debate between ``pro_debater`` and ``con_debater`` and scores it."""

    name = "Debate judge"
    description = (
        "Runs a debate between two agents over config.topic for config.num_rounds rounds, "
        "streams every turn, then scores both sides and names a winner."
    )
    skills = [
        {
            "id": "judge_debate",
            "name": "Judge a debate",
            "description": "Orchestrates and scores a debate between two A2A agents.",
            "tags": ["debate", "evaluation", "green-agent"],
        }
    ]
    required_roles = ROLES

    def __init__(
        self,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        **options: Any,
    ):
        self._llm = LazyProvider(
            provider, model=model, base_url=base_url, api_key=api_key, **options
        )

    @property
    def provider(self) -> LLMProvider:
        """The judge's model, created on first use."""
        return self._llm.get()

    def validate_request(self, request: EvalRequest) -> str | None:
        problems = []
        missing = super().validate_request(request)
        if missing:
            problems.append(missing)
        topic = request.config.get("topic")
        if not isinstance(topic, str) or not topic.strip():
            problems.append("config.topic is missing")
        rounds = _num_rounds(request.config)
        if isinstance(rounds, str):
            problems.append(rounds)
        return "; ".join(problems) or None

    async def run_eval(self, request: EvalRequest, updater: TaskUpdater) -> EvalResult:
        topic: str = request.config["topic"]
        rounds = _num_rounds(request.config)
        assert isinstance(rounds, int)
        pro_url, con_url = request.participants["pro_debater"], request.participants["con_debater"]
        people = Participants()
        transcript: list[tuple[int, str, str]] = []
        try:
            pro = con = ""
            for n in range(1, rounds + 1):
                if n == 1:
                    ask_pro = f"Debate topic: {topic}\nPresent your opening argument FOR it."
                else:
                    ask_pro = f"Your opponent said: {con}\nRebut it, arguing FOR: {topic}"
                pro = await people.talk(pro_url, ask_pro, new_conversation=n == 1)
                transcript.append((n, "pro_debater", pro))
                await self.say(updater, pro, role="pro_debater", round=n)
                if n == 1:
                    ask_con = (
                        f"Debate topic: {topic}\nYour opponent opened with: {pro}\n"
                        "Present your opening argument AGAINST it, answering them."
                    )
                else:
                    ask_con = f"Your opponent said: {pro}\nRebut it, arguing AGAINST: {topic}"
                con = await people.talk(con_url, ask_con, new_conversation=n == 1)
                transcript.append((n, "con_debater", con))
                await self.say(updater, con, role="con_debater", round=n)
        finally:
            await people.close()
        await self.say(updater, "Scoring the debate…", role="judge")
        verdict = await self._verdict(topic, transcript)
        scores = {role: {c: int(verdict[role][c]) for c in CRITERIA} for role in ROLES}
        return EvalResult(
            winner=verdict["winner"],
            reason=verdict["reason"].strip() or "(no reason given)",
            scores=scores,
            detail={
                "topic": topic,
                "num_rounds": rounds,
                "totals": {role: sum(scores[role].values()) for role in ROLES},
                "transcript": [{"round": n, "role": r, "text": t} for n, r, t in transcript],
            },
        )

    async def _verdict(self, topic: str, transcript: list[tuple[int, str, str]]) -> dict[str, Any]:
        debate = "\n".join(
            f"Round {n} - {'Pro' if role == 'pro_debater' else 'Con'}: {text}"
            for n, role, text in transcript
        )
        messages = [
            ChatMessage(
                role="system",
                content=(
                    "You judge debates. Score each side from 0 to 10 on emotional_appeal, clarity, "
                    "logic, evidence and persuasiveness, pick the winner (pro_debater or "
                    "con_debater) and give a one-sentence reason. Answer with JSON only."
                ),
            ),
            ChatMessage(role="user", content=f"Topic: {topic}\n\n{debate}"),
        ]
        try:
            return await structured(
                self.provider, messages, VERDICT_SCHEMA, tries=2, max_tokens=700, temperature=0.0
            )
        except LLMError as exc:
            raise ParticipantError(f"the judge's model gave no valid verdict: {exc}") from exc
