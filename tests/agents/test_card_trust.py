"""Checked cards of remote agents (issue 26 item 3): ``card_signature`` and ``card_keys`` of
the ``remote`` kind and of ``a2a-hub card``, over real sockets.

The far hub signs its cards (item 2); a small card server serves copies of them unsigned,
tampered or as they are, so each failure is the one named."""

from __future__ import annotations

import asyncio
import copy
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from a2a_hub import AgentSpec
from a2a_hub.client import A2AClient
from a2a_hub.engine.executor import text_of
from a2a_hub.protocol.types import Task, TaskState
from a2a_hub.registry import Registry
from tests.support.cli import env, free_port
from tests.support.hub import LiveServer, make_hub


class CardServer:
    """Serves ``card`` (changeable) at ``/.well-known/agent-card.json`` on a loopback port."""

    def __init__(self) -> None:
        self.card: dict[str, Any] = {}
        app = Starlette(routes=[Route("/.well-known/agent-card.json", self._card)])
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))

    async def _card(self, request: Request) -> Response:
        return JSONResponse(self.card)

    async def __aenter__(self) -> CardServer:
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


@pytest.fixture
async def far() -> AsyncIterator[LiveServer]:
    async with LiveServer(make_hub({"echo": "echo"})) as server:
        yield server


@pytest.fixture
async def cards() -> AsyncIterator[CardServer]:
    async with CardServer() as server:
        yield server


async def signed_card(far: LiveServer) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{far.url}/a2a/echo/.well-known/agent-card.json")).json()
    assert card["signatures"]
    return dict(card)


def other_keys(tmp_path: Path) -> Path:
    """A JWKS of a key that signed nothing here (another hub's)."""
    from a2a_hub.push.signing import SigningKeys

    path = tmp_path / "other.json"
    path.write_text(json.dumps(SigningKeys().jwks()))
    return path


async def front_reply(hub_options: dict[str, Any], url: str, **options: str) -> Task:
    query = "&".join(f"{k}={v}" for k, v in {"url": url, **options}.items())
    hub = make_hub({"front": f"remote?{query}"}, **hub_options)
    async with LiveServer(hub) as live, await A2AClient.connect(f"{live.url}/a2a/front") as c:
        reply = await c.send("hello")
        assert isinstance(reply, Task)
        return reply


async def test_require_accepts_a_good_card_and_refuses_unsigned_or_wrongly_signed(
    far: LiveServer, cards: CardServer, tmp_path: Path
) -> None:
    jwks = f"{far.url}/.well-known/jwks.json"
    good = await front_reply({}, f"{far.url}/a2a/echo", card_signature="require", card_keys=jwks)
    assert good.status.state is TaskState.COMPLETED

    # the same card without its signatures, served elsewhere: refused, saying why
    unsigned = await signed_card(far)
    del unsigned["signatures"]
    cards.card = unsigned
    bad = await front_reply({}, cards.url, card_signature="require", card_keys=jwks)
    assert bad.status.state is TaskState.FAILED
    said = text_of(bad.status.message.parts) if bad.status.message else ""
    assert "not signed" in said and "require" in said, said

    # tampered (its interface moved to the card server): the signature no longer holds
    tampered = await signed_card(far)
    tampered["name"] = "Evil twin"
    cards.card = tampered
    bad = await front_reply({}, cards.url, card_signature="require", card_keys=jwks)
    said = text_of(bad.status.message.parts) if bad.status.message else ""
    assert bad.status.state is TaskState.FAILED and "does not match its signature" in said, said

    # signed, but not by the trusted keys (a JWKS file of another key)
    cards.card = await signed_card(far)
    keys = str(other_keys(tmp_path))
    bad = await front_reply({}, cards.url, card_signature="require", card_keys=keys)
    said = text_of(bad.status.message.parts) if bad.status.message else ""
    assert bad.status.state is TaskState.FAILED and "signed by kid" in said, said

    # verify-if-present: an unsigned card passes, a badly signed one does not
    cards.card = unsigned
    ok = await front_reply({}, cards.url, card_signature="verify-if-present", card_keys=jwks)
    assert ok.status.state is TaskState.COMPLETED  # its interfaces lead to the far echo
    cards.card = tampered
    bad = await front_reply({}, cards.url, card_signature="verify-if-present", card_keys=jwks)
    assert bad.status.state is TaskState.FAILED


async def test_the_admin_api_refuses_a_remote_agent_whose_card_fails(
    far: LiveServer, cards: CardServer, tmp_path: Path
) -> None:
    hub = make_hub(
        {"echo": "echo"},
        registry=f"sqlite:///{tmp_path}/reg.db",
        outbound_allow_hosts=["127.0.0.1"],
    )
    unsigned = await signed_card(far)
    del unsigned["signatures"]
    cards.card = unsigned
    jwks = f"{far.url}/.well-known/jwks.json"
    async with LiveServer(hub) as live, httpx.AsyncClient(timeout=30) as http:
        assert isinstance(hub.registry, Registry)
        key, _ = await hub.registry.create_key(principal="root", scopes=["admin"])
        auth = {"X-API-Key": key}
        options = {"card_signature": "require", "card_keys": jwks}
        spec = {"id": "r", "kind": "remote", "options": {"url": cards.url, **options}}
        r = await http.post(f"{live.url}/admin/v1/agents", json=spec, headers=auth)
        assert r.status_code == 400
        message = r.json()["error"]["message"]
        assert "'r'" in message and "not signed" in message and "\n" not in message
        assert "r" not in hub.agents
        spec["options"]["url"] = f"{far.url}/a2a/echo"
        r = await http.post(f"{live.url}/admin/v1/agents", json=spec, headers=auth)
        assert r.status_code == 201, r.text
        # without trusted keys the policy is refused outright
        spec = {
            "id": "r2",
            "kind": "remote",
            "options": {"url": cards.url, "card_signature": "require"},
        }
        r = await http.post(f"{live.url}/admin/v1/agents", json=spec, headers=auth)
        assert r.status_code == 400 and "card_keys" in r.json()["error"]["message"]


async def test_a_card_that_stops_verifying_is_refused_at_refresh(
    far: LiveServer, cards: CardServer
) -> None:
    cards.card = await signed_card(far)
    jwks = f"{far.url}/.well-known/jwks.json"
    hub = make_hub({})
    hub.add(
        AgentSpec(
            id="front",
            kind="remote",
            options={
                "url": cards.url,
                "card_signature": "require",
                "card_keys": jwks,
                "card_refresh": "0.01",
            },
        ),
        configured=True,
    )
    front = hub.agents["front"].executor
    peer = front.peer  # type: ignore[attr-defined]
    async with LiveServer(hub):
        await peer.client()  # connects: the card verifies
        unsigned = copy.deepcopy(cards.card)
        del unsigned["signatures"]
        cards.card = unsigned
        await asyncio.sleep(0.05)  # past card_refresh (a lower bound, not a wait for work)
        from a2a_hub.agents.peer import PeerError

        with pytest.raises(PeerError, match="not signed"):
            await peer.client()


async def serve_exit(args: list[str], cwd: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "a2a_hub",
        *args,
        cwd=cwd,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_serve_and_card_cli_refuse_a_card_that_fails(
    far: LiveServer, cards: CardServer, tmp_path: Path
) -> None:
    unsigned = await signed_card(far)
    del unsigned["signatures"]
    cards.card = unsigned
    jwks_file = tmp_path / "far.json"
    async with httpx.AsyncClient() as http:
        jwks_file.write_text((await http.get(f"{far.url}/.well-known/jwks.json")).text)
    agent = f"front=remote?url={cards.url}&card_signature=require&card_keys={jwks_file}"
    code, out = await serve_exit(
        ["serve", "--port", str(free_port()), "--store", "memory://", "--agent", agent], tmp_path
    )
    assert code == 2 and "not signed" in out and "'front'" in out, out
    assert "Traceback" not in out and len(out.strip().splitlines()) <= 2, out

    check = ["--card-signature", "require", "--card-keys", str(jwks_file)]
    code, out = await serve_exit(["card", cards.url, *check], tmp_path)
    assert code == 1 and "not signed" in out and "Traceback" not in out, out
    code, out = await serve_exit(["card", f"{far.url}/a2a/echo", *check], tmp_path)
    assert code == 0 and "Echo" in out, out
