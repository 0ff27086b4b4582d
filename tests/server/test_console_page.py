"""The web console (/ui) in Chromium (Debian's /usr/bin/chromium, driven by playwright), as a
person uses it: one browser and one hub (with keys) for the module, a fresh browser context
(so a fresh sessionStorage) per test, waits on what the page shows, never on time.

With ``A2A_HUB_SCREENSHOTS=1`` the tests write each page at 1280x720 to docs/console/.
Skipped when Chromium or playwright is missing, except under CI=true, where that fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from a2a_hub import AgentSpec, Hub, Settings
from tests.server.test_chat_page import ARGS, CHROMIUM, async_playwright
from tests.support.agents import ChattyExecutor, Stepper, Ticker
from tests.support.hub import LiveServer, asgi_body
from tests.support.processes import child_env, free_port
from tests.support.push_receiver import Receiver, until

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "console" if os.environ.get("A2A_HUB_SCREENSHOTS") == "1" else None
V10 = {"A2A-Version": "1.0"}

_missing = async_playwright is None or not os.path.exists(CHROMIUM)
pytestmark = [
    pytest.mark.skipif(_missing, reason="needs playwright and /usr/bin/chromium"),
    pytest.mark.asyncio(loop_scope="module"),
]


class Console:
    """The module's hub (with keys), its webhook receiver, a second web server playing
    other A2A agents' hosts for the inspector, and a reverse proxy serving the hub under
    ``/hub`` (the hub's ``--public-url``)."""

    def __init__(
        self, live: LiveServer, receiver: Receiver, keys: dict[str, str], other: str, proxy: str
    ):
        self.live = live
        self.url = live.url
        self.hub = live.hub
        self.receiver = receiver
        self.keys = keys
        self.other = other
        self.proxy = proxy


def _proxy(upstream: str, prefix: str, client: httpx.AsyncClient) -> Any:
    """A reverse proxy as deploy/nginx.conf configures one, serving ``upstream`` under
    ``prefix``: the client's Host passed on, responses streamed unbuffered."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        path: str = scope["path"]
        if not path.startswith(prefix + "/"):
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"not proxied"})
            return
        body = await asgi_body(receive)
        query = scope["query_string"].decode()
        target = upstream + path[len(prefix) :] + (f"?{query}" if query else "")
        headers = [(k, v) for k, v in scope["headers"] if k not in (b"content-length",)]
        async with client.stream(scope["method"], target, headers=headers, content=body) as answer:
            kept = [
                (k, v)
                for k, v in answer.headers.raw
                if k.lower() not in (b"transfer-encoding", b"connection")
            ]
            await send(
                {"type": "http.response.start", "status": answer.status_code, "headers": kept}
            )

            async def relay() -> None:
                async for chunk in answer.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})

            async def gone() -> None:  # the browser left: stop following the hub
                while (await receive())["type"] != "http.disconnect":
                    pass

            tasks = [asyncio.ensure_future(relay()), asyncio.ensure_future(gone())]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    return app


def _signed_cards(other: str) -> dict[str, Any]:
    """The other host's cards: a good one, one missing a required field, one signed and
    then changed, and the JWKS of the signing key."""
    from joserfc.jwk import OKPKey

    from a2a_hub.server.console.cardcheck import sign_card

    key = OKPKey.generate_key("Ed25519", parameters={"kid": "k1"})
    good = {
        "name": "Weather",
        "description": "Forecasts",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": f"{other}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "f", "name": "forecast", "description": "d", "tags": ["weather"]}],
    }
    signed = dict(good)
    protected, _, signature = sign_card(signed, key, kid="k1", jku=f"{other}/jwks.json").split(".")
    signed["signatures"] = [{"protected": protected, "signature": signature}]
    tampered = {**signed, "description": "Forecasts, and your passwords"}
    missing = {k: v for k, v in good.items() if k != "version"}
    return {
        "good": signed,
        "tampered": tampered,
        "missing": missing,
        "jwks": {"keys": [key.as_dict(private=False)]},
    }


def _other_host(other: str) -> Starlette:
    cards = _signed_cards(other)

    async def card(request: Request) -> Response:
        which = request.path_params["which"]
        if which == "notjson":
            return Response(b"<html>hello</html>", media_type="text/html")
        if which == "huge":
            return Response(b'{"name": "' + b"x" * (2 << 20) + b'"}', media_type="application/json")
        if which not in cards:
            return Response(b"not found", 404)
        return JSONResponse(cards[which])

    async def jwks(request: Request) -> Response:
        return JSONResponse(cards["jwks"])

    return Starlette(
        routes=[
            Route("/jwks.json", jwks),
            Route("/{which}/.well-known/agent-card.json", card),
        ]
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def console(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Console]:
    import uvicorn

    tmp = tmp_path_factory.mktemp("console")
    agents = [
        AgentSpec(id="echo", kind="echo"),  # public: no key needed
        AgentSpec(id="direct", kind="echo", options={"reply": "message"}, auth="api-key"),
        AgentSpec(id="chatty", kind="python", executor="x:y", auth="api-key"),
        AgentSpec(id="ticker", kind="python", executor="x:y", auth="api-key"),
        AgentSpec(id="stepper", kind="python", executor="x:y", auth="api-key"),
    ]
    proxy_port, hub_port = free_port(), free_port()
    proxy = f"http://127.0.0.1:{proxy_port}"
    settings = Settings.from_flat(
        agents=agents,
        public_url=f"{proxy}/hub",
        store=f"sqlite:///{tmp}/hub.db",
        registry=f"sqlite:///{tmp}/registry.db",
        push_allow_hosts="127.0.0.1",
        push_retry_steps="0.1",
        push_retry_horizon=0.2,
        default_agent="echo",
    )
    executors = {
        "chatty": ChattyExecutor(chunks=12, pause_every=1, pause=0.05),
        "ticker": Ticker(ticks=20, interval=0.1),
        "stepper": Stepper(),  # works until the test says
    }
    other_port = free_port()
    other = f"http://127.0.0.1:{other_port}"
    other_server = uvicorn.Server(
        uvicorn.Config(_other_host(other), host="127.0.0.1", port=other_port, log_level="warning")
    )
    other_task = asyncio.ensure_future(other_server.serve())
    proxy_client = httpx.AsyncClient(timeout=httpx.Timeout(30, read=None))
    proxy_server = uvicorn.Server(
        uvicorn.Config(
            _proxy(f"http://127.0.0.1:{hub_port}", "/hub", proxy_client),
            host="127.0.0.1",
            port=proxy_port,
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=5,
        )
    )
    proxy_task = asyncio.ensure_future(proxy_server.serve())
    receiver = Receiver()
    await receiver.start()
    async with LiveServer(Hub(settings, executors=executors), port=hub_port) as live:
        registry = live.hub.registry
        assert registry is not None
        keys = {}
        for name, scopes in (("alice", ["admin"]), ("bob", ["invoke"]), ("carol", ["invoke"])):
            keys[name], _ = await registry.create_key(principal=name, scopes=scopes, name=name)

        async def started() -> bool:
            return bool(other_server.started and proxy_server.started)

        await until(started)
        try:
            yield Console(live, receiver, keys, other, proxy)
        finally:
            other_server.should_exit = proxy_server.should_exit = True
            await other_task
            await proxy_task
            await proxy_client.aclose()
            await receiver.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            await b.close()


@contextlib.asynccontextmanager
async def opened(
    browser: Any, console: Console, who: str | None, root: str | None = None
) -> AsyncIterator[Any]:
    """A fresh page of the console as ``who`` (a key typed into the page; None: no key);
    fails the test on any script error in the page."""
    context = await browser.new_context(viewport={"width": 1280, "height": 720})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        await page.goto(f"{root or console.url}/ui")
        await page.wait_for_selector("#page-agents")
        if who is not None:
            await page.fill("#apikey", console.keys[who])
            await page.click("#usekey")
            await page.wait_for_selector(f'#who[data-principal="{who}"]')
            # the key lives in this tab's session only
            assert await page.evaluate("localStorage.length") == 0
            assert await page.evaluate("Object.values(sessionStorage)") == [console.keys[who]]
        try:
            yield page
        except BaseException:
            if os.environ.get("A2A_HUB_FAILED_SHOT"):  # what the page showed, for debugging
                await page.screenshot(path=os.environ["A2A_HUB_FAILED_SHOT"])
            raise
        assert errors == []
    finally:
        await context.close()


async def shot(page: Any, name: str) -> None:
    """The page as a person sees it, for docs/console/ (only with A2A_HUB_SCREENSHOTS=1)."""
    if SHOTS is not None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(SHOTS / f"{name}.png"))


async def cli(*args: str, within: float = 60) -> tuple[int, str]:
    """``a2a-hub ARGS`` as a person runs it, in its own process group (killed if it hangs);
    returns the exit code and what it printed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "a2a_hub.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=child_env(COLUMNS="200"),
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(within):
            out, _ = await proc.communicate()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def send(console: Console, agent: str, text: str, who: str, **config: Any) -> str:
    """A task made through JSON-RPC as ``who``, answered at once; its id."""
    params: dict[str, Any] = {
        "message": {"messageId": f"{text}-{who}", "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": True, **config},
    }
    headers = {**V10, "X-API-Key": console.keys[who]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{console.url}/a2a/{agent}", json=body, headers=headers)
    data = r.json()
    assert "result" in data, data
    task_id: str = data["result"]["task"]["id"]
    return task_id


async def test_the_task_list_follows_a_task_the_cli_runs(console: Console, browser: Any) -> None:
    stepper = console.hub.agents["stepper"].executor
    assert isinstance(stepper, Stepper)
    async with opened(browser, console, "bob") as page:
        await page.goto(f"{console.url}/ui#/tasks?agent=stepper")
        await page.wait_for_selector("#page-tasks[data-agent=stepper] #live[data-state=open]")
        await page.evaluate("window.notReloaded = true")
        url = f"{console.url}/a2a/stepper"
        run = asyncio.ensure_future(cli("send", url, "step", "--api-key", console.keys["bob"]))
        finished = False
        try:
            # the row comes while the task works (it works until told), then turns completed
            row = "#task-rows tr[data-task]"
            await page.wait_for_selector(f"{row} .badge[data-state=working]")
            stepper.step("one")
            stepper.finish()
            finished = True
            await page.wait_for_selector(f"{row} .badge[data-state=completed]")
        finally:
            if not finished:
                stepper.finish()
            code, out = await run
        assert code == 0, out
        assert await page.evaluate("window.notReloaded") is True
        assert await page.locator("#task-rows tr[data-task]").count() == 1


async def test_a_task_timeline_shows_every_streamed_event_in_order(
    console: Console, browser: Any
) -> None:
    task_id = await send(console, "chatty", "stream please", "bob")
    store = console.hub.store

    async def finished() -> bool:
        record = await store.get_task_record("chatty", task_id)
        return record is not None and record.task.status.state.terminal

    await until(finished)
    events = await store.read_events("chatty", task_id)
    streamed = [e for e in events if e.event.message is None]  # client messages stay out
    async with opened(browser, console, "bob") as page:
        await page.goto(f"{console.url}/ui#/task/chatty/{task_id}")
        await page.wait_for_selector("#timeline[data-done=true]")
        seqs = await page.locator("#timeline li").evaluate_all("els => els.map(e => e.dataset.seq)")
        kinds = await page.locator("#timeline li").evaluate_all(
            "els => els.map(e => e.dataset.kind)"
        )
        assert seqs == [str(e.seq) for e in streamed]
        assert kinds[0] == "task" and kinds[1] == "status" and kinds[-1] == "status"
        assert kinds.count("artifact") == 12
        text = "".join(await page.locator("#artifacts pre").all_inner_texts())
        assert text == "".join(f"{i:06d}".ljust(8, ".") for i in range(12))
        await page.wait_for_selector("#task-state[data-state=completed]")
        await shot(page, "task")


async def test_a_dead_delivery_requeued_from_the_page_is_delivered(
    console: Console, browser: Any
) -> None:
    receiver = console.receiver
    receiver.status = 500
    hook = {"url": receiver.url, "id": "hook"}
    task_id = await send(console, "echo", "notify me", "bob", taskPushNotificationConfig=hook)
    store = console.hub.store

    async def all_dead() -> bool:
        record = await store.get_task_record("echo", task_id)
        if record is None or not record.task.status.state.terminal:
            return False
        found = await store.task_deliveries("echo", task_id)
        return bool(found) and all(d.dead for d in found)

    await until(all_dead)
    dead = len(await store.task_deliveries("echo", task_id))
    async with opened(browser, console, "alice") as page:
        await page.goto(f"{console.url}/ui#/task/echo/{task_id}")
        await page.wait_for_selector("#deliveries-dead tr[data-delivery]")
        assert "HTTP 500" in await page.locator("#deliveries-dead").inner_text()
        receiver.status = 200
        await page.click("nav a[data-page=operations]")
        await page.wait_for_selector("#dead tr[data-delivery]")
        assert "HTTP 500" in await page.locator("#dead .last-error").first.inner_text()
        await shot(page, "operations")
        await page.click("#requeue-all")
        await page.wait_for_selector("#requeued")
        await receiver.wait_for(dead)
        await page.goto(f"{console.url}/ui#/task/echo/{task_id}")
        await page.wait_for_selector(f"#deliveries-delivered tr[data-delivery] >> nth={dead - 1}")
        assert await page.locator("#deliveries-dead tr[data-delivery]").count() == 0


async def test_a_key_made_in_the_page_works_from_the_cli_until_revoked_there(
    console: Console, browser: Any
) -> None:
    async with opened(browser, console, "alice") as page:
        await page.click("nav a[data-page=operations]")
        await page.fill("#key-name", "from-the-page")
        await page.click("#create-key button[type=submit]")
        key = await page.locator("#new-key-value").inner_text()
        assert key
        url = f"{console.url}/a2a/direct"
        code, out = await cli("send", url, "hello", "--api-key", key)
        assert code == 0 and "echo: hello" in out, out
        row = page.locator('#keys tr[data-name="from-the-page"]')
        await row.locator("button", has_text="Revoke").click()
        await page.wait_for_function(
            "() => [...document.querySelectorAll('#keys tr[data-name=\"from-the-page\"] .revoked')]"
            ".some(td => td.textContent.trim() !== '')"
        )
        code, out = await cli("send", url, "hello again", "--api-key", key)
        assert code != 0 and "revoked" in out, out
        assert await page.locator("#new-key-value").count() == 0  # shown once only


async def test_the_inspector_checks_cards_and_chats_with_a_streaming_agent(
    console: Console, browser: Any
) -> None:
    async def inspect(page: Any, url: str) -> None:
        await page.fill("#inspect-url", url)
        await page.click("#inspect-go")
        await page.wait_for_selector("#inspect-error, #findings")

    other = console.other
    async with opened(browser, console, "bob") as page:
        await page.click("nav a[data-page=inspector]")
        await inspect(page, f"{other}/missing")
        errors = await page.locator("#findings li.error").all_inner_texts()
        assert len(errors) == 1 and "'version' is a required property" in errors[0]
        await inspect(page, f"{other}/tampered")
        errors = await page.locator("#findings li.error").all_inner_texts()
        assert len(errors) == 1 and "does not verify" in errors[0]
        await shot(page, "inspector-findings")
        await inspect(page, f"{other}/good")
        assert await page.locator("#findings li.error").count() == 0
        assert "verifies" in await page.locator("#findings li.ok").last.inner_text()
        # bad input: one clear message each, and the page goes on working
        bad = {
            f"http://127.0.0.1:{free_port()}/gone": "cannot reach",
            f"{other}/nobody": "HTTP 404",
            f"{other}/notjson": "not JSON",
            f"{other}/huge": "over 1 MB",
            "https://10.1.2.3/agent": "private address",
        }
        for url, said in bad.items():
            await inspect(page, url)
            shown = await page.locator("#inspect-result").inner_text()
            assert said in shown and await page.locator("#inspect-error").count() == 1, shown
        await inspect(page, f"{console.url}/a2a/chatty")
        assert await page.locator("#findings li.error").count() == 0
        await page.fill("#chat-key", console.keys["bob"])  # chatty needs a key
        await page.fill("#chat-text", "go")
        await page.click("#chat-send")
        await page.wait_for_selector("#chat-state[data-state=done], #chat-state[data-state=failed]")
        assert await page.locator("#chat-state").get_attribute("data-state") == "done"
        reply = await page.locator("#chat-reply").inner_text()
        assert reply.startswith("".join(f"{i:06d}".ljust(8, ".") for i in range(12)))
        frames = await page.locator("#frames pre.frame").all_inner_texts()
        data = [json.loads(f.split("data:", 1)[1]) for f in frames]  # raw SSE frames
        assert len(data) == 15 and "task" in data[0]["result"]
        assert "statusUpdate" in data[-1]["result"]
        await shot(page, "inspector")


async def test_a_caller_without_admin_sees_no_operations_nor_others_tasks(
    console: Console, browser: Any
) -> None:
    carols = await send(console, "echo", "carol's secret", "carol")
    bobs = await send(console, "echo", "bob's own", "bob")
    async with opened(browser, console, "bob") as page:
        assert await page.locator("#nav-operations").is_hidden()
        await page.goto(f"{console.url}/ui#/tasks?agent=echo")
        await page.wait_for_selector(f'#task-rows tr[data-task="{bobs}"]')
        assert await page.locator(f'#task-rows tr[data-task="{carols}"]').count() == 0
        # the filters: state and age keep bob's task, another state shows none
        await page.goto(f"{console.url}/ui#/tasks?agent=echo&state=completed&age=3600")
        await page.wait_for_selector(f'#task-rows tr[data-task="{bobs}"]')
        await page.goto(f"{console.url}/ui#/tasks?agent=echo&state=failed")
        await page.wait_for_selector("#task-rows >> text=No task matches.")
        assert await page.locator("#filter-owner").count() == 0  # owners: admins only
        await page.goto(f"{console.url}/ui#/task/echo/{carols}")
        await page.wait_for_selector("#page-task .error")
        await page.goto(f"{console.url}/ui#/operations")
        await page.wait_for_selector("#needs-admin")
        assert await page.locator("#keys, #dead").count() == 0
        await page.goto(f"{console.url}/ui#/conversations")
        await page.wait_for_selector("#conversations, #page-conversations .muted")
        shown = await page.locator("#page-conversations").inner_text()
        assert "carol" not in shown
    async with opened(browser, console, None) as page:  # no key: public agents, no task
        ids = await page.locator("article[data-agent]").evaluate_all(
            "els => els.map(e => e.dataset.agent)"
        )
        assert ids == ["echo"]
        await page.click("nav a[data-page=tasks]")
        await page.wait_for_selector("#page-tasks .notice")
        assert await page.locator("#task-rows").count() == 0


async def test_conversations_and_agents_pages(console: Console, browser: Any) -> None:
    """A context's messages in order, the direct reply (no task) among them; every agent
    with its card and tasks by state (and the pictures of both pages)."""
    counted = await send(console, "echo", "count me", "bob")

    async def finished() -> bool:
        record = await console.hub.store.get_task_record("echo", counted)
        return record is not None and record.task.status.state.terminal

    await until(finished)
    headers = {**V10, "X-API-Key": console.keys["bob"]}
    context = "ctx-console"
    async with httpx.AsyncClient() as client:
        for n in range(2):
            params = {
                "message": {
                    "messageId": f"conv-{n}",
                    "role": "ROLE_USER",
                    "contextId": context,
                    "parts": [{"text": f"turn {n}"}],
                }
            }
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
            r = await client.post(f"{console.url}/a2a/direct", json=body, headers=headers)
            assert "result" in r.json()
    async with opened(browser, console, "bob") as page:
        await page.goto(f"{console.url}/ui#/conversation/direct/{context}")

        await page.wait_for_function(
            "() => document.querySelectorAll('#messages li[data-message]').length === 4"
        )
        texts = await page.locator("#messages li[data-message] pre").all_inner_texts()
        assert texts == ["turn 0", "echo: turn 0", "turn 1", "echo: turn 1"]
        assert await page.locator("#messages .direct").count() == 4  # no task made
        await shot(page, "conversation")
        await page.goto(f"{console.url}/ui#/conversations")
        await page.wait_for_selector(f'#conversations tr[data-context="{context}"]')
        await shot(page, "conversations")
        await page.goto(f"{console.url}/ui#/tasks?agent=echo")
        await page.wait_for_selector(f'#task-rows tr[data-task="{counted}"]')
        await shot(page, "tasks")
        await page.goto(f"{console.url}/ui#/agents")
        await page.wait_for_selector("article[data-agent=echo] [data-count=completed]")
        assert await page.locator("article[data-agent] a.chat").count() == 5
        await shot(page, "agents")


async def test_behind_a_reverse_proxy_under_a_path_prefix(console: Console, browser: Any) -> None:
    """The hub behind a proxy at /hub (its --public-url): every page, the live list and the
    timeline work through it, and links stay under the prefix."""
    root = f"{console.proxy}/hub"
    async with opened(browser, console, "bob", root) as page:
        chat = page.locator("article[data-agent=ticker] a.chat")
        assert await chat.evaluate("a => a.href") == f"{root}/a2a/ticker/chat"
        await page.goto(f"{root}/ui#/tasks?agent=ticker")
        await page.wait_for_selector("#page-tasks[data-agent=ticker] #live[data-state=open]")
        task_id = await send(console, "ticker", "through the proxy", "bob")
        row = f'#task-rows tr[data-task="{task_id}"]'
        await page.wait_for_selector(f"{row} .badge[data-state=completed]")
        await page.click(f"{row} a")
        await page.wait_for_selector("#timeline[data-done=true]")
        assert await page.locator("#timeline li").count() == 23  # task, working, 20, completed
        assert page.url.startswith(f"{root}/ui#/task/ticker/")


async def test_cancel_from_the_task_page(console: Console, browser: Any) -> None:
    """A working task's page follows it live; Cancel ends it, and the timeline shows that."""
    stepper = console.hub.agents["stepper"].executor
    assert isinstance(stepper, Stepper)
    task_id = await send(console, "stepper", "cancel me", "bob")
    async with opened(browser, console, "bob") as page:
        await page.goto(f"{console.url}/ui#/task/stepper/{task_id}")
        await page.wait_for_selector("#task-state[data-state=working]")
        await page.click("#cancel")
        await page.wait_for_selector("#task-state[data-state=canceled]")
        await page.wait_for_selector("#timeline[data-done=true]")
        last = page.locator("#timeline li").last
        assert await last.get_attribute("data-kind") == "status"
        assert "canceled" in await last.inner_text()


async def test_operations_manage_agents_and_mcp_servers(console: Console, browser: Any) -> None:
    carols = await send(console, "echo", "carol's own", "carol")
    bobs = await send(console, "echo", "bob's", "bob")
    async with opened(browser, console, "alice") as page:
        # an admin sees every task, and filters them by owner (the admin API's search)
        await page.goto(f"{console.url}/ui#/tasks?agent=echo&owner=carol")
        await page.wait_for_selector(f'#task-rows tr[data-task="{carols}"]')
        assert await page.locator(f'#task-rows tr[data-task="{bobs}"]').count() == 0
        await page.goto(f"{console.url}/ui#/tasks?agent=echo")
        await page.wait_for_selector(f'#task-rows tr[data-task="{bobs}"]')
        await page.click("nav a[data-page=operations]")
        await page.fill("#agent-json", json.dumps({"id": "added", "kind": "echo"}))
        await page.click("#save-agent")
        await page.wait_for_selector("#registered-agents tr[data-agent=added]")
        assert "added" in console.hub.agents
        row = page.locator("#registered-agents tr[data-agent=added]")
        await row.locator("button", has_text="Edit").click()
        spec = json.loads(await page.input_value("#agent-json"))
        assert spec["id"] == "added" and spec["kind"] == "echo"
        await row.locator("button", has_text="Remove").click()
        await page.wait_for_selector("#registered-agents tr[data-agent=added]", state="detached")
        assert "added" not in console.hub.agents
        form = page.locator("#add-mcp")
        await form.locator("input[name=name]").fill("tools")
        await form.locator("input[name=target]").fill("https://tools.example/mcp")
        await form.locator("button[type=submit]").click()
        await page.wait_for_selector("#mcp tr >> text=tools.example")
        await page.locator("#mcp button", has_text="Remove").click()
        await page.wait_for_selector("#ops-mcp >> text=No MCP server registered.")
