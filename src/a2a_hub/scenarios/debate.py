"""The debate: two LLM debaters and a judge that runs the rounds and scores them.

The judge first shows the topic and each side's position (``config.pro_position`` and
``config.con_position``, or "the answer is yes / no" when they are not given).  Rounds
follow the founding note: the pro side opens, the con side opens answering it, then
each side rebuts the other's last turn; every turn is streamed as it happens.  Each
prompt restates the side's position, in words for any A2A agent and as ``debate``
metadata for :class:`Debater`, which checks its model's reply against it
(:mod:`a2a_hub.scenarios.turns`) and asks again when the reply argues the other side,
repeats earlier turns or has no complete sentence.

The judge's model then scores each side from 0 to 10 on five criteria (structured
output checked against :data:`SCORES_SCHEMA`).  The totals, the winner and the reason
are computed from those scores, never asked of the model: the side with the higher
total wins, equal totals are a tie (:data:`~a2a_hub.scenarios.models.TIE`).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from a2a_hub.agents.llm import LLMExecutor, check_provider_options
from a2a_hub.engine.executor import RequestContext, TaskUpdater, text_of
from a2a_hub.llm import (
    ChatMessage,
    LazyProvider,
    LLMError,
    LLMProvider,
    structured,
)
from a2a_hub.protocol.types import Message, Part, Role
from a2a_hub.scenarios.green import GreenAgent, ParticipantError, Participants
from a2a_hub.scenarios.models import TIE, EvalRequest, EvalResult
from a2a_hub.scenarios.turns import TOO_SHORT, Review, as_clause, review_turn

__all__ = [
    "CRITERIA",
    "SCORES_SCHEMA",
    "DebateJudge",
    "Debater",
    "positions",
    "verdict",
]

log = logging.getLogger("a2a_hub.scenarios.debate")

CRITERIA = ("emotional_appeal", "clarity", "logic", "evidence", "persuasiveness")
ROLES = ("pro_debater", "con_debater")
SIDES = {"pro_debater": "pro", "con_debater": "con"}

#: What the judge's model returns for one side: a score from 0 to 10 per criterion.
SCORES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {c: {"type": "integer", "minimum": 0, "maximum": 10} for c in CRITERIA},
    "required": list(CRITERIA),
}

#: The metadata key under which the judge sends each turn's brief to the debaters.
BRIEF_KEY = "debate"

_REAL_MODEL_HINT = (
    "A2A_HUB_LLM_PROVIDER=openai A2A_HUB_LLM_BASE_URL=https://api.openai.com/v1 "
    "A2A_HUB_LLM_API_KEY=sk-... A2A_HUB_LLM_MODEL=gpt-4o-mini "
    "a2a-hub run scenarios/debate/scenario.toml"
)


def _other(role: str) -> str:
    return ROLES[1] if role == ROLES[0] else ROLES[0]


def _listing(words: list[str]) -> str:
    return ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else "".join(words)


def _title(role: str) -> str:
    return role.replace("_", " ").capitalize()


def positions(config: dict[str, Any]) -> tuple[str, str]:
    """The pro and con positions: ``config.pro_position`` / ``con_position``, or derived
    from the topic ("The answer to "…" is yes." / "… is no.")."""
    topic = str(config.get("topic", "")).strip()
    pro, con = config.get("pro_position"), config.get("con_position")
    return (
        pro.strip() if isinstance(pro, str) and pro.strip() else f'The answer to "{topic}" is yes.',
        con.strip() if isinstance(con, str) and con.strip() else f'The answer to "{topic}" is no.',
    )


def _brief(message: Message) -> dict[str, Any] | None:
    brief = (message.metadata or {}).get(BRIEF_KEY)
    if isinstance(brief, dict) and isinstance(brief.get("position"), str):
        return brief
    return None


def _turn_prompt(topic: str, position: str, opponent: str | None, opening: bool) -> str:
    """What the judge asks a debater, in words any A2A agent understands."""
    lines = [f"Debate topic: {topic}", f"Your position: {position}"]
    if opponent:
        lines.append(f'Your opponent said: "{opponent}"')
    if opening and not opponent:
        lines.append("Give your opening argument for your position in two or three sentences.")
    elif opening:
        lines.append(
            "Give your opening argument for your position, answering them, "
            "in two or three sentences."
        )
    else:
        lines.append("Rebut their point and defend your position in two or three sentences.")
    return "\n".join(lines)


class Debater(LLMExecutor):
    """An LLM debater arguing for (``stance=pro``) or against (``stance=con``) a topic.

    When the judge's message carries a ``debate`` brief (topic, position, the other
    side's position, the opponent's last turn), the model is told its position in the
    system message.  With ``style=simple`` it is then asked only for one reason (another
    one in later rounds) why its position holds: a tiny model follows that far better
    than a long prompt, and quoting the opponent to it makes it argue the opponent's
    side.  With ``style=full`` it gets the judge's whole prompt, opponent included.  The
    default, ``auto``, is ``simple`` for the ``embedded`` provider and ``full`` otherwise.

    Every reply is cleaned (:func:`~a2a_hub.scenarios.turns.review_turn`): role labels
    stripped and cut to at most ``sentences`` complete sentences.  In the simple style it
    is also checked: no echoed prompt, no sentence repeating an earlier turn or stating the
    other side's position.  A reply with such problems is asked for again, up to ``tries``
    times, and the best one is kept.
    """

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

    def __init__(
        self,
        stance: str = "pro",
        style: str = "auto",
        tries: int | str = 3,
        sentences: int | str = 3,
        **options: Any,
    ) -> None:
        if stance not in ("pro", "con"):
            raise ValueError(f"stance must be 'pro' or 'con', not {stance!r}")
        if style not in ("auto", "simple", "full"):
            raise ValueError(f"style must be 'auto', 'simple' or 'full', not {style!r}")
        side = "FOR" if stance == "pro" else "AGAINST"
        options.setdefault(
            "instruction",
            f"You are a debater. You argue {side} the topic you are given. Answer in two or "
            "three short sentences of your own: give one concrete reason, and answer your "
            "opponent when they have spoken.",
        )
        options.setdefault("max_tokens", 100)  # three short sentences, and room to end one
        options.setdefault("temperature", 0.6)  # varied enough that a retry differs
        options.setdefault("history_turns", 4)
        super().__init__(**options)
        self.stance = stance
        self.style = style
        self.tries = max(1, int(tries))
        self.sentences = max(1, int(sentences))
        self.name = f"{stance.capitalize()} debater"

    @property
    def simple(self) -> bool:
        """Whether the model gets the short prompt (see the class docstring)."""
        if self.style == "auto":
            return self.provider.name == "embedded"
        return self.style == "simple"

    def brief_messages(self, brief: dict[str, Any], prompt: str) -> list[ChatMessage]:
        """What the model is sent for a turn the judge briefed (its position, twice)."""
        position = str(brief["position"]).strip()
        topic = str(brief.get("topic") or "").strip()
        system = (
            f"You are a debater. The topic: {topic}\nYour position: {position}\n"
            "Argue only for your position. Answer in two or three short sentences of your "
            "own, with one concrete reason."
        )
        if not self.simple:
            user = prompt
        elif brief.get("round", 1) == 1:
            user = f"Give one reason why {as_clause(position)}."
        else:
            user = f"Give another reason why {as_clause(position)}."
        return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]

    async def write_turn(
        self,
        messages: list[ChatMessage],
        *,
        earlier: list[str],
        brief: dict[str, Any] | None,
    ) -> Review:
        """Ask the model up to ``tries`` times; the first good turn, else the best one."""
        checked = brief is not None and self.simple
        position = other = None
        topic = ""
        if brief is not None:
            position = str(brief["position"])
            value = brief.get("other_position")
            other = value if isinstance(value, str) else None
            topic = str(brief.get("topic") or "")
        prompt = "\n".join(m.content for m in messages)
        max_tokens = self.max_tokens
        best: Review | None = None
        raw_best = ""
        for attempt in range(1, self.tries + 1):
            raw = await self.provider.complete(
                messages, max_tokens=max_tokens, temperature=self.temperature
            )
            review = review_turn(
                raw,
                prompt=prompt if checked else "",
                earlier=earlier if checked else (),
                position=position if checked else None,
                other_position=other if checked else None,
                topic=topic,
                max_sentences=self.sentences,
            )
            if best is None or review.rank() < best.rank():
                best, raw_best = review, raw
            if review.usable and review.rank()[1] == 0:
                break
            log.info("turn %d/%d rejected (%s): %r", attempt, self.tries, review.problems, raw)
            if TOO_SHORT in review.problems:
                max_tokens = int(max_tokens * 1.5)  # it may have run out mid-sentence
        assert best is not None
        if not best.usable:
            # Every try repeated or echoed: show the last resort, the reply's own sentences.
            fallback = review_turn(raw_best, max_sentences=self.sentences)
            if fallback.usable:
                return Review(fallback.text, best.problems, best.dropped)
        return best

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        history = await ctx.context_history()
        brief = _brief(ctx.message)
        earlier = [text for m in history[:-1] if (text := text_of(m.parts))]
        try:
            if brief is not None:
                messages = self.brief_messages(brief, ctx.text)
                opponent = brief.get("opponent")
                if isinstance(opponent, str) and opponent:
                    earlier.append(opponent)
            else:
                messages = self.messages_for(history)
            review = await self.write_turn(messages, earlier=earlier, brief=brief)
        except LLMError as exc:
            await updater.fail(f"the language model failed: {exc}")
            return
        if not review.usable:
            await updater.fail(
                f"the model wrote no usable turn in {self.tries} tries "
                f"({', '.join(review.problems)})"
            )
            return
        await updater.artifact(review.text, name="response")
        await updater.complete(review.text)


def _num_rounds(config: dict[str, Any]) -> int | str:
    value = config.get("num_rounds")
    if value is None:
        return "config.num_rounds is missing"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"config.num_rounds must be an integer, not {value!r}"
    if not 1 <= value <= 20:
        return f"config.num_rounds must be between 1 and 20, not {value}"
    return value


def verdict(scores: dict[str, dict[str, int]]) -> tuple[str, str, dict[str, int]]:
    """The winner (a role, or :data:`TIE`), the reason and the totals, from the scores."""
    totals = {role: sum(scores[role].values()) for role in ROLES}
    most = 10 * len(CRITERIA)
    ahead = {
        role: [
            f"{c.replace('_', ' ')} (+{scores[role][c] - scores[_other(role)][c]})"
            for c in CRITERIA
            if scores[role][c] > scores[_other(role)][c]
        ]
        for role in ROLES
    }
    if totals["pro_debater"] == totals["con_debater"]:
        reason = f"both sides scored {totals['pro_debater']} of {most}."
        leads = [f"{_title(r).lower()} on {_listing(ahead[r])}" for r in ROLES if ahead[r]]
        if leads:
            reason += f" Ahead: {'; '.join(leads)}."
        return TIE, reason[0].upper() + reason[1:], totals
    winner = max(ROLES, key=lambda role: totals[role])
    loser = _other(winner)
    reason = (
        f"{_title(winner)} {totals[winner]} of {most}, {_title(loser).lower()} "
        f"{totals[loser]}; ahead on {_listing(ahead[winner])}."
    )
    return winner, reason, totals


class DebateJudge(GreenAgent):
    """Runs a debate between ``pro_debater`` and ``con_debater`` and scores it."""

    name = "Debate judge"
    description = (
        "Runs a debate between two agents over config.topic for config.num_rounds rounds "
        "(positions in config.pro_position / config.con_position), streams every turn, "
        "then scores both sides; the higher total wins, equal totals are a tie."
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
        check_provider_options(type(self), DebateJudge, provider, options)
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
        for key in ("pro_position", "con_position"):
            value = request.config.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                problems.append(f"config.{key} must be a sentence, not {value!r}")
        return "; ".join(problems) or None

    def _introduction(self, topic: str, pro: str, con: str, rounds: int) -> str:
        llm = self.provider
        lines = [
            f"Topic: {topic}",
            f"Pro debater argues: {pro}",
            f"Con debater argues: {con}",
            f"{rounds} round{'s' if rounds != 1 else ''}; then the judge scores each side "
            f"from 0 to 10 on {_listing([c.replace('_', ' ') for c in CRITERIA])}.",
            f"Judge's model: {llm.model} ({llm.name}).",
        ]
        if llm.name == "embedded":
            lines.append(
                f"{llm.model} is a tiny model built in so that this demo runs offline: a "
                "stand-in that shows the plumbing, not a real debate. Expect simple arguments "
                "and rough scores. For a real debate, use a real model:\n  " + _REAL_MODEL_HINT
            )
        return "\n".join(lines)

    async def run_eval(self, request: EvalRequest, updater: TaskUpdater) -> EvalResult:
        topic: str = request.config["topic"].strip()
        rounds = _num_rounds(request.config)
        assert isinstance(rounds, int)
        pro_position, con_position = positions(request.config)
        stance = {"pro_debater": pro_position, "con_debater": con_position}
        await self.say(
            updater,
            self._introduction(topic, pro_position, con_position, rounds),
            role="judge",
            title="The debate",
        )
        people = Participants()
        transcript: list[tuple[int, str, str]] = []
        last = {role: "" for role in ROLES}
        try:
            for n in range(1, rounds + 1):
                for role in ROLES:
                    other = _other(role)
                    opponent = last[other] or None
                    text = _turn_prompt(topic, stance[role], opponent, opening=n == 1)
                    brief = {
                        "topic": topic,
                        "side": SIDES[role],
                        "position": stance[role],
                        "other_position": stance[other],
                        "round": n,
                        "opponent": opponent,
                    }
                    message = Message(
                        message_id=uuid.uuid4().hex,
                        role=Role.USER,
                        parts=[Part(text=text)],
                        metadata={BRIEF_KEY: brief},
                    )
                    said = await people.talk(
                        request.participants[role], message, new_conversation=n == 1
                    )
                    last[role] = said
                    transcript.append((n, role, said))
                    await self.say(updater, said, role=role, round=n)
        finally:
            await people.close()
        llm = self.provider
        await self.say(updater, f"Scoring both sides with {llm.model} ({llm.name})…", role="judge")
        scores = {
            role: await self._score(topic, stance[role], [t for _, r, t in transcript if r == role])
            for role in ROLES
        }
        winner, reason, totals = verdict(scores)
        return EvalResult(
            winner=winner,
            reason=reason,
            scores=scores,
            detail={
                "topic": topic,
                "positions": stance,
                "num_rounds": rounds,
                "totals": totals,
                "judge_model": f"{llm.model} ({llm.name})",
                "transcript": [{"round": n, "role": r, "text": t} for n, r, t in transcript],
            },
        )

    async def _score(self, topic: str, position: str, turns: list[str]) -> dict[str, int]:
        """One side's scores from the judge's model (two worked examples first: without
        them a small model just counts 1, 2, 3, 4, 5 down the criteria)."""
        arguments = "\n".join(f"{i}. {text}" for i, text in enumerate(turns, 1))
        messages = [ChatMessage(role="system", content=_JUDGE_INSTRUCTION)]
        for question, answer in _JUDGE_EXAMPLES:
            messages.append(ChatMessage(role="user", content=question))
            messages.append(ChatMessage(role="assistant", content=answer))
        messages.append(
            ChatMessage(
                role="user",
                content=f"Topic: {topic}\nThis side argues: {position}\nIts turns:\n{arguments}",
            )
        )
        try:
            value = await structured(
                self.provider, messages, SCORES_SCHEMA, tries=2, max_tokens=150, temperature=0.0
            )
        except LLMError as exc:
            raise ParticipantError(f"the judge's model gave no valid scores: {exc}") from exc
        return {c: int(value[c]) for c in CRITERIA}


_JUDGE_INSTRUCTION = (
    "You judge one side of a debate. Score its arguments from 0 to 10 on emotional_appeal, "
    "clarity, logic, evidence and persuasiveness. Answer with JSON only."
)
_JUDGE_EXAMPLES = (
    (
        "Topic: Is tea better than coffee?\nThis side argues: Tea is better than coffee.\n"
        "Its turns:\n1. Tea is better than coffee because it has less caffeine, so you sleep "
        "well.\n2. Tea is better than coffee because green tea has antioxidants that protect "
        "the heart.",
        '{"emotional_appeal": 5, "clarity": 8, "logic": 7, "evidence": 6, "persuasiveness": 7}',
    ),
    (
        "Topic: Is tea better than coffee?\nThis side argues: Coffee is better than tea.\n"
        "Its turns:\n1. Coffee is a thing that people. The coffee coffee is.\n2. Many people "
        "think many things about many drinks.",
        '{"emotional_appeal": 1, "clarity": 2, "logic": 1, "evidence": 0, "persuasiveness": 1}',
    ),
)
