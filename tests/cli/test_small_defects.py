"""The small newcomer defects of issue 30, item 9: each one line to fix, each tested here
(or beside the code it is about, as the docstrings say)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.cli import MODULE, env


def a2a_hub(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MODULE, *args],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin,
    )


def test_config_naming_a_directory_is_one_line(tmp_path: Path) -> None:
    for command in (["serve", "-c", "."], ["keys", "list", "-c", "."]):
        out = a2a_hub(*command, cwd=tmp_path)
        assert out.returncode == 2, out
        assert "Traceback" not in out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "is a directory" in lines[0], out.stderr
