"""``a2a-hub serve``: host agents over A2A with uvicorn."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer

from a2a_hub.cli._options import setting_options
from a2a_hub.cli._output import err_console, escape, fail
from a2a_hub.settings import CONFIG_ENV, SettingsError, load_settings

__all__ = ["serve"]


@setting_options
def serve(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            metavar="FILE",
            help=escape(
                "hub.toml with settings and [[agents]] (flat keys like 'port = 8000', or "
                "[server], [store], [llm] tables)."
            )
            + rf"  [dim yellow]\[env var: {CONFIG_ENV}][/dim yellow]",
        ),
    ] = None,
    *,
    overrides: dict[str, Any],
) -> None:
    """Serve agents over A2A.

    Every setting comes from the command line, else its A2A_HUB_* variable, else
    --config hub.toml, else its default.
    """
    import uvicorn

    from a2a_hub._logging import configure_logging
    from a2a_hub.server import Hub, create_app
    from a2a_hub.server.app import SETTINGS_ENV, tune_gc
    from a2a_hub.server.shutdown import Drain

    try:
        settings = load_settings(config, overrides=overrides)
        if not settings.agents:
            raise SettingsError(
                "no agents to serve: pass --agent echo (or list [[agents]] in --config hub.toml)"
            )
        hub = Hub(settings)
    except (SettingsError, ValueError, ImportError) as exc:
        fail(str(exc), 2)
    server, store = settings.server, settings.store
    configure_logging(server.log_level, server.log_format)
    common: dict[str, Any] = {
        "host": server.host,
        "port": server.port,
        "log_level": server.log_level,
        "access_log": False,
        "timeout_graceful_shutdown": server.graceful_timeout,
    }
    if server.log_format == "json":
        common["log_config"] = None  # keep the JSON handler set above
    base = f"http://{server.host}:{server.port}"
    say = err_console.print
    say(f"a2a-hub serving {len(hub.agents)} agent(s), store {escape(store.url)}")
    for agent_id in hub.agents:
        where = escape(f"{base}/a2a/{agent_id}")
        say(f"  {where}  (card: {where}/.well-known/agent-card.json)")
    if hub.default_agent_id:
        say(f"  default agent at {base}/ : {escape(hub.default_agent_id)}")
    if server.workers > 1:
        # each worker process builds its own hub from the same settings
        os.environ[SETTINGS_ENV] = msgspec.json.encode(settings).decode()
        say(f"  {server.workers} worker processes sharing {escape(store.url)}")
        with _multiprocess_metrics(server.metrics):
            uvicorn.run(
                "a2a_hub.server.app:app_from_environment",
                factory=True,
                workers=server.workers,
                **common,
            )
        return
    app = create_app(hub, drain=Drain(server.graceful_timeout))
    tune_gc()
    uvicorn.run(app, **common)


@contextlib.contextmanager
def _multiprocess_metrics(enabled: bool) -> Iterator[None]:
    """With metrics on, a fresh ``PROMETHEUS_MULTIPROC_DIR`` for the workers (unless the
    operator set one), so that ``/metrics`` on any worker sums them all; removed after."""
    if not enabled or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="a2a-hub-metrics-") as where:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = where
        try:
            yield
        finally:
            del os.environ["PROMETHEUS_MULTIPROC_DIR"]
