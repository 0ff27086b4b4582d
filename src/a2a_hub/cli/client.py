"""Talking to any A2A agent: ``card``, ``send``, ``chat``, ``tasks get|list|cancel|subscribe``."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from a2a_hub.cli._options import Command, Group, default_help
from a2a_hub.cli._output import (
    TASK_EXIT_CODES,
    console,
    err_console,
    escape,
    fail,
    follow,
    show,
)

if TYPE_CHECKING:
    from a2a_hub.client import A2AClient, Conversation

__all__ = ["card", "chat", "send", "tasks_app"]

ApiKey = Annotated[
    str | None, typer.Option("--api-key", metavar="KEY", help="Sent as the x-api-key header.")
]
Bearer = Annotated[
    str | None, typer.Option("--bearer", metavar="TOKEN", help="Sent as Authorization: Bearer.")
]
Headers = Annotated[
    list[str] | None,
    typer.Option(
        "--header", "-H", metavar="'NAME: VALUE'", help="Extra header 'Name: value' (repeatable)."
    ),
]
Transport = Annotated[
    str | None,
    typer.Option(
        "--transport",
        metavar="NAME",
        help=default_help(
            "jsonrpc-1.0, rest-1.0, jsonrpc-0.3, jsonrpc-0.1, or ws (A2A over WebSocket, "
            "a preview: a2a-hub's <agent URL>/ws).",
            "the best the card offers",
        ),
        show_default=False,
    ),
]
Url = Annotated[
    str, typer.Argument(metavar="URL", help="The agent's URL (or the URL of its card).")
]
TaskId = Annotated[str, typer.Argument(metavar="TASK_ID", help="The task's id.")]
AsJson = Annotated[bool, typer.Option("--json", metavar="", help="Print the raw result as JSON.")]

tasks_app = typer.Typer(
    cls=Group, help="Inspect and control tasks of an agent.", no_args_is_help=True
)


def _headers(values: list[str] | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values or []:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise typer.BadParameter(f"header {value!r} must look like 'Name: value'")
        headers[name.strip()] = content.strip()
    return headers


@contextlib.contextmanager
def _reported() -> Iterator[None]:
    """Any failure of a client command: one clear line and a non-zero exit."""
    import httpx

    from a2a_hub.protocol.errors import A2AError

    try:
        yield
    except A2AError as exc:
        code = "" if type(exc) is A2AError else f" [dim](A2A error {exc.code})[/dim]"
        fail(exc.message, 1, detail=code)
    except httpx.HTTPError as exc:
        fail(f"{type(exc).__name__}: {exc or 'connection failed'}", 1)
    except ValueError as exc:
        fail(str(exc), 1)
    except OSError as exc:  # a WebSocket that could not connect or reconnect
        fail(str(exc) or type(exc).__name__, 1)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def _run(work: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run a client command; any failure is one clear line and a non-zero exit."""
    with _reported():
        asyncio.run(work())


@dataclass(frozen=True)
class ClientOptions:
    """How a command reaches the agent: the options every agent command shares."""

    transport: str | None = None
    api_key: str | None = None
    bearer: str | None = None
    header: list[str] | None = None

    async def connect(self, url: str) -> A2AClient:
        from a2a_hub.client import A2AClient

        return await A2AClient.connect(
            url,
            transport=self.transport,
            api_key=self.api_key,
            bearer=self.bearer,
            headers=_headers(self.header),
        )

    def run(self, url: str, use: Callable[[A2AClient], Awaitable[None]]) -> None:
        """Connect to the agent at ``url``, run ``use`` with the client, report failures."""

        async def work() -> None:
            async with await self.connect(url) as client:
                await use(client)

        _run(work)


_CLIENT_OPTIONS: dict[str, Any] = {
    "transport": Transport,
    "api_key": ApiKey,
    "bearer": Bearer,
    "header": Headers,
}


def _with_client_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with the options --transport, --api-key, --bearer and --header after its
    own, which reach it as one :class:`ClientOptions` in its parameter ``options``."""
    signature = inspect.signature(command, eval_str=True)
    own = [p for p in signature.parameters.values() if p.name != "options"]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
        for name, kind in _CLIENT_OPTIONS.items()
    ]

    @functools.wraps(command)
    def with_options(**values: Any) -> None:
        options = ClientOptions(**{name: values.pop(name) for name in _CLIENT_OPTIONS})
        command(options=options, **values)

    del with_options.__wrapped__  # typer must read the signature below, not command's
    with_options.__signature__ = signature.replace(parameters=own + shared)  # type: ignore[attr-defined]
    with_options.__annotations__ = {p.name: p.annotation for p in own + shared}
    return with_options


def card(
    url: Url,
    as_json: AsJson = False,
    api_key: ApiKey = None,
    bearer: Bearer = None,
    header: Headers = None,
    card_signature: Annotated[
        str,
        typer.Option(
            "--card-signature",
            metavar="POLICY",
            help="Check the card's signature: off, verify-if-present or require.",
        ),
    ] = "off",
    card_keys: Annotated[
        str | None,
        typer.Option("--card-keys", metavar="JWKS", help="The trusted keys: a JWKS URL or file."),
    ] = None,
) -> None:
    """Show the agent card at URL (a base URL or the card's own URL); with
    --card-signature, check its signature first (exit 1 saying why when it fails)."""
    from a2a_hub._render import print_card
    from a2a_hub.client import A2AClient, fetch_card
    from a2a_hub.client.card_signature import CardCheck

    try:
        check = CardCheck(card_signature, card_keys)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None

    async def work() -> None:
        import httpx

        headers = A2AClient.auth_headers(_headers(header), api_key=api_key, bearer=bearer)
        async with httpx.AsyncClient(timeout=30) as http:
            found, _ = await fetch_card(http, url, headers, check)
        show(found, as_json, lambda: print_card(console, found))

    _run(work)


@_with_client_options
def send(
    url: Url,
    text: Annotated[
        str, typer.Argument(metavar="TEXT", help="The message to send ('-': read standard input).")
    ],
    stream: Annotated[
        bool, typer.Option("--stream", metavar="", help="Stream the answer as it comes.")
    ] = False,
    context: Annotated[
        str | None, typer.Option("--context", metavar="ID", help="contextId to continue.")
    ] = None,
    task: Annotated[
        str | None, typer.Option("--task", metavar="ID", help="taskId to continue.")
    ] = None,
    as_json: AsJson = False,
    *,
    options: ClientOptions,
) -> None:
    """Send TEXT to the agent at URL and show the answer.

    Exits 0 when the agent answers (a completed task, a message, a task waiting for
    input), 3 when the task failed, 4 rejected, 5 canceled; 1 for an error (the agent
    cannot be reached, or answers with a protocol error), 2 for a bad option.
    """
    from a2a_hub._render import print_result
    from a2a_hub.protocol.types import Task

    if text == "-":  # a2a-hub send URL - < question.txt
        text = sys.stdin.read().rstrip("\n")
        if not text.strip():
            fail("nothing to send: standard input was empty", 2)
    state: str | None = None

    async def use(client: A2AClient) -> None:
        nonlocal state
        if stream:
            state = await follow(client.stream(text, context_id=context, task_id=task), as_json)
            return
        result = await client.send(text, context_id=context, task_id=task)
        show(result, as_json, lambda: print_result(console, result))
        if isinstance(result, Task):
            state = result.status.state.label

    options.run(url, use)
    raise typer.Exit(TASK_EXIT_CODES.get(state or "", 0))


def chat(
    url: Url,
    transport: Transport = None,
    api_key: ApiKey = None,
    bearer: Bearer = None,
    header: Headers = None,
    ws: Annotated[
        bool,
        typer.Option(
            "--ws", metavar="", help="Use the hub's WebSocket channel (resumes on its own)."
        ),
    ] = False,
) -> None:
    """Talk to the agent at URL over several turns (/new, /cancel, /quit, Ctrl+D).

    Each line you type is a message in one conversation; Ctrl+C or Ctrl+D leaves.
    """
    from a2a_hub.client import Conversation

    if ws:
        _run(lambda: _ws_chat(url, api_key, _headers(header)))
        return
    # The prompt is read in the main thread, outside the event loop, so that Ctrl+C
    # stops it at once; one loop (asyncio.Runner) serves every turn and the connection.
    with _reported(), asyncio.Runner() as loop:
        client = loop.run(ClientOptions(transport, api_key, bearer, header).connect(url))
        client.on_retry = _reconnecting
        try:
            console.print(
                f"Talking to [bold]{escape(client.card.name)}[/bold] over "
                f"{escape(client.transport.binding)} {escape(client.transport.version)}. "
                "Commands: /new (new conversation), /cancel (cancel the task), /quit",
                highlight=False,
            )
            conv = Conversation(client)
            while True:
                try:
                    line = input("you> ").strip()
                except (EOFError, KeyboardInterrupt):
                    console.print()
                    break
                if line == "/quit":
                    break
                if line:
                    loop.run(_turn(client, conv, line))
        finally:
            loop.run(client.close())


async def _turn(client: A2AClient, conv: Conversation, line: str) -> None:
    """One line typed in ``chat``: a command or a message to the agent."""
    from a2a_hub._render import print_result

    if line == "/new":
        conv.reset()
        console.print("[dim]new conversation[/dim]")
    elif line == "/cancel":
        if conv.task_id is None:
            console.print("[dim]no task to cancel[/dim]")
            return
        canceled = await client.cancel_task(conv.task_id)
        conv.observe(canceled)
        console.print(f"task {canceled.id} {canceled.status.state.label}", markup=False)
    elif client.streaming:
        await follow(conv.stream(line), as_json=False)
    else:
        print_result(console, await conv.send(line))


def _reconnecting(attempt: int, most: int | None, reason: str) -> None:
    """The line a chat shows at once when its connection dropped and is being retried."""
    of = f"/{most}" if most is not None else ""
    err_console.print(f"[dim]reconnecting ({attempt}{of})…[/dim]", highlight=False)


async def _ws_chat(url: str, api_key: str | None, headers: dict[str, str]) -> None:
    """``chat --ws``: each line a ``send_message``; events printed until the turn ends."""
    import uuid

    from a2a_hub.client.websocket import TERMINAL_STATUSES, WebSocketClient

    async with WebSocketClient(url, api_key=api_key, headers=headers) as client:
        client.on_retry = lambda attempt, most: _reconnecting(attempt, most, "")
        console.print(
            f"Talking over the WebSocket {escape(client.url)}. "
            "Commands: /new (new conversation), /cancel (cancel the task), /quit",
            highlight=False,
        )
        events = client.events()
        task_id: str | None = None
        while True:
            try:
                line = (await asyncio.to_thread(input, "you> ")).strip()
            except EOFError:
                break
            if not line:
                continue
            if line == "/quit":
                break
            if line == "/new":
                client.context_id, task_id = str(uuid.uuid4()), None
                console.print("[dim]new conversation[/dim]")
                continue
            if line == "/cancel":
                if task_id is None:
                    console.print("[dim]no task to cancel[/dim]")
                    continue
                await client.cancel_task(task_id)
            else:
                await client.send_message(line, task_id=task_id)
            async for event in events:
                kind = event["event"]
                if kind == "content_stream":
                    console.print(event["chunk"], end="", markup=False, highlight=False)
                elif kind == "tool_call":
                    console.print(
                        f"\n[tool call {event['tool_id']} {event['params']}]", markup=False
                    )
                elif kind == "tool_response":
                    console.print(f"\n[tool result {event['result']}]", markup=False)
                elif kind == "error":
                    console.print(f"\nerror ({event['code']}): {event['message']}", markup=False)
                    if event.get("task_id") is None or line == "/cancel":
                        break
                elif kind == "message_status_update" and event.get("seq") == 0:
                    console.print("")  # an immediate reply: no task
                    break
                elif kind == "task_status_update":
                    task_id = event["global_task_id"]
                    status = event["status"]
                    if status in TERMINAL_STATUSES:
                        note = f": {event['message']}" if event.get("message") else ""
                        console.print(f"\n[{status}{note}]", markup=False, highlight=False)
                        if status != "input-required":
                            task_id = None
                        break


@tasks_app.command("get", cls=Command)
@_with_client_options
def tasks_get(
    url: Url,
    task_id: TaskId,
    history: Annotated[int | None, typer.Option(metavar="N", help="At most N messages.")] = None,
    as_json: AsJson = False,
    *,
    options: ClientOptions,
) -> None:
    """Show one task."""
    from a2a_hub._render import print_result

    async def use(client: A2AClient) -> None:
        found = await client.get_task(task_id, history)
        show(found, as_json, lambda: print_result(console, found))

    options.run(url, use)


@tasks_app.command("list", cls=Command)
@_with_client_options
def tasks_list(
    url: Url,
    context: Annotated[
        str | None, typer.Option("--context", metavar="ID", help="Only this context.")
    ] = None,
    status: Annotated[
        str | None,
        typer.Option(metavar="STATE", help="Only this state, e.g. working or input-required."),
    ] = None,
    page_size: Annotated[
        int | None, typer.Option(metavar="N", help="Tasks per page (1-100).")
    ] = None,
    page_token: Annotated[
        str | None, typer.Option(metavar="TOKEN", help="nextPageToken of a page.")
    ] = None,
    as_json: AsJson = False,
    *,
    options: ClientOptions,
) -> None:
    """List tasks, newest first."""
    from a2a_hub._render import print_tasks
    from a2a_hub.protocol.types import ListTasksRequest, TaskState

    state = None
    if status:
        key = status.upper().replace("-", "_")
        try:
            state = TaskState(key if key.startswith("TASK_STATE_") else "TASK_STATE_" + key)
        except ValueError:
            known = ", ".join(s.label for s in TaskState if s is not TaskState.UNSPECIFIED)
            fail(f"--status {status!r} is not a task state; states: {known}", 2)
    request = ListTasksRequest(
        context_id=context, status=state, page_size=page_size, page_token=page_token
    )

    async def use(client: A2AClient) -> None:
        page = await client.list_tasks(request)
        show(
            page,
            as_json,
            lambda: print_tasks(console, page.tasks, page.next_page_token, page.total_size),
        )

    options.run(url, use)


@tasks_app.command("cancel", cls=Command)
@_with_client_options
def tasks_cancel(
    url: Url,
    task_id: TaskId,
    as_json: AsJson = False,
    *,
    options: ClientOptions,
) -> None:
    """Cancel a task."""
    from a2a_hub._render import print_result

    async def use(client: A2AClient) -> None:
        canceled = await client.cancel_task(task_id)
        show(canceled, as_json, lambda: print_result(console, canceled))

    options.run(url, use)


@tasks_app.command("subscribe", cls=Command)
@_with_client_options
def tasks_subscribe(
    url: Url,
    task_id: TaskId,
    last_event_id: Annotated[
        int | None, typer.Option(metavar="ID", help="Replay events after this id.")
    ] = None,
    as_json: AsJson = False,
    *,
    options: ClientOptions,
) -> None:
    """Follow a task's events until it settles."""

    async def use(client: A2AClient) -> None:
        await follow(client.subscribe(task_id, last_event_id), as_json)

    options.run(url, use)


push_app = typer.Typer(
    cls=Group,
    help="Push notification configs of a task (webhooks the agent POSTs its updates to).",
    no_args_is_help=True,
)
tasks_app.add_typer(push_app, name="push")
ConfigId = Annotated[str, typer.Argument(metavar="CONFIG_ID", help="The config's id.")]


def _show_configs(configs: list[Any], as_json: bool) -> None:
    def human() -> None:
        if not configs:
            console.print("no push notification configs")
        for c in configs:
            extra = []
            if c.token:
                extra.append(f"token {c.token}")
            if c.authentication is not None:
                extra.append(f"auth {c.authentication.scheme}")
            tail = f"  ({', '.join(extra)})" if extra else ""
            console.print(f"{escape(c.id or '')}  {escape(c.url)}{escape(tail)}")

    show(configs, as_json, human)


@push_app.command("set", cls=Command)
@_with_client_options
def push_set(
    url: Url,
    task_id: TaskId,
    webhook: Annotated[str, typer.Argument(metavar="WEBHOOK", help="The receiver's URL.")],
    config_id: Annotated[
        str | None, typer.Option("--id", metavar="ID", help="The config's id (default: new).")
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(metavar="TOKEN", help="Sent back as X-A2A-Notification-Token."),
    ] = None,
    auth: Annotated[
        str | None,
        typer.Option(
            metavar="'SCHEME CREDENTIALS'",
            help="Sent as the Authorization header of each notification, e.g. 'Bearer abc'.",
        ),
    ] = None,
    as_json: AsJson = False,
    *,
    options: ClientOptions,
) -> None:
    """Register a webhook for a task's updates."""
    from a2a_hub.protocol.types import AuthenticationInfo, TaskPushNotificationConfig

    authentication = None
    if auth:
        scheme, _, credentials = auth.strip().partition(" ")
        authentication = AuthenticationInfo(scheme=scheme, credentials=credentials or None)
    config = TaskPushNotificationConfig(
        url=webhook, id=config_id, task_id=task_id, token=token, authentication=authentication
    )

    async def use(client: A2AClient) -> None:
        _show_configs([await client.create_push_config(config)], as_json)

    options.run(url, use)


@push_app.command("get", cls=Command)
@_with_client_options
def push_get(
    url: Url,
    task_id: TaskId,
    config_id: ConfigId,
    as_json: AsJson = False,
    *,
    options: ClientOptions,
) -> None:
    """Show one push notification config (credentials masked)."""

    async def use(client: A2AClient) -> None:
        _show_configs([await client.get_push_config(task_id, config_id)], as_json)

    options.run(url, use)


@push_app.command("list", cls=Command)
@_with_client_options
def push_list(
    url: Url,
    task_id: TaskId,
    as_json: AsJson = False,
    *,
    options: ClientOptions,
) -> None:
    """List a task's push notification configs (credentials masked)."""

    async def use(client: A2AClient) -> None:
        _show_configs(await client.list_push_configs(task_id), as_json)

    options.run(url, use)


@push_app.command("delete", cls=Command)
@_with_client_options
def push_delete(
    url: Url,
    task_id: TaskId,
    config_id: ConfigId,
    *,
    options: ClientOptions,
) -> None:
    """Delete a push notification config."""

    async def use(client: A2AClient) -> None:
        await client.delete_push_config(task_id, config_id)
        console.print(f"deleted {escape(config_id)}")

    options.run(url, use)
