"""The command line for a newcomer: version, -h, help that says what each option takes, and
one-line errors that name the option.  Real processes, as a person runs them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from a2a_hub import __version__
from a2a_hub.settings import setting_fields
from tests.support.processes import ROOT

MODULES = [[sys.executable, "-m", "a2a_hub"], [sys.executable, "-m", "a2a_hub.cli"]]


def run(*args: str, cli: list[str] = MODULES[0]) -> subprocess.CompletedProcess[str]:
    # wide, so that the help does not wrap (and a long line is not mistaken for two)
    env = {**os.environ, "COLUMNS": "250"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return subprocess.run([*cli, *args], capture_output=True, text=True, timeout=60, env=env)


def one_error_line(out: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.parametrize("cli", MODULES, ids=["a2a_hub", "a2a_hub.cli"])
def test_version(cli: list[str]) -> None:
    for flag in ("--version", "-V"):
        out = run(flag, cli=cli)
        assert out.returncode == 0
        assert out.stdout.strip() == f"a2a-hub {__version__}"


def test_the_installed_script_runs() -> None:
    script = shutil.which("a2a-hub", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the a2a-hub script is not installed next to this interpreter")
    out = run("--version", cli=[script])
    assert out.returncode == 0 and out.stdout.startswith("a2a-hub ")


@pytest.mark.parametrize(
    "command", [[], ["serve"], ["send"], ["tasks"], ["tasks", "list"], ["run"]]
)
def test_dash_h_is_help(command: list[str]) -> None:
    short, long = run(*command, "-h"), run(*command, "--help")
    assert short.returncode == long.returncode == 0
    assert short.stdout == long.stdout
    assert "Usage:" in short.stdout and "Show this message and exit." in short.stdout


def test_serve_help_lists_every_setting_once_with_its_variable() -> None:
    out = run("serve", "--help")
    assert out.returncode == 0
    text = out.stdout
    for field in setting_fields():
        if field.flag is None:
            # a secret: not an option, but its variable is named
            assert f"--{field.key.replace('_', '-')}" not in text
            assert field.env in text
            continue
        rows = [line for line in text.splitlines() if re.search(rf"│ {field.flag}\s", line)]
        assert len(rows) == 1, field.flag
        assert field.env in rows[0]
        assert rows[0].count("[default:") <= 1
    # types are words a person reads, not Python's
    assert "<bool>" not in text and "<list" not in text and "<str>" not in text
    assert re.search(r"--port\s+PORT\s+Port to listen on.*\[default: 8000\]", text)
    assert re.search(r"--log-level\s+LEVEL\s+.*debug, info, warning, error, critical", text)


def test_help_brackets_survive_rich() -> None:
    text = run("serve", "--help").stdout
    assert "redis://" in text and "'a2a-hub[redis]'" in text and "'a2a-hub[postgres]'" in text
    assert "[[agents]]" in text
    agent = next(line for line in text.splitlines() if "--agent" in line)
    assert "'llm'" in agent


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "70000"], "error: --port must be a whole number from 1 to 65535; got '70000'"),
        (["--port", "0"], "error: --port must be a whole number from 1 to 65535; got '0'"),
        (
            ["--port", "eighty"],
            "error: --port must be a whole number from 1 to 65535; got 'eighty'",
        ),
        (
            ["--log-level", "loud"],
            "error: --log-level must be one of debug, info, warning, error, critical; got 'loud'",
        ),
        (
            ["--default-agent", "[nope]"],
            "error: default agent '[nope]' is not one of the agents: echo",
        ),
    ],
)
def test_serve_refuses_a_bad_option_in_one_line(args: list[str], message: str) -> None:
    out = run("serve", "--agent", "echo", "--store", "memory://", *args)
    assert out.returncode == 2
    assert one_error_line(out) == message


def test_a_bad_variable_is_named(tmp_path: Path) -> None:
    env = {**os.environ, "A2A_HUB_PORT": "99999"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [*MODULES[0], "serve", "--agent", "echo"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 2
    assert one_error_line(out) == (
        "error: A2A_HUB_PORT must be a whole number from 1 to 65535; got '99999'"
    )


def test_tasks_list_refuses_an_unknown_state_in_one_line() -> None:
    out = run("tasks", "list", "http://127.0.0.1:9/a2a/echo", "--status", "[done]")
    assert out.returncode == 2
    line = one_error_line(out)
    assert line.startswith("error: --status '[done]' is not a task state; states: submitted,")
    assert "input-required" in line
