"""Secrets never reach a log line or an answer (issue 18 item 9).

Store and registry URLs carry passwords (``redis://:PW@host``); the start-up line, the
error of a store that cannot be opened, every log record (message and traceback, plain
and JSON), ``/readyz`` and the CLI's messages show them redacted.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from a2a_hub._logging import configure_logging, redact
from a2a_hub.server.health import _check
from a2a_hub.stores.urls import describe_store_url, safe_store_url
from tests.support.cli import reachable
from tests.support.processes import CLI, child_env, free_port, hub_process
from tests.support.stores import IN_CI, POSTGRES_URL

SECRET = "S3cr3tPw"


@pytest.mark.parametrize(
    "url",
    [
        f"redis://:{SECRET}@127.0.0.1:6379/0",
        f"rediss://user:{SECRET}@cache.example:6380/1",
        f"postgresql://hub:{SECRET}@db.example/hub?sslmode=require",
        f"postgresql+asyncpg://hub@db.example/hub?password={SECRET}",
        f"postgresql://hub@db.example/hub?sslpassword={SECRET}&application_name=x",
    ],
)
def test_urls_are_shown_without_their_password(url: str) -> None:
    for shown in (safe_store_url(url), describe_store_url(url), redact(url)):
        assert SECRET not in shown and "***" in shown, shown
    assert redact(f"could not connect: {url!r} failed") == (
        f"could not connect: {safe_store_url(url)!r} failed"
    )
    assert redact("dsn host=db user=hub password=" + SECRET) == "dsn host=db user=hub password=***"
    assert (
        redact("nothing secret at http://example.com/a@b")
        == "nothing secret at http://example.com/a@b"
    )


@pytest.fixture
def root_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.parametrize("fmt", ["plain", "json"])
def test_log_records_are_redacted(
    fmt: str, root_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("info", fmt)
    log = logging.getLogger("a2a_hub.test")
    url = f"redis://:{SECRET}@127.0.0.1:6379/0"
    log.warning("store %s is down", url)
    try:
        raise ConnectionError(f"cannot reach postgresql://hub:{SECRET}@db/hub?password={SECRET}")
    except ConnectionError:
        log.exception("opening the registry failed")
    err = capsys.readouterr().err
    assert "store redis://:***@127.0.0.1:6379/0 is down" in err
    assert "ConnectionError" in err and "postgresql://hub:***@db/hub" in err
    assert SECRET not in err


async def test_readyz_reason_is_redacted() -> None:
    async def failing() -> None:
        raise OSError(f"connect to redis://:{SECRET}@10.0.0.1:6379 refused")

    why = await _check(failing(), 1.0)
    assert why is not None and "redis://:***@10.0.0.1:6379" in why and SECRET not in why


def _serve_output(store: str, cwd: Path, wait_ready: bool) -> tuple[str, str]:
    port = free_port()
    proc = subprocess.Popen(
        [*CLI, "serve", "--agent", "echo", "--port", str(port), "--store", store],
        cwd=cwd,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    ready = ""
    try:
        deadline = time.monotonic() + 30
        while wait_ready and time.monotonic() < deadline and proc.poll() is None:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).text
                break
            except httpx.HTTPError:
                time.sleep(0.1)
    finally:
        if wait_ready and proc.poll() is None:
            proc.terminate()  # else it exits by itself (the store cannot be opened)
        out, _ = proc.communicate(timeout=30)
    return out.decode(), ready


def test_serve_never_prints_a_store_password(tmp_path: Path) -> None:
    # a store that cannot be opened: its error line
    out, _ = _serve_output(f"redis://:{SECRET}@127.0.0.1:{free_port()}/0", tmp_path, False)
    assert "cannot open the task store redis://:***@" in out and SECRET not in out
    pg = POSTGRES_URL
    if IN_CI or reachable(pg):  # the test database trusts local connections: any password
        with_password = pg.replace("postgres@", f"postgres:{SECRET}@", 1)
        assert SECRET in with_password
        out, ready = _serve_output(with_password, tmp_path, True)
        assert "store postgresql://postgres:***@" in out, out
        assert '"store":"ok"' in ready
        assert SECRET not in out + ready


def test_websocket_key_in_query_is_redacted_in_uvicorn_lines(tmp_path: Path) -> None:
    """Default logging (plain, uvicorn's own handlers): the WebSocket line uvicorn writes
    for ``/a2a/echo/ws?api_key=KEY`` shows the key as ***."""
    import asyncio

    import websockets

    key = "a2ah_" + SECRET
    with hub_process("echo", cwd=tmp_path, options=("--log-level", "info")) as url:
        ws_url = url.replace("http://", "ws://") + f"/a2a/echo/ws?api_key={key}"

        async def visit() -> None:
            async with websockets.connect(ws_url):
                pass

        asyncio.run(visit())
    logged = "\n".join(p.read_text() for p in tmp_path.glob("hub-*.log"))
    assert "/a2a/echo/ws?api_key=***" in logged
    assert SECRET not in logged
