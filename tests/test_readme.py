"""The README as a newcomer follows it: its code runs, its settings table is complete.

The code blocks marked ``<!-- readme-test: NAME -->`` (and the agent and hub.toml they
rely on) run against real servers, with only the port changed.
"""

from __future__ import annotations

import importlib
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from a2a_hub.settings.reference import markdown_table
from tests.support.cli import MODULE, env, free_port, say, serving

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def block(marker: str) -> str:
    """The code block right after ``<!-- readme-test: marker -->``."""
    found = re.search(rf"<!-- readme-test: {marker} -->\n```\w*\n(.*?)```", README, re.S)
    assert found, f"no code block marked {marker!r} in the README"
    return found.group(1)


def block_starting(first_line: str) -> str:
    """The code block whose first line is ``first_line``."""
    found = re.search(rf"```\w*\n({re.escape(first_line)}\n.*?)```", README, re.S)
    assert found, f"no code block starting with {first_line!r} in the README"
    return found.group(1)


def on_port(code: str, url: str) -> str:
    assert "http://127.0.0.1:8000" in code
    return code.replace("http://127.0.0.1:8000", url)


def run_python(code: str, cwd: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_settings_reference_lists_every_setting() -> None:
    found = re.search(r"<!-- settings:start -->\n(.*?)<!-- settings:end -->", README, re.S)
    assert found, "the README has no settings table"
    assert found.group(1) == markdown_table(), (
        "the README's settings table is out of date: paste `python -m a2a_hub.settings`"
    )
    out = subprocess.run(
        [sys.executable, "-m", "a2a_hub.settings"], env=env(), capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout == markdown_table()


def test_license_is_the_apache_license_pyproject_names() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "Apache-2.0"}


def test_no_example_names_an_agent_that_does_not_exist() -> None:
    # the agents of examples/ that the README serves are there
    served = re.findall(r"--agent (\w+)=(examples\.\w+):(\w+)", README)
    assert {agent for agent, _, _ in served} >= {"pizza", "calc"}
    for _, module, attr in served:
        assert hasattr(importlib.import_module(module), attr), f"{module}:{attr}"
    # /a2a/pizza is the a2a-sdk example's, served as above
    assert "--agent pizza=examples.a2a_sdk_pizza:PizzaExecutor" in README


def test_the_sdk_snippet_sends_a_message_and_prints_the_answer(tmp_path: Path) -> None:
    pytest.importorskip("a2a.client")
    with serving(MODULE, "--agent", "echo", "--store", "memory://", cwd=tmp_path) as (url, _):
        printed = run_python(on_port(block("sdk"), url), tmp_path)
    assert printed.strip() == "TASK_STATE_COMPLETED echo: hello"


def write_agent(folder: Path) -> None:
    (folder / "mymod.py").write_text(block_starting("# mymod.py"))


def test_the_agent_of_the_readme_and_the_python_client(tmp_path: Path) -> None:
    write_agent(tmp_path)
    with serving(
        MODULE, "--agent", "helper=mymod:Helper", "--store", "memory://", cwd=tmp_path
    ) as (url, _):
        printed = run_python(on_port(block("client"), url), tmp_path).splitlines()
    assert printed[0] == "input-required Which product?"
    numbers = [int(line.split()[0]) for line in printed[1:]]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert [line.split(" ", 1)[1] for line in printed[1:]] == [
        "working",
        "About the hub: it hosts many agents.",
        "completed",
    ]


def test_the_hub_toml_of_the_readme(tmp_path: Path) -> None:
    write_agent(tmp_path)
    (tmp_path / "hub.toml").write_text(block_starting("# hub.toml"))
    with serving(MODULE, "--config", "hub.toml", cwd=tmp_path) as (url, _):
        card = httpx.get(f"{url}/.well-known/agent-card.json").json()
        assert card["name"] == "Helper"  # the default agent, at the root
        answer = say(f"{url}/a2a/echo", "hi")
        assert answer["message"]["parts"] == [{"text": "echo: hi"}]  # type: ignore[index]
    assert (tmp_path / "data" / "hub.db").exists()  # three slashes: relative


def test_embedding_the_hub_in_another_asgi_app(tmp_path: Path) -> None:
    write_agent(tmp_path)
    (tmp_path / "myapp.py").write_text(block("embed"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # as the README says: uvicorn myapp:app (its --app-dir . finds myapp and mymod)
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "myapp:app", "--port", str(port)],
        cwd=tmp_path,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read()  # type: ignore[union-attr]
            try:
                if httpx.get(f"{url}/agents/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "uvicorn did not start in 60 s"
            time.sleep(0.1)
        assert httpx.get(url).text == "my own app"
        agent = f"{url}/agents/a2a/helper"
        # the card, also where the JavaScript SDK looks for it (the URL with a slash)
        card = httpx.get(f"{agent}/.well-known/agent-card.json").json()
        assert card["supportedInterfaces"][0]["url"] == agent and card["url"] == agent
        first = say(agent, "Tell me about a product")
        task = first["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # type: ignore[index]
        assert httpx.get(f"{url}/agents/").json()["agents"][0]["url"] == agent
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert (tmp_path / "data" / "hub.db").exists()
