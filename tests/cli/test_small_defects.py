"""The small newcomer defects of issue 30, item 9: each one line to fix, each tested here
(or beside the code it is about, as the docstrings say)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import MODULE, env

#: Processes start slowly on a busy machine: never a failure for that.
pytestmark = pytest.mark.timeout(900)


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


def test_make_with_no_target_lists_the_targets() -> None:
    import shutil

    from tests.support.cli import ROOT

    if shutil.which("make") is None:
        import pytest

        pytest.skip("no make on this machine")
    out = subprocess.run(["make", "-s", "-n", "-C", str(ROOT)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("sed "), out.stdout  # -n: the help recipe, nothing else
    out = subprocess.run(["make", "-s", "-C", str(ROOT)], capture_output=True, text=True)
    lines = out.stdout.splitlines()
    for target in ("help:", "demo:", "test:", "bench:"):
        assert any(line.startswith(target) for line in lines), out.stdout


def test_send_reads_its_text_from_standard_input(tmp_path: Path) -> None:
    from tests.support.cli import serving

    with serving(MODULE, "--agent", "echo", "--store", "memory://", cwd=tmp_path) as (url, _):
        out = a2a_hub(
            "send", f"{url}/a2a/echo", "-", cwd=tmp_path, stdin="a long, two-line\nquestion\n"
        )
        assert out.returncode == 0, out.stderr
        assert "echo: a long, two-line\nquestion" in out.stdout, out.stdout
        empty = a2a_hub("send", f"{url}/a2a/echo", "-", cwd=tmp_path, stdin="")
        assert empty.returncode == 2 and "standard input was empty" in empty.stderr
