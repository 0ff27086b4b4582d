"""The admin API answers bad input with a 4xx in its documented error shape, never a 500
(issue 30 item 18: non-finite numbers in query parameters, a NUL character in a name on a
PostgreSQL registry)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.test_auth import make_hub
from tests.support.hub import LiveServer
from tests.support.stores import POSTGRES_URL, missing_service

NUMBERS = ["NaN", "nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "1.5e999"]


@pytest.fixture(params=["sqlite", "postgresql"])
async def admin_server(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[LiveServer, dict[str, str]]]:
    registry = POSTGRES_URL if request.param == "postgresql" else None
    hub = make_hub(tmp_path, registry=registry)
    try:
        server = await LiveServer(hub).__aenter__()
    except Exception as exc:
        missing_service(f"PostgreSQL unavailable: {exc}")
    try:
        assert hub.registry is not None
        key, info = await hub.registry.create_key(name="root", scopes=["admin"])
        try:
            yield server, {"X-API-Key": key}
        finally:  # leave the shared database as it was
            from sqlalchemy import delete

            from a2a_hub.registry.schema import api_keys

            async with hub.registry.engine.begin() as conn:
                await conn.execute(delete(api_keys).where(api_keys.c.key_id == info.id))
    finally:
        await server.__aexit__(None, None, None)


def assert_client_error(r: httpx.Response, what: str) -> None:
    assert 400 <= r.status_code < 500, f"{what}: {r.status_code} {r.text[:200]}"
    error: dict[str, Any] = r.json()["error"]
    assert error["code"] == r.status_code and error["status"] and error["message"], what


async def test_non_finite_numbers_are_400(admin_server: tuple[LiveServer, dict[str, str]]) -> None:
    server, auth = admin_server
    base = f"{server.url}/admin/v1"
    async with httpx.AsyncClient(timeout=30, headers=auth) as http:
        for value in NUMBERS:
            for url in (
                f"{base}/tasks?agent=open&pageSize={value}",
                f"{base}/tasks?agent=open&maxAgeSeconds={value}",
                f"{base}/conversations/open/c1/messages?pageSize={value}",
                f"{base}/conversations/open/c1/messages?pageToken={value}",
            ):
                assert_client_error(await http.get(url), url)


async def test_nul_characters_are_400_and_leave_the_registry_intact(
    admin_server: tuple[LiveServer, dict[str, str]],
) -> None:
    server, auth = admin_server
    base = f"{server.url}/admin/v1"
    async with httpx.AsyncClient(timeout=30, headers=auth) as http:
        before = (await http.get(f"{base}/keys")).json()
        bodies: list[tuple[str, str, dict[str, Any]]] = [
            ("POST", "/keys", {"name": "a\u0000b", "agents": ["open"]}),
            ("POST", "/keys", {"principal": "p\u0000", "agents": ["open"]}),
            ("POST", "/keys", {"agents": ["op\u0000en"]}),
            ("POST", "/agents", {"id": "nul", "kind": "echo", "description": "x\u0000y"}),
            ("POST", "/agents", {"id": "nul\u0000", "kind": "echo"}),
            ("POST", "/mcp-servers", {"name": "m\u0000", "transport": "http",
                                      "url": "http://127.0.0.1:1/mcp"}),
        ]  # fmt: skip
        for method, path, body in bodies:
            r = await http.request(method, base + path, json=body)
            assert_client_error(r, f"{method} {path} {body}")
        for url in (
            f"{base}/keys?principal=%00",
            f"{base}/tasks?agent=open&owner=a%00b",
            f"{base}/tasks?agent=open&contextId=%00",
            f"{base}/conversations?owner=%00",
            f"{base}/agents/a%00b",
        ):
            assert_client_error(await http.get(url), url)
        assert (await http.get(f"{base}/keys")).json() == before
        ids = {a["id"] for a in (await http.get(f"{base}/agents")).json()["agents"]}
        assert "nul" not in ids
