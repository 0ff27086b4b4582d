"""``a2a-hub worker``: run the agents of a worker tier on Temporal.

The same agent definitions as ``a2a-hub serve`` (``--agent``, ``--config hub.toml``, the
registry's), the same store, and ``--executor temporal://…``; no HTTP port.  It runs at
most ``--slots`` turns at once and stops on Ctrl+C / SIGTERM (the turns it runs then
fail, saying the worker stopped).  Exit codes: 2 for a bad setting, 1 when the store or
Temporal cannot be reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import Annotated, Any

import typer

from a2a_hub.cli._options import setting_options
from a2a_hub.cli._output import err_console, escape, fail
from a2a_hub.settings import CONFIG_ENV, Settings, SettingsError, load_settings

__all__ = ["worker"]


@setting_options
def worker(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            metavar="FILE",
            help=escape("hub.toml with settings and [[agents]], as for serve.")
            + rf"  [dim yellow]\[env var: {CONFIG_ENV}][/dim yellow]",
        ),
    ] = None,
    slots: Annotated[
        int,
        typer.Option("--slots", min=1, metavar="N", help="Turns this worker runs at once."),
    ] = 8,
    health_port: Annotated[
        int | None,
        typer.Option(
            "--health-port",
            min=1,
            max=65535,
            metavar="PORT",
            help="Serve /healthz, /readyz and /metrics on this port (for probes).",
        ),
    ] = None,
    *,
    overrides: dict[str, Any],
) -> None:
    """Run the agents of a worker tier: turns queued on Temporal by the API nodes
    (a2a-hub serve --executor temporal://…), at most --slots at a time."""
    from a2a_hub._logging import configure_logging
    from a2a_hub.cli.serve import check_executor, check_store, use_app_dir
    from a2a_hub.server import Hub
    from a2a_hub.workers import parse_executor

    try:
        settings = load_settings(config, overrides=overrides)
        target = parse_executor(settings.server.executor)
        if target is None:
            raise SettingsError(
                "a2a-hub worker needs --executor temporal://HOST:PORT?namespace=NS&task_queue=Q "
                "(the one its API nodes use)"
            )
        if not settings.agents:
            raise SettingsError("no agents to run: pass --agent (or [[agents]] in --config)")
        use_app_dir(settings.server.app_dir)
        import a2a_hub.workers.worker  # noqa: F401 - fails early with the extra to install

        hub = Hub(settings, worker=True)
    except (SettingsError, ValueError, ImportError) as exc:
        fail(str(exc), 2)
    check_store(settings.store.url)
    check_executor(settings)
    configure_logging(settings.server.log_level, settings.server.log_format)
    say = err_console.print
    say(
        f"a2a-hub worker: {len(hub.agents)} agent(s) ({escape(', '.join(hub.agents))}), "
        f"{slots} slot(s), Temporal {escape(target.address)} queue {escape(target.task_queue)}",
        highlight=False,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_work(hub, settings, slots, health_port))


async def _work(hub: Any, settings: Settings, slots: int, health_port: int | None) -> None:
    from a2a_hub.protocol.errors import A2AError
    from a2a_hub.workers import parse_executor
    from a2a_hub.workers.probes import Probes
    from a2a_hub.workers.worker import TurnWorker

    target = parse_executor(settings.server.executor)
    assert target is not None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with hub:
            turns = TurnWorker(
                target,
                [agent.spec for agent in hub.agents.values()],
                lambda agent_id: a.engine if (a := hub.agents.get(agent_id)) else None,
                hub.store,
                slots=slots,
            )
            async with contextlib.AsyncExitStack() as stack:
                await stack.enter_async_context(turns)
                if health_port is not None:
                    checks = {
                        "store": lambda: hub.store.get_task_record("__readyz__", "__readyz__"),
                        "temporal": turns.check,
                    }
                    host = settings.server.host
                    await stack.enter_async_context(Probes(host, health_port, checks))
                err_console.print(f"a2a-hub worker {turns.identity} ready", highlight=False)
                await stop.wait()
    except A2AError as exc:
        fail(exc.message, 1)
