"""Cleaning and checking one debate turn written by a language model.

Small models (the embedded SmolLM2-135M above all) echo their prompt, prefix role
labels (``Pro:``, ``Here's my rebuttal:``), copy the opponent, loop over their own
sentences and stop mid-sentence when they run out of tokens.  :func:`review_turn`
takes a raw reply and returns the text worth showing, one sentence at a time:

- labels and echoed prompt lines are stripped;
- only complete sentences are kept (the turn ends on ``.``, ``!`` or ``?``);
- a sentence that repeats an earlier turn, the prompt or the reply itself is dropped;
- a sentence that states the other side's position is dropped;

and lists what was wrong, so that the caller can ask the model again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

__all__ = [
    "NO_STANCE",
    "OTHER_SIDE",
    "REPEATS",
    "TOO_SHORT",
    "Review",
    "as_clause",
    "repeats",
    "review_turn",
    "sentences",
    "stance_of",
]

#: Problems :func:`review_turn` reports (all but the last make a turn worth retrying).
TOO_SHORT = "no complete sentence"
OTHER_SIDE = "argues the other side"
REPEATS = "repeats earlier turns"
NO_STANCE = "does not state its position"

# A sentence: the shortest run of text up to ., ! or ? (closing quotes and brackets
# included) that is followed by white space or the end, so "3.5" and "AI's" do not split it.
_SENTENCE = re.compile(r"\S.*?[.!?]+[\"'\u201d\u2019)\]]*(?=\s|$)", re.DOTALL)
_LIST_MARK = re.compile(r"^\s*(?:[-*•#>]+|\d{1,2}[.)])\s+")
_EMPHASIS = re.compile(r"\*\*|__|`")
_LABEL = re.compile(
    r"^\s*(?:(?:the\s+)?(?:pro|con|for|against)(?:\s+(?:side|debater|team))?|assistant|user|"
    r"debater|judge|moderator|rebuttal|opening(?:\s+(?:argument|statement))?|closing|"
    r"argument|answer|response|reply|my\s+(?:rebuttal|argument|answer|response|reply)|"
    r"round\s+\d+(?:\s*[-·]\s*\w+(?:\s+\w+)?)?)\s*[:\u2014\u2013]\s*",
    re.IGNORECASE,
)
# Lines that introduce what follows ("Here's my rebuttal:") or repeat the prompt's own labels.
_META_LINE = re.compile(
    r"^\s*(?:here(?:'s| is)\b.*|sure\b.*|certainly\b.*|.{0,60}\b(?:rebuttal|argument|answer|"
    r"response|version)\b.{0,30}):\s*$",
    re.IGNORECASE,
)
_PROMPT_LINE = re.compile(
    r"^\s*(?:debate\s+)?(?:topic|your\s+position|position|your\s+opponent(?:'s)?\s+"
    r"(?:said|says|argued|replied|wrote|opened\s+with)|opponent\s+said)\s*:",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOP_TEXT = """
a an the and or but if then so than that this these those it its it's is are was were be been
being am do does did to of in on at by for with from as into about over under between not no nor
can could should would will shall may might must i we you he she they me us him her them my our
your his their what which who whom why how when where there here also very more most much many
some any all each every one ones just only such own same too up out off again further once
because while although however therefore thus even still reason reasons argue argues argued
argument opponent point points side position debate topic believe think say says said make makes
made
"""
_STOPWORDS = frozenset(_STOP_TEXT.split())


@dataclass
class Review:
    """What :func:`review_turn` made of a reply: the text to show and what was wrong."""

    text: str
    problems: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        """Whether the turn has something to show."""
        return bool(self.text)

    @property
    def clean(self) -> bool:
        """Whether nothing had to be dropped or was missing."""
        return not self.problems

    def rank(self) -> tuple[int, int, int]:
        """Smaller is better: no text, then serious problems, then fewer sentences."""
        serious = sum(p != NO_STANCE for p in self.problems)
        return (0 if self.usable else 1, serious, -len(sentences(self.text)))


def sentences(text: str) -> list[str]:
    """The complete sentences of ``text`` (a trailing fragment without an end is left out)."""
    flat = " ".join(text.split())
    return [m.group(0).strip() for m in _SENTENCE.finditer(flat)]


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def _content(text: str, ignore: frozenset[str]) -> list[str]:
    return [w for w in _words(text) if w not in _STOPWORDS and w not in ignore]


def _ratio(a: Sequence[str], b: Sequence[str]) -> float:
    if not a or not b:
        return 0.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def _covered(short: Sequence[str], long: Sequence[str]) -> float:
    """The share of ``short`` found, in order, inside ``long``."""
    if not short:
        return 0.0
    blocks = SequenceMatcher(None, short, long, autojunk=False).get_matching_blocks()
    return sum(b.size for b in blocks) / len(short)


def repeats(sentence: str, earlier: str, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether ``sentence`` says again what ``earlier`` said.

    Only content words count (not the stop words, and not ``ignore``: the words of the
    topic and the positions, which every turn may restate).
    """
    a, b = _content(sentence, ignore), _content(earlier, ignore)
    if len(a) < 3 or len(b) < 3:
        return bool(a) and a == b
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    return _ratio(a, b) >= 0.6 or _covered(shorter, longer) >= 0.75


def _closeness(position: Sequence[str], words: Sequence[str]) -> float:
    """How closely some stretch of ``words`` says ``position`` (0 to 1)."""
    n = len(position)
    if not n or not words:
        return 0.0
    best = 0.0
    for size in range(max(1, n - 2), n + 3):
        for start in range(max(1, len(words) - size + 1)):
            best = max(best, _ratio(position, words[start : start + size]))
    return best


def stance_of(sentence: str, own: str, other: str) -> int:
    """+1 if ``sentence`` states the ``own`` position, -1 if the ``other``, else 0.

    Positions that differ by a word or two ("X should be regulated" / "X should not be
    regulated") are told apart by which one some stretch of the sentence is closer to.
    """
    words = _words(sentence)
    own_score, other_score = _closeness(_words(own), words), _closeness(_words(other), words)
    if max(own_score, other_score) < 0.6 or abs(own_score - other_score) < 0.03:
        return 0
    return 1 if own_score > other_score else -1


def as_clause(position: str) -> str:
    """A position sentence as a clause to follow "why": no end mark, no capital first word."""
    text = position.strip().rstrip(".!?").strip()
    first, _, rest = text.partition(" ")
    if first[:1].isupper() and not first[1:2].isupper():  # "AI" stays, "Cities" does not
        first = first.lower()
    return f"{first} {rest}".strip()


def _strip_lines(raw: str, prompt_lines: Iterable[str]) -> str:
    echoed = {" ".join(line.split()).lower() for line in prompt_lines if line.strip()}
    kept = []
    for line in raw.replace("\r", "").split("\n"):
        line = _EMPHASIS.sub("", line)
        line = _LIST_MARK.sub("", line)
        while (stripped := _LABEL.sub("", line, count=1)) != line:
            line = stripped
        if not line.strip() or _META_LINE.match(line) or _PROMPT_LINE.match(line):
            continue
        if " ".join(line.split()).lower() in echoed:
            continue
        kept.append(line.strip())
    text = " ".join(kept).strip()
    if len(text) > 1 and text[0] in '"“' and text[-1] in '"”':
        text = text[1:-1].strip()
    return text


def review_turn(
    raw: str,
    *,
    prompt: str = "",
    earlier: Sequence[str] = (),
    position: str | None = None,
    other_position: str | None = None,
    topic: str = "",
    max_sentences: int = 3,
) -> Review:
    """Clean a model's reply into a debate turn (see the module docstring).

    ``prompt`` is what the model was asked (echoed lines and sentences are removed),
    ``earlier`` the texts of the turns before (sentences repeating them are dropped),
    ``position`` and ``other_position`` the two sides' positions (sentences stating the
    other one are dropped; a turn that never states its own is reported), and at most
    ``max_sentences`` sentences are kept.
    """
    text = _strip_lines(raw, prompt.split("\n"))
    ignore = frozenset(_words(" ".join([topic, position or "", other_position or ""])))
    prompt_sentences = sentences(prompt)
    earlier_sentences = [s for turn in earlier for s in sentences(turn)]
    kept: list[str] = []
    dropped: list[str] = []
    problems: list[str] = []
    stated = False
    for sentence in sentences(text):
        if len(_words(sentence)) < 3:
            dropped.append(sentence)
            continue
        words = _words(sentence)
        if any(_ratio(words, _words(p)) >= 0.8 for p in prompt_sentences):
            dropped.append(sentence)  # the prompt, echoed
            continue
        if any(repeats(sentence, s, ignore) for s in [*earlier_sentences, *kept]):
            dropped.append(sentence)
            if REPEATS not in problems:
                problems.append(REPEATS)
            continue
        if position and other_position:
            stance = stance_of(sentence, position, other_position)
            if stance < 0:
                dropped.append(sentence)
                if OTHER_SIDE not in problems:
                    problems.append(OTHER_SIDE)
                continue
            stated = stated or stance > 0
        kept.append(sentence)
        if len(kept) == max_sentences:
            break
    if not kept:
        problems.insert(0, TOO_SHORT)
    elif position and other_position and not stated:
        problems.append(NO_STANCE)
    return Review(" ".join(kept), problems, dropped)
