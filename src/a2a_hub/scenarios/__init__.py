"""Scenarios: the runner, and the kit for judge ("green") agents that evaluate others."""

from a2a_hub.scenarios.green import (
    GreenAgent,
    ParticipantError,
    Participants,
    parse_eval_request,
    talk_to_agent,
)
from a2a_hub.scenarios.models import TIE, EvalRequest, EvalResult

__all__ = [
    "TIE",
    "EvalRequest",
    "EvalResult",
    "GreenAgent",
    "ParticipantError",
    "Participants",
    "parse_eval_request",
    "talk_to_agent",
]
