"""The ``a2a-hub`` command line (a thin shell around asyncio and uvicorn)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import typer
from rich.console import Console

from a2a_hub.settings import SettingsError, load_settings, parse_agent_spec

__all__ = ["app", "main"]

app = typer.Typer(
    name="a2a-hub",
    help=(
        "a2a-hub: one server hosting many A2A agents at /a2a/{agent_id}, speaking A2A 1.0 "
        "(JSON-RPC and REST), 0.3 and the 0.1 legacy methods.\n\n"
        "Start with:  a2a-hub serve --agent echo   then open "
        "http://127.0.0.1:8000/a2a/echo/.well-known/agent-card.json"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True, soft_wrap=True)
console = Console(soft_wrap=True)

if TYPE_CHECKING:
    from a2a_hub.client import A2AClient, StreamItem


@app.callback()
def _root() -> None:
    """a2a-hub command line."""


@app.command()
def serve(
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            "-a",
            help=(
                "Agent to host (repeatable): 'echo', 'ID=echo', 'module:ExecutorClass' or "
                "'ID=module:ExecutorClass'; options after '?', e.g. 'echo?reply=message'."
            ),
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="hub.toml with settings and [[agents]].")
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            help="Task store URL: sqlite:///path (default sqlite:///.a2a-hub/hub.db), memory://, "
            "postgresql://…"
        ),
    ] = None,
    host: Annotated[str | None, typer.Option(help="Address to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (default 8000).")] = None,
    default_agent: Annotated[
        str | None,
        typer.Option(help="Agent also served at the root URL (automatic with a single agent)."),
    ] = None,
    public_url: Annotated[
        str | None, typer.Option(help="External base URL written into agent cards.")
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="debug, info, warning or error.")] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="Worker processes; needs a shared store (redis:// or postgresql://)."),
    ] = None,
    orphan_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds before another instance fails the tasks of a dead one (30)."),
    ] = None,
    grpc_port: Annotated[
        int | None,
        typer.Option(help="Also serve A2A 1.0 over gRPC on this port (needs a2a-hub[grpc])."),
    ] = None,
) -> None:
    """Serve agents over A2A.  Settings also come from A2A_HUB_* variables and --config."""
    import uvicorn

    from a2a_hub.server import Hub, create_app
    from a2a_hub.server.app import SETTINGS_ENV, tune_gc

    try:
        overrides = {
            "agents": [parse_agent_spec(a) for a in agent] if agent else None,
            "store": store,
            "host": host,
            "port": port,
            "default_agent": default_agent,
            "public_url": public_url,
            "log_level": log_level,
            "workers": workers,
            "orphan_timeout": orphan_timeout,
            "grpc_port": grpc_port,
        }
        settings = load_settings(config, overrides=overrides)
        if not settings.agents:
            raise SettingsError(
                "no agents to serve: pass --agent echo (or list [[agents]] in --config hub.toml)"
            )
        if settings.grpc_port is not None:
            import a2a_hub.server.grpc  # noqa: F401 - fails early with the extra to install
        hub = Hub(settings)
    except (SettingsError, ValueError, ImportError) as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    base = f"http://{settings.host}:{settings.port}"
    err_console.print(f"a2a-hub serving {len(hub.agents)} agent(s), store {settings.store}")
    for agent_id in hub.agents:
        err_console.print(
            f"  {base}/a2a/{agent_id}  (card: {base}/a2a/{agent_id}/.well-known/agent-card.json)"
        )
    if hub.default_agent_id:
        err_console.print(f"  default agent at {base}/ : {hub.default_agent_id}")
    if settings.grpc_port is not None:
        err_console.print(
            f"  gRPC (A2A 1.0) at {settings.host}:{settings.grpc_port}, tenant = agent id"
        )
    if settings.workers > 1:
        # each worker process builds its own hub from the same settings
        os.environ[SETTINGS_ENV] = msgspec.json.encode(settings).decode()
        err_console.print(f"  {settings.workers} worker processes sharing {settings.store}")
        uvicorn.run(
            "a2a_hub.server.app:app_from_environment",
            factory=True,
            workers=settings.workers,
            host=settings.host,
            port=settings.port,
            log_level=settings.log_level.lower(),
            access_log=False,
        )
        return
    app = create_app(hub)
    tune_gc()
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
    )


# --- talking to agents ------------------------------------------------------------------

ApiKey = Annotated[str | None, typer.Option("--api-key", help="Sent as the x-api-key header.")]
Bearer = Annotated[str | None, typer.Option("--bearer", help="Sent as Authorization: Bearer.")]
Headers = Annotated[
    list[str] | None,
    typer.Option("--header", "-H", help="Extra header 'Name: value' (repeatable)."),
]
Transport = Annotated[
    str | None,
    typer.Option(
        "--transport",
        help="jsonrpc-1.0, rest-1.0, jsonrpc-0.3 or jsonrpc-0.1 (default: the card's best).",
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the raw result as JSON.")]

tasks_app = typer.Typer(help="Inspect and control tasks of an agent.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")


def _headers(values: list[str] | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values or []:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise typer.BadParameter(f"header {value!r} must look like 'Name: value'")
        headers[name.strip()] = content.strip()
    return headers


def _run(work: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run a client command; any failure is one clear line and a non-zero exit."""
    import httpx

    from a2a_hub.protocol.errors import A2AError

    try:
        asyncio.run(work())
    except A2AError as exc:
        code = "" if type(exc) is A2AError else f" [dim](A2A error {exc.code})[/dim]"
        err_console.print(f"[red]error:[/red] {exc.message}{code}", highlight=False)
        raise typer.Exit(1) from None
    except httpx.HTTPError as exc:
        err_console.print(f"[red]error:[/red] {type(exc).__name__}: {exc or 'connection failed'}")
        raise typer.Exit(1) from None
    except ValueError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def _with_client(
    url: str,
    transport: str | None,
    api_key: str | None,
    bearer: str | None,
    header: list[str] | None,
    use: Callable[[A2AClient], Awaitable[None]],
) -> None:
    """Connect to the agent at ``url``, run ``use`` with the client, report failures."""

    async def work() -> None:
        from a2a_hub.client import A2AClient

        client = await A2AClient.connect(
            url, transport=transport, api_key=api_key, bearer=bearer, headers=_headers(header)
        )
        async with client:
            await use(client)

    _run(work)


def _print_json(value: object) -> None:
    from a2a_hub._render import to_json

    console.print(to_json(value), markup=False, highlight=False)


def _show(value: object, as_json: bool, human: Callable[[], None]) -> None:
    """Print ``value`` as JSON with ``--json``, else the human way."""
    if as_json:
        _print_json(value)
    else:
        human()


async def _follow(items: AsyncIterator[StreamItem], as_json: bool) -> None:
    """Print a stream as it arrives."""
    from a2a_hub._render import EventPrinter

    printer = EventPrinter(console)
    async for item in items:
        if as_json:
            _print_json({"id": item.id, "event": item.response})
        else:
            printer.show(item.response)
    printer.finish()


@app.command()
def card(
    url: str,
    as_json: AsJson = False,
    api_key: ApiKey = None,
    bearer: Bearer = None,
    header: Headers = None,
) -> None:
    """Show the agent card at URL (a base URL or the card's own URL)."""
    from a2a_hub._render import print_card
    from a2a_hub.client import A2AClient, fetch_card

    async def work() -> None:
        import httpx

        headers = A2AClient.auth_headers(_headers(header), api_key=api_key, bearer=bearer)
        async with httpx.AsyncClient(timeout=30) as http:
            found, _ = await fetch_card(http, url, headers)
        _show(found, as_json, lambda: print_card(console, found))

    _run(work)


@app.command()
def send(
    url: str,
    text: str,
    stream: Annotated[
        bool, typer.Option("--stream", help="Stream the answer as it comes.")
    ] = False,
    context: Annotated[str | None, typer.Option("--context", help="contextId to continue.")] = None,
    task: Annotated[str | None, typer.Option("--task", help="taskId to continue.")] = None,
    as_json: AsJson = False,
    transport: Transport = None,
    api_key: ApiKey = None,
    bearer: Bearer = None,
    header: Headers = None,
) -> None:
    """Send TEXT to the agent at URL and show the answer."""
    from a2a_hub._render import print_result

    async def use(client: A2AClient) -> None:
        if stream:
            await _follow(client.stream(text, context_id=context, task_id=task), as_json)
            return
        result = await client.send(text, context_id=context, task_id=task)
        _show(result, as_json, lambda: print_result(console, result))

    _with_client(url, transport, api_key, bearer, header, use)


@app.command()
def chat(
    url: str,
    transport: Transport = None,
    api_key: ApiKey = None,
    bearer: Bearer = None,
    header: Headers = None,
) -> None:
    """Talk to the agent at URL over several turns (/new, /cancel, /quit)."""
    from a2a_hub._render import print_result
    from a2a_hub.client import Conversation

    async def use(client: A2AClient) -> None:
        conv = Conversation(client)
        console.print(
            f"Talking to [bold]{client.card.name}[/bold] over "
            f"{client.transport.binding} {client.transport.version}. "
            "Commands: /new (new conversation), /cancel (cancel the task), /quit",
            highlight=False,
        )
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
                conv.reset()
                console.print("[dim]new conversation[/dim]")
            elif line == "/cancel":
                if conv.task_id is None:
                    console.print("[dim]no task to cancel[/dim]")
                    continue
                canceled = await client.cancel_task(conv.task_id)
                conv.observe(canceled)
                console.print(f"task {canceled.id} {canceled.status.state.label}")
            elif client.streaming:
                await _follow(conv.stream(line), as_json=False)
            else:
                print_result(console, await conv.send(line))

    _with_client(url, transport, api_key, bearer, header, use)


@tasks_app.command("get")
def tasks_get(
    url: str,
    task_id: str,
    history: Annotated[int | None, typer.Option(help="At most N messages.")] = None,
    as_json: AsJson = False,
    transport: Transport = None,
    api_key: ApiKey = None,
    bearer: Bearer = None,
    header: Headers = None,
) -> None:
    """Show one task."""
    from a2a_hub._render import print_result

    async def use(client: A2AClient) -> None:
        found = await client.get_task(task_id, history)
        _show(found, as_json, lambda: print_result(console, found))

    _with_client(url, transport, api_key, bearer, header, use)


@tasks_app.command("list")
def tasks_list(
    url: str,
    context: Annotated[str | None, typer.Option("--context", help="Only this context.")] = None,
    status: Annotated[str | None, typer.Option(help="Only this state, e.g. working.")] = None,
    page_size: Annotated[int | None, typer.Option(help="Tasks per page (1-100).")] = None,
    page_token: Annotated[str | None, typer.Option(help="nextPageToken of a page.")] = None,
    as_json: AsJson = False,
    transport: Transport = None,
    api_key: ApiKey = None,
    bearer: Bearer = None,
    header: Headers = None,
) -> None:
    """List tasks, newest first."""
    from a2a_hub._render import print_tasks
    from a2a_hub.protocol.types import ListTasksRequest, TaskState

    state = None
    if status:
        key = status.upper().replace("-", "_")
        state = TaskState(key if key.startswith("TASK_STATE_") else "TASK_STATE_" + key)
    request = ListTasksRequest(
        context_id=context, status=state, page_size=page_size, page_token=page_token
    )

    async def use(client: A2AClient) -> None:
        page = await client.list_tasks(request)
        _show(
            page,
            as_json,
            lambda: print_tasks(console, page.tasks, page.next_page_token, page.total_size),
        )

    _with_client(url, transport, api_key, bearer, header, use)


@tasks_app.command("cancel")
def tasks_cancel(
    url: str,
    task_id: str,
    as_json: AsJson = False,
    transport: Transport = None,
    api_key: ApiKey = None,
    bearer: Bearer = None,
    header: Headers = None,
) -> None:
    """Cancel a task."""
    from a2a_hub._render import print_result

    async def use(client: A2AClient) -> None:
        canceled = await client.cancel_task(task_id)
        _show(canceled, as_json, lambda: print_result(console, canceled))

    _with_client(url, transport, api_key, bearer, header, use)


@tasks_app.command("subscribe")
def tasks_subscribe(
    url: str,
    task_id: str,
    last_event_id: Annotated[int | None, typer.Option(help="Replay events after this id.")] = None,
    as_json: AsJson = False,
    transport: Transport = None,
    api_key: ApiKey = None,
    bearer: Bearer = None,
    header: Headers = None,
) -> None:
    """Follow a task's events until it settles."""

    async def use(client: A2AClient) -> None:
        await _follow(client.subscribe(task_id, last_event_id), as_json)

    _with_client(url, transport, api_key, bearer, header, use)


@app.command()
def run(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (AgentBeats TOML format).")],
    show_logs: Annotated[bool, typer.Option("--show-logs", help="Print the agents' logs.")] = False,
    serve_only: Annotated[
        bool, typer.Option("--serve-only", help="Start the agents and wait; no evaluation.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Results file (default: in the run's folder).")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds the evaluation may take.")] = 600.0,
    ready_timeout: Annotated[
        float, typer.Option(help="Seconds to wait for every agent card.")
    ] = 30.0,
    run_dir: Annotated[
        Path | None, typer.Option(help="Folder for logs and results (default .a2a-hub/runs/…).")
    ] = None,
) -> None:
    """Run a scenario: start its agents, let the green agent evaluate the others, show scores."""
    from a2a_hub.scenarios.runner import ScenarioError, run_scenario

    try:
        code = run_scenario(
            scenario,
            console=console,
            show_logs=show_logs,
            serve_only=serve_only,
            out=out,
            timeout=timeout,
            ready_timeout=ready_timeout,
            run_dir=run_dir,
        )
    except ScenarioError as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err_console.print("stopped; every agent process was terminated")
        raise typer.Exit(0 if serve_only else 130) from None
    raise typer.Exit(code)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
