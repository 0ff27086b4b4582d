"""A debate turn cleaned and checked, a debater that asks again, and a verdict from totals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from a2a_hub.llm import ChatMessage, LLMProvider
from a2a_hub.scenarios.debate import CRITERIA, Debater, positions, verdict
from a2a_hub.scenarios.turns import (
    NO_STANCE,
    OTHER_SIDE,
    REPEATS,
    TOO_SHORT,
    as_clause,
    review_turn,
    sentences,
    stance_of,
)

PRO = "Cats are better pets than dogs."
CON = "Dogs are better pets than cats."
TOPIC = "Are cats better pets than dogs?"


def test_sentences_end_on_a_full_stop_and_keep_numbers_and_quotes_whole() -> None:
    text = 'He said "go now." Then 3.5 million cats left! Why? And then the'
    assert sentences(text) == ['He said "go now."', "Then 3.5 million cats left!", "Why?"]


def test_labels_echoes_and_the_cut_off_end_are_removed() -> None:
    prompt = "Give one reason why cats are better pets than dogs."
    raw = (
        "**Pro:** Here's my argument:\n"
        "Give one reason why cats are better pets than dogs.\n"
        "Cats are better pets than dogs because they clean themselves. "
        "They also need no walks, which suits busy people. And in the end they are the"
    )
    review = review_turn(raw, prompt=prompt, position=PRO, other_position=CON, topic=TOPIC)
    assert review.text == (
        "Cats are better pets than dogs because they clean themselves. "
        "They also need no walks, which suits busy people."
    )
    assert review.clean


def test_repeats_of_earlier_turns_and_of_itself_are_dropped() -> None:
    earlier = ["Cats are better pets than dogs because they clean themselves every single day."]
    raw = (
        "Cats clean themselves every single day, so they are better. "
        "Cats are quiet and do not bark at night. "
        "Cats are quiet and they do not bark at night."
    )
    review = review_turn(raw, earlier=earlier, position=PRO, other_position=CON, topic=TOPIC)
    assert review.text == "Cats are quiet and do not bark at night."
    assert REPEATS in review.problems and len(review.dropped) == 2


def test_a_sentence_for_the_other_side_is_dropped_and_reported() -> None:
    raw = (
        "Dogs are better pets than cats because they are loyal. "
        "Cats are better pets than dogs because they are calm."
    )
    review = review_turn(raw, position=PRO, other_position=CON, topic=TOPIC)
    assert review.text == "Cats are better pets than dogs because they are calm."
    assert review.problems == [OTHER_SIDE]
    assert stance_of("Dogs are better pets than cats, surely.", PRO, CON) == -1
    assert stance_of("The weather is nice today.", PRO, CON) == 0
    ai_pro = "AI should be regulated by law."
    ai_con = "AI should not be regulated by law."
    assert stance_of("One reason AI should not be regulated by law is cost.", ai_con, ai_pro) == 1
    assert stance_of("One reason AI should not be regulated by law is cost.", ai_pro, ai_con) == -1


def test_nothing_usable_and_no_stance_are_reported() -> None:
    assert review_turn("and then the cats were", position=PRO, other_position=CON).problems == [
        TOO_SHORT
    ]
    review = review_turn("Pets bring joy to many homes.", position=PRO, other_position=CON)
    assert review.usable and review.problems == [NO_STANCE]
    assert review_turn("One. Two. Three. Four.", max_sentences=2).text == ""  # too short each
    three = review_turn("Cats purr a lot. Cats sleep all day. Cats hunt mice well. Cats rule.")
    assert three.text == "Cats purr a lot. Cats sleep all day. Cats hunt mice well."


def test_positions_and_clauses() -> None:
    assert positions({"topic": "T?", "pro_position": PRO, "con_position": CON}) == (PRO, CON)
    assert positions({"topic": "Is tea good?"}) == (
        'The answer to "Is tea good?" is yes.',
        'The answer to "Is tea good?" is no.',
    )
    assert as_clause(PRO) == "cats are better pets than dogs"
    assert as_clause("AI should be regulated.") == "AI should be regulated"


def scores(**totals: int) -> dict[str, dict[str, int]]:
    """Scores whose criteria add up to the given totals (first criteria filled first)."""
    out = {}
    for role, total in totals.items():
        row = {}
        for criterion in CRITERIA:
            row[criterion] = min(10, total)
            total -= row[criterion]
        out[role] = row
    return out


def test_the_winner_follows_from_the_totals_and_equal_totals_are_a_tie() -> None:
    winner, reason, totals = verdict(scores(pro_debater=21, con_debater=17))
    assert (winner, totals) == ("pro_debater", {"pro_debater": 21, "con_debater": 17})
    assert (
        reason.startswith("Pro debater 21 of 50, con debater 17")
        and "ahead on clarity (+3) and logic (+1)." in reason
    )
    winner, _, _ = verdict(scores(pro_debater=3, con_debater=30))
    assert winner == "con_debater"
    tied = scores(pro_debater=12, con_debater=12)
    tied["pro_debater"]["clarity"] += 1
    tied["pro_debater"]["logic"] -= 1
    winner, reason, totals = verdict(tied)
    assert winner == "tie" and totals["pro_debater"] == totals["con_debater"] == 12
    assert reason.startswith("Both sides scored 12 of 50.") and "clarity (+1)" in reason


class Canned(LLMProvider):
    """Replies from a list, in order; records what it was asked."""

    name = "embedded"  # so that the debater uses its simple style
    model = "canned"

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.asked: list[list[ChatMessage]] = []

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        self.asked.append(list(messages))
        return self.replies.pop(0)


class CannedDebater(Debater):
    def __init__(self, replies: Sequence[str], **options: Any) -> None:
        super().__init__("pro", provider="scripted", **options)
        self.canned = Canned(replies)

    @property
    def provider(self) -> LLMProvider:
        return self.canned


BRIEF = {"topic": TOPIC, "position": PRO, "other_position": CON, "round": 2, "opponent": None}


async def test_a_debater_asks_again_until_the_turn_is_good() -> None:
    debater = CannedDebater(
        [
            "Dogs are better pets than cats because they are loyal.",  # the other side
            "Cats clean themselves every day. Cats clean themselves every day.",  # a repeat
            "Cats are better pets than dogs because they need no walks.",
        ]
    )
    messages = debater.brief_messages(BRIEF, "the judge's prompt")
    assert PRO in messages[0].content  # the position, restated
    assert messages[1].content == "Give another reason why cats are better pets than dogs."
    review = await debater.write_turn(
        messages, earlier=["Cats clean themselves every day, which is nice."], brief=BRIEF
    )
    assert review.text == "Cats are better pets than dogs because they need no walks."
    assert len(debater.canned.asked) == 3


async def test_a_debater_keeps_the_best_try_when_none_is_clean() -> None:
    debater = CannedDebater(
        [
            "Dogs are better pets than cats.",
            "Cats are calm. Dogs are better pets than cats because they fetch.",
            "and so the",
        ],
        tries=3,
    )
    review = await debater.write_turn(debater.brief_messages(BRIEF, ""), earlier=[], brief=BRIEF)
    assert review.text == "Cats are calm."
    assert OTHER_SIDE in review.problems


def test_debater_options_are_checked() -> None:
    with pytest.raises(ValueError, match="stance must be 'pro' or 'con'"):
        Debater("maybe")
    with pytest.raises(ValueError, match="style must be"):
        Debater("pro", style="fancy")
    with pytest.raises(ValueError, match=r"unknown option 'instructions' for Debater; valid"):
        Debater("pro", provider="scripted", instructions="x")
