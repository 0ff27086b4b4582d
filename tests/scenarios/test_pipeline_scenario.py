"""The shipped pipeline scenario (remote + tool-using llm in a sequential composite), run
offline with ``a2a-hub run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import ROOT, assert_all_gone, free_port, pids

pytest.importorskip("mcp")

SCENARIO = ROOT / "scenarios" / "pipeline" / "scenario.toml"


def test_the_pipeline_scenario_runs_offline(tmp_path: Path) -> None:
    # the ports appear as endpoints and as --port: move both to free ones
    text = SCENARIO.read_text()
    for port in ("9030", "9031", "9032"):
        new = str(free_port())
        text = text.replace(f"127.0.0.1:{port}", f"127.0.0.1:{new}").replace(
            f"--port {port}", f"--port {new}"
        )
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(text)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "a2a_hub",
            "run",
            str(scenario),
            "--out",
            str(tmp_path / "results.json"),
            "--run-dir",
            str(tmp_path / "run"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    try:
        assert out.returncode == 0, out.stdout + out.stderr
        assert "3/3 agents ready" in out.stdout
        doc = json.loads((tmp_path / "results.json").read_text())
        result = doc["result"]
        assert result["winner"] == "pipeline"
        assert result["scores"] == {"pipeline": {"correct": 3, "wrong": 0}}
        answers = [case["answer"] for case in result["detail"]["cases"]]
        assert answers[0] == "[scripted] Tool results: add → 42; shout → CITIES!"
    finally:
        assert_all_gone(pids(tmp_path))
