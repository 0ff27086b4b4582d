"""Every ``a2a-hub …`` command and every route the README names exists (issue 30, item 6).

Commands: each ``a2a-hub`` line of a code block and each inline `` `a2a-hub …` ``, walked
through the command groups word by word.  Routes: each ``METHOD /path`` in inline code and
each path of the README's tables of routes, asked of a hub with a registry and an admin key;
a missing route answers "No route …" (or "No admin route …"), a present one anything else.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer

from a2a_hub import AgentSpec, Hub, Settings, create_app
from a2a_hub.cli import app

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
WORD = re.compile(r"[a-z][a-z-]*$")


def readme_commands() -> set[str]:
    lines: list[str] = []
    for block in re.findall(r"```\w*\n(.*?)```", README, re.S):
        lines += [m.group(1) for m in re.finditer(r"^\s*(?:\$ )?a2a-hub (.*)$", block, re.M)]
    lines += re.findall(r"`a2a-hub ([^`]*)`", README)
    return {line.strip() for line in lines}


def unknown_command(line: str) -> str | None:
    """The words of ``line`` that name no command, or None when they do."""
    command: Any = typer.main.get_command(app)
    walked = ["a2a-hub"]
    for word in line.split():
        if not hasattr(command, "commands"):  # a command, not a group
            return None
        if not WORD.match(word):  # an option, URL, placeholder: the group's own business
            return None if len(walked) > 1 else f"{line!r} names no command"
        sub = command.commands.get(word)
        if sub is None:
            return f"{' '.join([*walked, word])}: no such command"
        command, walked = sub, [*walked, word]
    return None


def test_the_readme_names_commands() -> None:
    found = readme_commands()
    assert {"keys rotate-signing", "keys create --all-agents --name root --scope admin"} & found
    assert len(found) > 20


@pytest.mark.parametrize("line", sorted(readme_commands()))
def test_every_command_the_readme_names_exists(line: str) -> None:
    assert unknown_command(line) is None, unknown_command(line)


def test_keys_rotate_signing_runs(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    store = f"sqlite:///{tmp_path}/h.db"
    out = CliRunner().invoke(app, ["keys", "rotate-signing", "--store", store])
    assert out.exit_code == 0, out.output
    assert "new signing key" in out.stdout


ROUTE = re.compile(r"`(GET|POST|PUT|DELETE) (/[^` ]*)`")


def readme_routes() -> set[tuple[str, str]]:
    routes = set(ROUTE.findall(README))
    for row in re.findall(r"^\s*\| (`(?:GET|POST|PUT|DELETE) .*?) \|", README, re.M):
        routes |= set(ROUTE.findall(row))
    bare = re.findall(r"`(/(?:a2a|admin|\.well-known)[^` ]*)`", README)
    routes |= {("ANY", p) for p in bare if not p.endswith("/ws")}  # ws: test_websocket.py
    return {(m, p.split("?")[0]) for m, p in routes}


def concrete(path: str) -> str:
    """A path of the README with its placeholders filled (``{id}`` of an agent: echo)."""
    path = re.sub(r"^/a2a/\{[^}]+\}", "/a2a/echo", path)
    path = re.sub(r"^/(agents|mcp-servers)/", r"/a2a/echo/\1/", path)  # agent-relative
    for agent in ("{agent}", "{agent_id}"):
        path = path.replace(agent, "echo")
    return re.sub(r"\{[^}]+\}", "x", path)


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    settings = Settings.from_flat(
        agents=[AgentSpec(id="echo", kind="echo")],
        store="memory://",
        default_agent="echo",
        registry=f"sqlite:///{tmp_path}/registry.db",
    )
    hub = Hub(settings)
    await hub.start()
    assert hub.registry is not None
    key, _ = await hub.registry.create_key(scopes=["admin"], name="root")
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(
        transport=transport, base_url="http://127.0.0.1", follow_redirects=True
    ) as c:
        yield c, key
    await hub.close()


def test_the_readme_names_routes() -> None:
    found = readme_routes()
    assert ("GET", "/admin/v1/agents") in found and ("GET", "/healthz") in found
    assert ("ANY", "/admin/v1") in found


async def test_every_route_the_readme_names_exists(
    client: tuple[httpx.AsyncClient, str],
) -> None:
    http, key = client
    missing = []
    for method, path in sorted(readme_routes()):
        if not path.startswith(("/a2a", "/admin", "/.well-known", "/tasks", "/message",
                                "/healthz", "/readyz", "/metrics", "/version", "/chat",
                                "/agents")) and path != "/":  # fmt: skip
            continue  # a file's path (/etc/…), not a route
        body = {} if method in ("POST", "PUT") else None
        asked = "GET" if method == "ANY" else method
        r = await http.request(asked, concrete(path), json=body, headers={"X-API-Key": key})
        message = (
            r.json().get("error", {}).get("message", "")
            if r.headers.get("content-type", "").startswith("application/json")
            else ""
        )
        if (r.status_code == 405 and method != "ANY") or message.startswith(
            ("No route", "No admin route")
        ):
            missing.append(f"{method} {path} ({concrete(path)}): {r.status_code} {message}")
    assert not missing, "\n".join(missing)
