"""Start-up checks of what an agent needs (issue 30, item 7): each refusal is one or two
lines before the banner, naming what to install; a crashing MCP server's error quotes its
stderr; an OpenAI-compatible provider's failure is in the server's log."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import MODULE, env, free_port

#: Processes start slowly on a busy machine: never a failure for that.
pytestmark = pytest.mark.timeout(900)


def refused(cwd: Path, *args: str, hide: str | None = None) -> list[str]:
    """``serve ARGS`` (with the module ``hide`` made unimportable): its one or two lines."""
    environment = env()
    if hide is not None:  # as if the extra were not installed
        (cwd / "sitecustomize.py").write_text(f"import sys\nsys.modules[{hide!r}] = None\n")
        environment["PYTHONPATH"] = f"{cwd}:{environment['PYTHONPATH']}"
    out = subprocess.run(
        [*MODULE, "serve", "--port", str(free_port()), "--store", "memory://", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0, out.stderr
    assert "Traceback" not in out.stderr + out.stdout, out.stderr
    assert "a2a-hub serving" not in out.stderr, "the banner came before the check"
    lines = out.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("error: "), out.stderr
    return lines


def test_a_public_url_without_a_scheme_is_refused(tmp_path: Path) -> None:
    lines = refused(tmp_path, "--agent", "echo", "--public-url", "hub.example.com")
    assert "--public-url 'hub.example.com'" in lines[0]
    assert "https://hub.example.com" in lines[0]


def test_an_llm_agent_without_the_embedded_extra_is_refused_at_start(tmp_path: Path) -> None:
    lines = refused(tmp_path, "--agent", "bot=llm", hide="xllamacpp")
    assert "bot" in lines[0] and "a2a-hub[embedded]" in " ".join(lines)


def test_mcp_tools_without_the_mcp_extra_are_refused_at_start(tmp_path: Path) -> None:
    spec = 'bot=llm?{"provider": "scripted", "mcp_servers": "stdio:python -c pass"}'
    lines = refused(tmp_path, "--agent", spec, hide="mcp")
    assert "a2a-hub[mcp]" in " ".join(lines) and "No module named" not in " ".join(lines)


async def test_a_crashing_mcp_server_is_reported_with_its_stderr() -> None:
    pytest.importorskip("mcp")
    from a2a_hub.settings import MCPServerSpec
    from a2a_hub.tools.mcp import MCPError, MCPSession

    crash = "import sys; sys.stderr.write('boom: GITHUB_TOKEN is not set\\n'); sys.exit(3)"
    spec = MCPServerSpec(name="bad", command=sys.executable, args=["-c", crash])
    session = MCPSession(spec)
    try:
        with pytest.raises(MCPError) as info:
            await session.start()
    finally:
        await session.close()
    assert "boom: GITHUB_TOKEN is not set" in str(info.value), str(info.value)


async def test_an_openai_compatible_failure_is_logged_on_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The provider answers 401: the task fails with the reason, and the log says it too."""
    from tests.server.test_ops import running, send_params
    from tests.support.hub import make_hub

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = b'{"error": {"message": "Incorrect API key provided"}}'
        writer.write(
            b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    caplog.set_level(logging.WARNING)
    agent = f"llm?provider=openai&base_url=http://127.0.0.1:{port}/v1&api_key=sk-x&model=m"
    try:
        async with running(make_hub({"bot": agent})) as c:
            r = await c.post("/a2a/bot/message:send", json=send_params("hello"))
    finally:
        server.close()
        await server.wait_closed()
    task = r.json()["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    logged = [rec.getMessage() for rec in caplog.records if rec.levelno >= logging.WARNING]
    assert any("HTTP 401" in line and task["id"] in line for line in logged), logged
