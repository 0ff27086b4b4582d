"""What a judge ("green") agent receives and returns."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["TIE", "EvalRequest", "EvalResult"]

#: The ``winner`` of an evaluation that no side won.
TIE = "tie"


class EvalRequest(msgspec.Struct, forbid_unknown_fields=False):
    """The request a green agent evaluates: who plays which role (role → agent URL) and the
    scenario's ``[config]``."""

    participants: dict[str, str]
    config: dict[str, Any] = msgspec.field(default_factory=dict)


class EvalResult(msgspec.Struct):
    """The outcome: the winning role (or :data:`TIE`), why, and the scores (role → criterion
    → score)."""

    winner: str
    reason: str
    scores: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)
    detail: dict[str, Any] = msgspec.field(default_factory=dict)
