"""Options of built-in and Python agents: an unknown one is refused, naming the valid ones."""

from __future__ import annotations

import subprocess
import sys

import pytest

from a2a_hub.agents.echo import EchoExecutor
from a2a_hub.agents.llm import LLMExecutor
from a2a_hub.agents.loader import build_executor
from a2a_hub.settings import SettingsError, parse_agent_spec


def build(text: str) -> object:
    return build_executor(parse_agent_spec(text))


def test_known_options_are_taken() -> None:
    echo = build("echo?reply=message")
    assert isinstance(echo, EchoExecutor) and echo.reply_mode == "message"
    llm = build("helper=llm?instruction=Be brief.&provider=scripted&delay=0")
    assert isinstance(llm, LLMExecutor) and llm.instruction == "Be brief."


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("echo?bogus=1", "agent 'echo': unknown option 'bogus' for kind 'echo'; valid options: "),
        (
            "helper=llm?instructions=Be brief.&provider=scripted",
            "agent 'helper': unknown option 'instructions' for LLMExecutor; valid options: "
            "instruction, provider, model",
        ),
        (
            "helper=llm?provider=openai&n_ctx=512",
            "unknown option 'n_ctx' for LLMExecutor; valid options: instruction",
        ),
        (
            "pro=a2a_hub.scenarios.debate:Debater?stance=pro&provider=scripted&sides=2",
            "agent 'pro': unknown option 'sides' for Debater; valid options: stance, style",
        ),
        ("helper=llm?provider=gpt", "unknown LLM provider 'gpt'; known providers"),
    ],
)
def test_unknown_options_are_refused_with_the_valid_ones(spec: str, words: str) -> None:
    with pytest.raises(SettingsError) as caught:
        build(spec)
    assert words in str(caught.value)


def test_the_valid_options_include_the_providers() -> None:
    with pytest.raises(SettingsError) as caught:
        build("helper=llm?provider=openai&nope=1")
    message = str(caught.value)
    assert "max_tokens, temperature, history_turns" in message
    assert "for LLM provider openai: timeout, tries" in message
    with pytest.raises(SettingsError, match="for LLM provider embedded: n_ctx, n_threads"):
        build("helper=llm?provider=embedded&nope=1")


def test_the_tool_options_and_the_new_kinds_are_taken_and_listed() -> None:
    llm = build(
        "calc=llm?provider=scripted&mcp_servers=http://127.0.0.1:1/mcp&tools=add,shout"
        "&max_steps=3&tool_timeout=2&exit_tool=true"
    )
    assert isinstance(llm, LLMExecutor)
    assert [s.url for s in llm.servers] == ["http://127.0.0.1:1/mcp"]
    assert (llm.tool_names, llm.max_steps, llm.tool_timeout, llm.exit_tool) == (
        {"add", "shout"},
        3,
        2.0,
        True,
    )
    with pytest.raises(SettingsError) as caught:
        build("calc=llm?provider=scripted&max_step=3")
    message = str(caught.value)
    assert "unknown option 'max_step' for LLMExecutor" in message
    assert "mcp_servers, tools, tool_timeout, max_steps, exit_tool" in message
    assert "links" not in message
    with pytest.raises(SettingsError, match="unknown option 'links' for kind 'llm'"):
        build("calc=llm?provider=scripted&links=x")
    with pytest.raises(SettingsError) as caught:
        build("far=remote?url=http://127.0.0.1:1/a2a/x&stream=no")
    message = str(caught.value)
    assert (
        "agent 'far': unknown option 'stream' for RemoteExecutor; valid options: url, " in message
    )
    assert "streaming" in message and "links" not in message
    with pytest.raises(SettingsError, match="unknown option 'child' for ParallelExecutor"):
        build("both=parallel?child=a")


@pytest.mark.timeout(900)  # a process start: slow on a busy machine, never a failure for it
def test_serve_refuses_an_unknown_option_in_one_line() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "a2a_hub", "serve", "--agent", "llm?instructions=hi", "--port", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode != 0
    assert "unknown option 'instructions'" in out.stderr and "instruction," in out.stderr
    assert "Traceback" not in out.stderr
