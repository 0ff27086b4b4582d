"""The browser chat page in Chromium (Debian's /usr/bin/chromium, driven by playwright).

Skipped when Chromium or playwright is missing, except under CI=true, where that fails.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_hub import AgentExecutor, AgentSpec, Hub, RequestContext, Settings, TaskUpdater
from tests.support.agents import ChattyExecutor, Drip, SlowExecutor, ToolAgent
from tests.support.hub import LiveServer
from tests.support.processes import free_port

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

try:
    from playwright.async_api import async_playwright
except ImportError:  # pragma: no cover
    async_playwright = None  # type: ignore[assignment]

_missing = async_playwright is None or not os.path.exists(CHROMIUM)
if _missing and os.environ.get("CI") == "true":
    raise RuntimeError("browser tests need playwright and /usr/bin/chromium (make test installs)")
pytestmark = pytest.mark.skipif(_missing, reason="needs playwright and /usr/bin/chromium")


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            await b.close()


@pytest.fixture
async def server(hub_factory: Callable[..., Hub]) -> AsyncIterator[LiveServer]:
    hub = hub_factory(
        {
            "echo": "echo",
            "slow": SlowExecutor(),
            "tool": ToolAgent(),
            "chatty": ChattyExecutor(chunks=12, pause_every=1),
        },
        default_agent="echo",
    )
    async with LiveServer(hub) as live:
        yield live


async def test_page_is_served_with_its_assets(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        page = await client.get("/a2a/echo/chat")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert 'src="chat/chat.js"' in page.text and "http" not in page.text.replace(
            "http-equiv", ""
        )
        assert (await client.get("/chat")).status_code == 200
        js = await client.get("/a2a/echo/chat/chat.js")
        assert js.status_code == 200 and "sync_state" in js.text
        assert (await client.get("/a2a/echo/chat/chat.css")).status_code == 200
        assert (await client.get("/a2a/echo/chat/other.txt")).status_code == 404
        assert (await client.get("/a2a/nobody/chat")).status_code == 404


async def _ask(page: Any, text: str) -> None:
    await page.get_by_label("Message").fill(text)
    await page.get_by_role("button", name="Send").click()


async def test_type_a_message_and_see_the_reply(server: LiveServer, browser: Any) -> None:
    page = await browser.new_page(viewport={"width": 375, "height": 700})
    await page.goto(f"{server.url}/a2a/chatty/chat")
    await page.wait_for_selector('#connection[data-state="open"]')
    await _ask(page, "stream please")
    await page.wait_for_selector("#log li.agent[data-done=true]")
    reply = await page.locator("#log li.agent").inner_text()
    assert reply == "".join(f"{i:06d}".ljust(8, ".") for i in range(12))
    assert await page.locator("#status-text").inner_text() == "completed"
    assert await page.locator("#log li.user").inner_text() == "stream please"
    if os.environ.get("A2A_HUB_SCREENSHOT"):  # refreshes the README's picture
        await page.screenshot(path=os.environ["A2A_HUB_SCREENSHOT"])


async def test_answer_a_tool_call(server: LiveServer, browser: Any) -> None:
    page = await browser.new_page()
    await page.goto(f"{server.url}/a2a/tool/chat")
    await page.wait_for_selector('#connection[data-state="open"]')
    await _ask(page, "what time zone?")
    await page.wait_for_selector("#log li.agent[data-done=true]")
    zone = await page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")
    assert await page.locator("#log li.agent").inner_text() == f"your zone is {zone}"
    assert "time_zone" in await page.locator("#log li.tool").first.inner_text()


async def test_cancel_a_task(server: LiveServer, browser: Any) -> None:
    page = await browser.new_page()
    await page.goto(f"{server.url}/a2a/slow/chat")
    await page.wait_for_selector('#connection[data-state="open"]')
    await _ask(page, "work")
    cancel = page.get_by_role("button", name="Cancel")
    await page.wait_for_selector("#cancel:not([disabled])")
    await cancel.click()
    await page.wait_for_function(
        "() => document.getElementById('status-text').textContent.startsWith('canceled')"
    )


async def test_server_restart_mid_stream(browser: Any, tmp_path: Path) -> None:
    """The server stops mid-stream; the page reconnects to the new one and shows each chunk once."""
    store = f"sqlite:///{tmp_path}/hub.db"
    port = free_port()

    def make() -> LiveServer:
        settings = Settings.from_flat(
            agents=[AgentSpec(id="drip", kind="python", executor="x:y")], store=store
        )
        return LiveServer(Hub(settings, executors={"drip": Drip()}), port=port)

    first = make()
    await first.__aenter__()
    page = await browser.new_page()
    await page.goto(f"{first.url}/a2a/drip/chat")
    await page.wait_for_selector('#connection[data-state="open"]')
    await _ask(page, "go")
    await page.wait_for_function(
        "() => document.querySelector('#log li.agent') && "
        "document.querySelector('#log li.agent').textContent.length >= 8"
    )
    await first.__aexit__()
    second = make()
    await second.__aenter__()
    try:
        await page.wait_for_selector('#connection[data-state="open"]', timeout=20000)
        await page.wait_for_function(
            "() => ['completed', 'failed'].some(s => "
            "document.getElementById('status-text').textContent.startsWith(s))",
            timeout=20000,
        )
        text = await page.locator("#log li.agent").first.inner_text()
        chunks = [text[i : i + 8] for i in range(0, len(text), 8)]
        assert chunks == [f"{i:06d}".ljust(8, ".") for i in range(len(chunks))]
        assert len(chunks) >= 1
    finally:
        await second.__aexit__()
        await asyncio.sleep(0)


async def test_a_protected_agent_with_the_key_field(browser: Any, tmp_path: Path) -> None:
    """The page of an agent that requires keys loads without one; the key typed into the
    field goes with the socket (subprotocol), and the agent answers."""
    settings = Settings.from_flat(
        agents=[AgentSpec(id="locked", kind="echo", auth="api-key")],
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
    )
    async with LiveServer(Hub(settings)) as live:
        assert live.hub.registry is not None
        key, _ = await live.hub.registry.create_key(agents=["locked"], name="web")
        page = await browser.new_page()
        response = await page.goto(f"{live.url}/a2a/locked/chat")
        assert response is not None and response.status == 200
        await page.wait_for_selector('#connection[data-state="needs-key"]')  # field open
        await page.get_by_label("API key (for protected agents)").fill(key)
        await page.get_by_role("button", name="Use key and reconnect").click()
        await page.wait_for_selector('#connection[data-state="open"]')
        await _ask(page, "let me in")
        await page.wait_for_selector("#log li.agent[data-done=true]")
        assert await page.locator("#log li.agent").inner_text() == "echo: let me in"


class Helper(AgentExecutor):
    """The README's two-turn agent (``mymod:Helper``)."""

    async def execute(self, ctx: RequestContext, updater: TaskUpdater) -> None:
        await updater.start()
        if ctx.task is None:
            await updater.require_input("Which product?")
            return
        await updater.artifact(f"About {ctx.text}: it hosts many agents.", name="answer")
        await updater.complete()


async def test_a_two_turn_conversation(browser: Any) -> None:
    """The question of an input-required status is in the transcript, and the answer
    continues the same task (it completes instead of asking again)."""
    settings = Settings.from_flat(
        agents=[AgentSpec(id="helper", kind="python", executor="x:y")], store="memory://"
    )
    async with LiveServer(Hub(settings, executors={"helper": Helper()})) as live:
        page = await browser.new_page()
        await page.goto(f"{live.url}/a2a/helper/chat")
        await page.wait_for_selector('#connection[data-state="open"]')
        await _ask(page, "hello")
        await page.wait_for_selector("#log li.agent")
        assert await page.locator("#log li.agent").inner_text() == "Which product?"
        await _ask(page, "a2a-hub")
        # the answer's bubble (the question's is done too, so it must not satisfy the wait)
        await page.wait_for_selector("#log li.agent[data-done=true]:not([data-question])")
        texts = await page.locator("#log li").all_inner_texts()
        assert texts == [
            "hello",
            "Which product?",
            "a2a-hub",
            "About a2a-hub: it hosts many agents.",
        ]
        assert await page.locator("#status-text").inner_text() == "completed"
        tasks = [t async for t in _tasks(live)]
        assert len(tasks) == 1 and tasks[0]["status"]["state"] == "TASK_STATE_COMPLETED"


async def _tasks(live: LiveServer) -> AsyncIterator[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=live.url) as client:
        r = await client.get("/a2a/helper/tasks")
        assert r.status_code == 200, r.text
        for task in r.json()["tasks"]:
            yield task


async def test_a_protected_agent_asks_for_the_key_once(browser: Any, tmp_path: Path) -> None:
    """Without a key the page says, once and in plain words, that the agent needs one, opens
    the key field and does not reconnect; a wrong key is tried the documented 5 times, then
    the page stops; the right key connects and the old errors go."""
    settings = Settings.from_flat(
        agents=[AgentSpec(id="locked", kind="echo", auth="api-key")],
        store="memory://",
        registry=f"sqlite:///{tmp_path}/registry.db",
    )
    async with LiveServer(Hub(settings)) as live:
        assert live.hub.registry is not None
        key, _ = await live.hub.registry.create_key(agents=["locked"], name="web")
        page = await browser.new_page()
        sockets: list[str] = []
        page.on("websocket", lambda ws: sockets.append(ws.url))
        await page.goto(f"{live.url}/a2a/locked/chat")
        await page.wait_for_selector('#connection[data-state="needs-key"]')
        assert await page.locator("#settings").get_attribute("open") is not None
        assert await page.locator("#apikey").evaluate("e => e === document.activeElement")
        status = await page.locator("#connection").inner_text()
        assert "needs an API key" in status and "unauthenticated" not in status
        # no reconnection: a socket the page would open is seen before a status back to
        # "needs-key" (the state it returns to); wait past one backoff step by a page timer
        await page.evaluate("() => new Promise(r => setTimeout(r, 2500))")
        assert len(sockets) == 1
        assert await page.locator("#connection").get_attribute("data-state") == "needs-key"
        assert await page.locator("#log li.error").count() <= 1

        await page.get_by_label("API key (for protected agents)").fill("a2ah_wrong")
        await page.get_by_role("button", name="Use key and reconnect").click()
        await page.wait_for_selector('#connection[data-state="closed"]', timeout=90000)
        assert 2 <= len(sockets) <= 1 + 1 + 5  # the first try and at most 5 retries
        assert "could not" in (await page.locator("#connection").inner_text()).lower()

        await page.get_by_label("API key (for protected agents)").fill(key)
        await page.get_by_role("button", name="Use key and reconnect").click()
        await page.wait_for_selector('#connection[data-state="open"]')
        await _ask(page, "let me in")
        await page.wait_for_selector("#log li.agent[data-done=true]")
        assert await page.locator("#log li.error").count() == 0
