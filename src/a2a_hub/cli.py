"""The ``a2a-hub`` command line (a thin shell around asyncio and uvicorn)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

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
err_console = Console(stderr=True)


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
) -> None:
    """Serve agents over A2A.  Settings also come from A2A_HUB_* variables and --config."""
    import uvicorn

    from a2a_hub.server import Hub, create_app

    try:
        overrides = {
            "agents": [parse_agent_spec(a) for a in agent] if agent else None,
            "store": store,
            "host": host,
            "port": port,
            "default_agent": default_agent,
            "public_url": public_url,
            "log_level": log_level,
        }
        settings = load_settings(config, overrides=overrides)
        if not settings.agents:
            raise SettingsError(
                "no agents to serve: pass --agent echo (or list [[agents]] in --config hub.toml)"
            )
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
    uvicorn.run(
        create_app(hub),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
    )


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
