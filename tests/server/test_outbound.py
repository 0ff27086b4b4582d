"""Issue 30 items 15, 17 and 19 over real sockets: one outbound address policy (push
targets, admin-added remote agents, redirects), agent cycles (refused when added, bounded
through another hub), and what the admin API may name (commands, modules)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from a2a_hub import AgentSpec
from a2a_hub.agents.hops import MAX_HOPS
from a2a_hub.client import A2AClient
from a2a_hub.engine.executor import text_of
from a2a_hub.netpolicy import address_problem
from a2a_hub.protocol.types import Task, TaskState
from a2a_hub.registry import Registry
from a2a_hub.stores.base import TaskQuery
from tests.support.cli import free_port
from tests.support.hub import LiveServer, make_hub

V10 = {"A2A-Version": "1.0"}


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def send(text: str) -> dict[str, Any]:
    return rpc(
        "SendMessage",
        {"message": {"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]}},
    )


# --------------------------------------------------------------------------- item 15


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("100.100.100.200", "non-global"),  # CGNAT 100.64.0.0/10: a cloud metadata address
        ("100.64.0.1", "non-global"),
        ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
        ("::ffff:169.254.169.254", "link-local"),  # IPv4-mapped
        ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
        ("fec0::1", "site-local"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link-local"),
    ],
)
def test_address_forms_are_refused(address: str, reason: str) -> None:
    problem = address_problem(ipaddress.ip_address(address))
    assert problem is not None and reason in problem, (address, problem)


def test_public_addresses_pass() -> None:
    for address in ("93.184.216.34", "2606:4700::1111", "2002:5db8:d822::"):  # 6to4 of public
        assert address_problem(ipaddress.ip_address(address)) is None, address


async def test_push_targets_in_new_address_forms_are_refused() -> None:
    async with LiveServer(make_hub({"echo": "echo"})) as live, httpx.AsyncClient() as http:
        task = (await http.post(f"{live.url}/a2a/echo", json=send("hi"), headers=V10)).json()
        task_id = task["result"]["task"]["id"]
        for url, reason in [
            ("https://100.100.100.200/latest/meta-data", "non-global"),
            ("https://[2002:7f00:1::]/hook", "loopback"),
            ("https://[fec0::1]/hook", "site-local"),
        ]:
            body = rpc("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": url})
            err = (await http.post(f"{live.url}/a2a/echo", json=body, headers=V10)).json()["error"]
            assert err["code"] == -32602 and reason in err["message"], (url, err)


@pytest.fixture
async def admin_hub(tmp_path: Path) -> AsyncIterator[tuple[LiveServer, dict[str, str]]]:
    port = free_port()
    hub = make_hub(
        {"echo": "echo"}, registry=f"sqlite:///{tmp_path}/reg.db", port=port, host="127.0.0.1"
    )
    async with LiveServer(hub, port=port) as live:
        assert isinstance(hub.registry, Registry)
        key, _ = await hub.registry.create_key(principal="root", scopes=["admin"])
        yield live, {"X-API-Key": key}


async def test_admin_added_remote_agents_at_local_addresses_are_refused(
    admin_hub: tuple[LiveServer, dict[str, str]],
) -> None:
    live, auth = admin_hub
    async with httpx.AsyncClient(timeout=30) as http:
        for url, reason in [
            (f"{live.url}/a2a/echo", "loopback"),
            ("http://169.254.169.254/latest", "link-local"),
            ("http://100.100.100.200/x", "non-global"),
        ]:
            spec = {"id": "r", "kind": "remote", "options": {"url": url}}
            r = await http.post(f"{live.url}/admin/v1/agents", json=spec, headers=auth)
            assert r.status_code == 400, r.text
            message = r.json()["error"]["message"]
            assert reason in message and "outbound_allow_hosts" in message, message
            spec = {"id": "c", "kind": "sequential", "options": {"children": ["echo", url]}}
            r = await http.post(f"{live.url}/admin/v1/agents", json=spec, headers=auth)
            assert r.status_code == 400 and reason in r.json()["error"]["message"]
        assert "r" not in live.hub.agents and "c" not in live.hub.agents


class Redirector:
    """Answers every request with a redirect to ``target`` (a real loopback server)."""

    def __init__(self, target: str) -> None:
        self.target = target

        async def redirect(request: Request) -> Response:
            return RedirectResponse(self.target + request.url.path, status_code=302)

        app = Starlette(routes=[Route("/{path:path}", redirect, methods=["GET", "POST"])])
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))

    async def __aenter__(self) -> Redirector:
        self._task = asyncio.ensure_future(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        await self._task
        self.sock.close()


async def test_card_redirects_pass_the_policy(tmp_path: Path) -> None:
    """127.0.0.1 is allowed, its redirect to 127.0.0.2 (loopback too, not allowed) is not:
    the remote agent's task fails naming the refused host, configured or admin-added."""
    async with Redirector("http://127.0.0.2:9") as redirector:
        hub = make_hub(
            {"conf": f"remote?url={redirector.url}/a2a/x"},
            registry=f"sqlite:///{tmp_path}/reg.db",
            outbound_allow_hosts=["127.0.0.1"],
        )
        async with LiveServer(hub) as live, httpx.AsyncClient(timeout=30) as http:
            assert isinstance(hub.registry, Registry)
            key, _ = await hub.registry.create_key(principal="root", scopes=["admin"])
            spec = {"id": "adm", "kind": "remote", "options": {"url": f"{redirector.url}/a2a/x"}}
            r = await http.post(
                f"{live.url}/admin/v1/agents", json=spec, headers={"X-API-Key": key}
            )
            assert r.status_code == 201, r.text
            for agent in ("conf", "adm"):
                got = await http.post(f"{live.url}/a2a/{agent}", json=send("hi"), headers=V10)
                task = got.json()["result"]["task"]
                said = task["status"]["message"]["parts"][0]["text"]
                assert task["status"]["state"] == "TASK_STATE_FAILED"
                assert "127.0.0.2" in said and "loopback" in said, said


async def test_allow_listed_hosts_may_be_added_and_reached(tmp_path: Path) -> None:
    far = make_hub({"echo": "echo"})
    async with LiveServer(far) as remote:
        hub = make_hub(
            {"echo": "echo"},
            registry=f"sqlite:///{tmp_path}/reg.db",
            outbound_allow_hosts=["127.0.0.0/8"],
        )
        async with LiveServer(hub) as live, httpx.AsyncClient(timeout=30) as http:
            assert isinstance(hub.registry, Registry)
            key, _ = await hub.registry.create_key(principal="root", scopes=["admin"])
            spec = {"id": "r", "kind": "remote", "options": {"url": f"{remote.url}/a2a/echo"}}
            r = await http.post(
                f"{live.url}/admin/v1/agents", json=spec, headers={"X-API-Key": key}
            )
            assert r.status_code == 201, r.text
            task = (await http.post(f"{live.url}/a2a/r", json=send("hi"), headers=V10)).json()
            assert task["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


# --------------------------------------------------------------------------- item 17


async def test_a_cycle_is_refused_when_an_agent_is_added(
    admin_hub: tuple[LiveServer, dict[str, str]],
) -> None:
    live, auth = admin_hub
    admin = f"{live.url}/admin/v1/agents"
    async with httpx.AsyncClient(timeout=30) as http:
        ping = {"id": "ping", "kind": "sequential", "options": {"children": ["echo"]}}
        assert (await http.post(admin, json=ping, headers=auth)).status_code == 201
        pong = {"id": "pong", "kind": "sequential", "options": {"children": ["ping"]}}
        assert (await http.post(admin, json=pong, headers=auth)).status_code == 201
        # ping now calling pong closes the cycle ping -> pong -> ping: refused
        ping["options"] = {"children": ["pong"]}
        r = await http.put(f"{admin}/ping", json=ping, headers=auth)
        assert r.status_code == 400
        message = r.json()["error"]["message"]
        assert "ping -> pong -> ping" in message and "cycle" in message, message
        # the same through a remote agent naming this hub's own agent (its URL allowed)
        live.hub.outbound.networks.append(ipaddress.ip_network("127.0.0.0/8"))
        remote = {"id": "ping", "kind": "remote", "options": {"url": f"{live.url}/a2a/pong"}}
        r = await http.put(f"{admin}/ping", json=remote, headers=auth)
        assert r.status_code == 400 and "ping -> pong -> ping" in r.json()["error"]["message"]
        # the old ping still answers, and a composite naming itself is refused too
        selfish = {"id": "me", "kind": "parallel", "options": {"children": ["echo", "me"]}}
        r = await http.post(admin, json=selfish, headers=auth)
        assert r.status_code == 400 and "me -> me" in r.json()["error"]["message"]
        got = await http.post(f"{live.url}/a2a/ping", json=send("hi"), headers=V10)
        assert got.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_cycle_through_another_hub_is_bounded() -> None:
    """ping (hub A) forwards to pong (hub B), which forwards to ping: each message carries
    its call depth, and the call past MAX_HOPS fails; every task ends, few are made."""
    hub_a = make_hub({"echo": "echo"})
    hub_b = make_hub({"echo": "echo"})
    async with LiveServer(hub_a) as a, LiveServer(hub_b) as b:
        hub_a.add(
            AgentSpec(id="ping", kind="remote", options={"url": f"{b.url}/a2a/pong"}),
            configured=True,
        )
        hub_b.add(
            AgentSpec(id="pong", kind="remote", options={"url": f"{a.url}/a2a/ping"}),
            configured=True,
        )
        async with await A2AClient.connect(f"{a.url}/a2a/ping") as client:
            reply = await asyncio.wait_for(client.send("loop"), 60)
        assert isinstance(reply, Task) and reply.status.state is TaskState.FAILED
        said = text_of(reply.status.message.parts) if reply.status.message else ""
        assert f"exceed {MAX_HOPS}" in said, said
        pings = (await hub_a.store.list_tasks("ping", TaskQuery(page_size=1000))).tasks
        pongs = (await hub_b.store.list_tasks("pong", TaskQuery(page_size=1000))).tasks
        assert len(pings) + len(pongs) == MAX_HOPS + 1
        assert all(t.status.state is TaskState.FAILED for t in [*pings, *pongs])


# --------------------------------------------------------------------------- item 19


async def test_the_admin_api_names_commands_and_modules_only_when_allowed(tmp_path: Path) -> None:
    marker = tmp_path / "touched"
    for allowed in (False, True):
        extra: dict[str, Any] = {}
        if allowed:
            extra = {"admin_allow_commands": ["touch"], "admin_allow_modules": ["tests.support.*"]}
        hub = make_hub(
            {"echo": "echo"}, registry=f"sqlite:///{tmp_path}/reg{allowed:d}.db", **extra
        )
        async with LiveServer(hub) as live, httpx.AsyncClient(timeout=30) as http:
            assert isinstance(hub.registry, Registry)
            key, _ = await hub.registry.create_key(principal="root", scopes=["admin"])
            auth = {"X-API-Key": key}
            admin = f"{live.url}/admin/v1"
            mcp = {"name": "sh", "transport": "stdio", "command": ["touch", str(marker)]}
            llm = {
                "id": "tooly",
                "kind": "llm",
                "options": {"provider": "scripted", "mcp_servers": f"stdio:touch {marker}"},
            }
            python = {"id": "py", "kind": "python", "executor": "tests.support.peers:Interviewer"}
            for path, body, setting in (
                ("/mcp-servers", mcp, "admin_allow_commands"),
                ("/agents", llm, "admin_allow_commands"),
                ("/agents", python, "admin_allow_modules"),
            ):
                r = await http.post(admin + path, json=body, headers=auth)
                if allowed:
                    assert r.status_code == 201, r.text
                else:
                    assert r.status_code == 400, r.text
                    assert setting in r.json()["error"]["message"]
            assert not marker.exists()  # nothing ran
