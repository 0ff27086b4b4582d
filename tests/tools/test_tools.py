"""``llm`` agents using MCP tools (stdio and streamable HTTP), on the scripted provider."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from a2a_hub import Hub, metrics
from a2a_hub.client import A2AClient
from a2a_hub.engine.executor import text_of
from a2a_hub.protocol.types import Role, Task, TaskState
from a2a_hub.settings import AgentSpec, MCPServerSpec, Settings, SettingsError, load_settings
from a2a_hub.stores.memory import MemoryStore
from tests.support.hub import LiveServer
from tests.support.processes import MCP_TOOLS_SERVER, mcp_http_server
from tests.support.ws import connect, send, terminal, until, ws_url

pytest.importorskip("mcp")

STDIO = MCPServerSpec(
    name="calc",
    transport="stdio",
    command=sys.executable,
    args=[str(MCP_TOOLS_SERVER)],
)
ASK = 'Please add {"a": 2, "b": 3} and shout {"text": "hello"}.'


@pytest.fixture(scope="module")
def http_mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with mcp_http_server(tmp_path_factory.mktemp("mcp")) as url:
        yield url


def hub_with(servers: list[MCPServerSpec], **agents: dict[str, Any]) -> Hub:
    specs = [AgentSpec(id=name, kind="llm", options=options) for name, options in agents.items()]
    settings = Settings.from_flat(agents=specs, store="memory://", mcp_servers=servers)
    return Hub(settings, store=MemoryStore())


@pytest.fixture
async def live(http_mcp: str) -> AsyncIterator[LiveServer]:
    http = MCPServerSpec(name="web", transport="http", url=http_mcp, headers={"x-team": "tests"})
    tools = {"provider": "scripted"}
    hub = hub_with(
        [STDIO, http],
        calc={**tools, "mcp_servers": ["calc"], "tools": ["add", "shout"]},
        web={**tools, "mcp_servers": "web"},
        twin={**tools, "mcp_servers": ["calc"]},
        hasty={**tools, "mcp_servers": ["calc"], "tool_timeout": 1},
        bounded={**tools, "mcp_servers": ["calc"], "max_steps": 1},
    )
    async with LiveServer(hub) as server:
        yield server


def tool_events(task: Task) -> list[dict[str, Any]]:
    return [
        p.data
        for m in task.history or []
        if m.role is Role.AGENT
        for p in m.parts
        if isinstance(p.data, dict) and p.data.get("kind", "").startswith("tool_")
    ]


async def ask(live: LiveServer, agent: str, text: str) -> Task:
    async with await A2AClient.connect(f"{live.url}/a2a/{agent}") as client:
        reply = await client.send(text)
        assert isinstance(reply, Task)
        return await client.get_task(reply.id)  # what GetTask shows


@pytest.mark.parametrize("agent", ["calc", "web"], ids=["stdio", "streamable-http"])
async def test_an_llm_agent_calls_both_tools_and_answers_with_their_results(
    live: LiveServer, agent: str
) -> None:
    def calls() -> float:
        labels = {"tool": "add", "outcome": "ok"}
        return metrics.REGISTRY.get_sample_value("a2a_tool_calls_total", labels) or 0.0

    before = calls()
    task = await ask(live, agent, ASK)
    assert task.status.state is TaskState.COMPLETED
    assert calls() == before + 1
    assert task.status.message is not None
    assert text_of(task.status.message.parts) == (
        "[scripted] Tool results: add → 5; shout → HELLO!"
    )
    events = tool_events(task)
    assert [(e["kind"], e["tool_id"]) for e in events] == [
        ("tool_call", "add"),
        ("tool_response", "add"),
        ("tool_call", "shout"),
        ("tool_response", "shout"),
    ]
    assert events[0]["params"] == {"a": 2, "b": 3}
    assert events[1]["result"] == {"status": "success", "data": 5}
    assert events[3]["result"] == {"status": "success", "data": "HELLO!"}
    assert events[0]["tool_call_id"] == events[1]["tool_call_id"]


async def test_tool_calls_stream_as_working_statuses(live: LiveServer) -> None:
    async with await A2AClient.connect(f"{live.url}/a2a/calc") as client:
        seen = []
        async for item in client.stream(ASK):
            update = item.response.status_update
            if update is not None and update.status.message is not None:
                for part in update.status.message.parts:
                    if isinstance(part.data, dict):
                        seen.append((update.status.state, part.data["kind"]))
    assert seen == [(TaskState.WORKING, "tool_call"), (TaskState.WORKING, "tool_response")] * 2


async def test_ag_ui_shows_the_server_side_tool_steps(live: LiveServer) -> None:
    """An AG-UI front end driving an llm agent sees its MCP tool steps as tool calls,
    every event valid for the ag-ui-protocol package's models."""
    import json

    import httpx

    from tests.server.test_ag_ui import run, run_input, types

    body = run_input("t-tools", [{"id": "u1", "role": "user", "content": ASK}])
    async with httpx.AsyncClient(base_url=live.url, timeout=60) as http:
        events = await run(http, "calc", body)
    kinds = types(events)
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    starts = [i for i, kind in enumerate(kinds) if kind == "TOOL_CALL_START"]
    assert [events[i].tool_call_name for i in starts] == ["add", "shout"]
    for i in starts:
        assert kinds[i : i + 3] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert json.loads(events[starts[0] + 1].delta) == {"a": 2, "b": 3}
    results = [e for e in events if e.type.value == "TOOL_CALL_RESULT"]
    assert [r.tool_call_id for r in results] == [events[i].tool_call_id for i in starts]
    assert [json.loads(r.content)["data"] for r in results] == [5, "HELLO!"]
    text = "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert "add → 5" in text


async def test_a_tool_that_hangs_hits_its_timeout_and_the_task_says_so(live: LiveServer) -> None:
    task = await ask(live, "hasty", 'hang for a while, then add {"a": 1, "b": 1}')
    assert task.status.state is TaskState.COMPLETED
    [hang_call, hang_result, _, add_result] = tool_events(task)
    assert hang_call["tool_id"] == "hang"
    assert hang_result["result"]["status"] == "error"
    assert "timed out after 1 s" in hang_result["result"]["error_message"]
    assert add_result["result"] == {"status": "success", "data": 2}  # the session lives on
    assert task.status.message is not None
    assert "hang → tool 'hang' of MCP server 'calc' timed out after 1 s" in text_of(
        task.status.message.parts
    )


async def test_tools_outside_the_agents_list_are_not_offered(live: LiveServer) -> None:
    task = await ask(live, "calc", "hang now")
    assert tool_events(task) == []  # 'hang' is not among calc's tools
    assert task.status.state is TaskState.COMPLETED


async def test_max_steps_ends_a_model_that_keeps_calling_tools(live: LiveServer) -> None:
    task = await ask(live, "bounded", ASK)
    assert task.status.state is TaskState.FAILED
    assert task.status.message is not None
    assert "max_steps=1" in text_of(task.status.message.parts)


def _servers_started_by_me() -> list[int]:
    """The stdio MCP servers this test process runs (its children, zombies aside)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        stdio = b"http" not in cmdline  # the streamable-HTTP server is a child too
        if ppid == os.getpid() and stdio and any(b"mcp_tools_server.py" in a for a in cmdline):
            found.append(int(entry.name))
    return found


async def test_one_session_per_server_per_process(live: LiveServer) -> None:
    for agent in ("calc", "twin", "calc", "hasty"):
        task = await ask(live, agent, 'add {"a": 1, "b": 2}')
        assert task.status.state is TaskState.COMPLETED
    assert len(_servers_started_by_me()) == 1


async def test_stdio_servers_stop_with_the_hub(http_mcp: str) -> None:
    hub = hub_with([STDIO], calc={"provider": "scripted", "mcp_servers": ["calc"]})
    async with LiveServer(hub) as server:
        await ask(server, "calc", 'add {"a": 1, "b": 2}')
        assert len(_servers_started_by_me()) == 1
    assert _servers_started_by_me() == []


async def test_an_unreachable_mcp_server_fails_the_task_saying_which() -> None:
    gone = MCPServerSpec(name="gone", transport="http", url="http://127.0.0.1:9/mcp", timeout=3)
    hub = hub_with([gone], calc={"provider": "scripted", "mcp_servers": ["gone"]})
    async with LiveServer(hub) as server:
        task = await ask(server, "calc", "add")
    assert task.status.state is TaskState.FAILED
    assert task.status.message is not None
    assert "cannot connect to MCP server 'gone'" in text_of(task.status.message.parts)


def test_mcp_servers_come_from_hub_toml(tmp_path: Path) -> None:
    config = tmp_path / "hub.toml"
    config.write_text(
        """
[[mcp_servers]]
name = "calc"
transport = "stdio"
command = "python"
args = ["tools.py"]
timeout = 5

[[mcp_servers]]
name = "web"
transport = "http"
url = "http://127.0.0.1:8931/mcp"
headers = { Authorization = "Bearer abc" }

[[agents]]
id = "calc"
kind = "llm"
options = { provider = "scripted", mcp_servers = ["calc", "web"], max_steps = 4 }
"""
    )
    settings = load_settings(config, env={})
    assert [s.name for s in settings.mcp_servers] == ["calc", "web"]
    assert settings.mcp_servers[1].headers == {"Authorization": "Bearer abc"}
    hub = Hub(settings, store=MemoryStore())
    executor = hub.agents["calc"].executor
    assert [s.name for s in executor.servers] == ["calc", "web"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('name = "x"\ntransport = "ftp"', "transport must be 'stdio' or 'http'"),
        ('name = "x"\ntransport = "stdio"', "needs command"),
        ('name = "x"\ntransport = "http"', "needs url"),
    ],
)
def test_bad_mcp_server_definitions_are_refused(tmp_path: Path, table: str, message: str) -> None:
    config = tmp_path / "hub.toml"
    config.write_text(f"[[mcp_servers]]\n{table}\n")
    with pytest.raises(SettingsError, match=message):
        load_settings(config, env={})


def test_an_agent_naming_an_unknown_mcp_server_is_refused() -> None:
    with pytest.raises(SettingsError, match="unknown MCP server 'nope'"):
        hub_with([STDIO], calc={"provider": "scripted", "mcp_servers": ["nope"]})


async def test_an_llm_agents_tool_steps_are_tool_events_on_the_websocket(
    live: LiveServer,
) -> None:
    """The server-side tool run of an llm agent shows on the WebSocket channel (seed 003) as
    ``tool_call`` then ``tool_response`` events with matching ids."""
    async with connect(ws_url(live, "calc")) as ws:
        await send(ws, action="send_message", message_id=str(uuid.uuid4()), text=ASK)
        events = await until(ws, terminal)
    tools = [e for e in events if e["event"] in ("tool_call", "tool_response")]
    assert [e["event"] for e in tools] == ["tool_call", "tool_response"] * 2
    assert [e["tool_id"] for e in tools if e["event"] == "tool_call"] == ["add", "shout"]
    assert tools[0]["tool_call_id"] == tools[1]["tool_call_id"]
    assert tools[2]["tool_call_id"] == tools[3]["tool_call_id"] != tools[0]["tool_call_id"]
    assert tools[0]["params"] == {"a": 2, "b": 3}
    assert tools[1]["result"] == {"status": "success", "data": 5}
