"""scenarios/debate-adk/scenario.toml (founding note 004 as written): the debaters are Google
ADK agents served by a2a-hub, their model the hub's own LLM reached through LiteLLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scenarios.test_scenario import check_result, free_ports, leftovers, run, slow_ok
from tests.support.processes import ROOT, assert_all_gone, pids

pytest.importorskip("google.adk", reason="the adk extra is not installed")

__all__ = ["leftovers"]  # the fixture, used by name

SCENARIO = ROOT / "scenarios" / "debate-adk" / "scenario.toml"


def on_free_ports(tmp: Path) -> Path:
    """The shipped scenario file with its three ports replaced by free ones."""
    text = SCENARIO.read_text()
    for old, new in zip(("9009", "9018", "9019"), free_ports(3), strict=True):
        text = text.replace(old, str(new))
    path = tmp / "scenario.toml"
    path.write_text(text)
    return path


@slow_ok
def test_the_adk_debate_completes_offline_with_both_sides_scores(
    tmp_path: Path, leftovers: list[int]
) -> None:
    out = run(on_free_ports(tmp_path), tmp_path, "scripted")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3/3 agents ready" in out.stdout
    # the debaters are the ADK agents (their cards carry the ADK agents' names)
    assert "pro_debater  http://" in out.stdout and "con_debater  http://" in out.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    check_result(doc, rounds=3)
    turns = [t["text"] for t in doc["result"]["detail"]["transcript"]]
    # the scripted model answers through the hub's LLM endpoint, and each debater's ADK
    # session holds its side of the debate: its second and third turns say so
    assert all(t.startswith("[scripted]") for t in turns)
    assert [t.split(" ")[1] for t in turns] == ["You", "You", "About", "About", "Consider",
                                                "Consider"]  # fmt: skip
    assert "Your position: Cats are better" in turns[0]
    assert "Your position: Dogs are better" in turns[1]
    assert "Scores" in out.stdout and "Result: a tie" in out.stdout
    assert_all_gone(pids(tmp_path))
