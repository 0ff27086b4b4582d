"""The pipeline scenario: a judge checks a ``sequential`` pipeline of a ``remote`` agent and
a tool-using ``llm`` agent, all offline (``a2a-hub run scenarios/pipeline/scenario.toml``).

* :class:`Planner` (its own hub, its own process) turns a question such as
  ``What is 19 plus 23? Say "cities" loudly.`` into a plan naming tools:
  ``add {"a": 19, "b": 23} then shout {"text": "cities"}``;
* the pipeline hub hosts ``planner`` (kind ``remote``, forwarding to the Planner),
  ``calc`` (kind ``llm`` on the ``scripted`` provider, with the MCP tools of
  :mod:`a2a_hub.scenarios.pipeline_tools`) and ``pipeline`` (kind ``sequential`` over both);
* :class:`PipelineJudge` asks the pipeline each question of ``config.cases`` and checks
  that the answer holds every expected piece; one point per correct case.
"""

from __future__ import annotations

import json
import re
from typing import Any

from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_hub.scenarios.green import GreenAgent, Participants
from a2a_hub.scenarios.models import EvalRequest, EvalResult

__all__ = ["PipelineJudge", "Planner", "plan_for"]

ROLE = "pipeline"


def plan_for(question: str) -> str:
    """The tool plan for a question: ``add`` for two numbers, ``shout`` for a quoted word."""
    steps = []
    numbers = re.findall(r"-?\d+", question)
    if len(numbers) >= 2:
        steps.append("add " + json.dumps({"a": int(numbers[0]), "b": int(numbers[1])}))
    quoted = re.search(r"[\"“']([^\"”']+)[\"”']", question)
    if quoted:
        steps.append("shout " + json.dumps({"text": quoted.group(1)}))
    return " then ".join(steps) if steps else "no tool applies"


class Planner(AgentExecutor):
    """Answers a question with the plan of tool calls that would answer it."""

    name = "Planner"
    description = "Turns a question into a plan of tool calls (add, shout)."

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        plan = plan_for(ctx.text)
        await updater.artifact(f"Plan: {plan}", name="plan")
        await updater.complete(f"Plan: {plan}")


def _cases(config: dict[str, Any]) -> list[dict[str, Any]] | str:
    cases = config.get("cases")
    if not isinstance(cases, list) or not cases:
        return "config.cases must list at least one {question, expect} table"
    for i, case in enumerate(cases):
        if not isinstance(case, dict) or not isinstance(case.get("question"), str):
            return f"config.cases[{i}].question must be a string"
        expect = case.get("expect")
        if not isinstance(expect, list) or not all(isinstance(e, str) for e in expect):
            return f"config.cases[{i}].expect must be a list of strings"
    return cases


class PipelineJudge(GreenAgent):
    """Asks the ``pipeline`` participant every case and scores the answers."""

    name = "Pipeline judge"
    description = "Checks a pipeline agent's answers to config.cases against what is expected."
    required_roles = (ROLE,)

    def validate_request(self, request: EvalRequest) -> str | None:
        problems = [p for p in (super().validate_request(request),) if p]
        cases = _cases(request.config)
        if isinstance(cases, str):
            problems.append(cases)
        return "; ".join(problems) or None

    async def run_eval(self, request: EvalRequest, updater: TaskUpdater) -> EvalResult:
        cases = _cases(request.config)
        assert isinstance(cases, list)
        url = request.participants[ROLE]
        people = Participants()
        results = []
        try:
            for n, case in enumerate(cases, 1):
                answer = await people.talk(url, case["question"], new_conversation=True)
                missing = [e for e in case["expect"] if e not in answer]
                verdict = "correct" if not missing else f"missing {', '.join(missing)}"
                await self.say(
                    updater, f"{case['question']}\n→ {answer}\n({verdict})", role=ROLE, round=n
                )
                results.append({"question": case["question"], "answer": answer, "missing": missing})
        finally:
            await people.close()
        correct = sum(1 for r in results if not r["missing"])
        return EvalResult(
            winner=ROLE if correct == len(results) else "none",
            reason=f"{correct} of {len(results)} answers held everything expected",
            scores={ROLE: {"correct": correct, "wrong": len(results) - correct}},
            detail={"cases": results},
        )
