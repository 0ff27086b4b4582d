"""``a2a-hub serve``: host agents over A2A with uvicorn.

Before the banner, everything that can be checked is: the settings, the agents
(imported from ``--app-dir`` first), the port (bound here and handed to uvicorn)
and the store (opened once and closed).  Each failure is one or two lines and a
non-zero exit: 2 for a bad setting, 1 when the port or the store cannot be used.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote

import msgspec
import typer

from a2a_hub.cli._options import setting_options
from a2a_hub.cli._output import err_console, escape, fail
from a2a_hub.settings import CONFIG_ENV, Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["SHUTDOWN_GRACE", "serve", "worker_app"]

#: Seconds that open requests (SSE streams above all) got to finish after Ctrl+C
#: before ``graceful_timeout`` became a setting (its log message falls back to it).
SHUTDOWN_GRACE = 5
_GRACE_ENV = "A2A_HUB_SERVE_GRACE"
#: Seconds the start-up check of the store may take.
STORE_CHECK_TIMEOUT = 30.0


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
    --config hub.toml, else its default.  Exit codes: 2 for a bad setting, 1 when the
    port or the store cannot be used.
    """
    from a2a_hub._logging import configure_logging
    from a2a_hub.server import Hub
    from a2a_hub.server.shutdown import catch_early_interrupts, hold_early_interrupts
    from a2a_hub.stores.urls import describe_store_url

    catch_early_interrupts()  # a Ctrl+C while starting is never lost
    app_dir = "."
    try:
        settings = load_settings(config, overrides=overrides)
        app_dir = settings.server.app_dir
        if not settings.agents:
            raise SettingsError(
                "no agents to serve: pass --agent echo (or list [[agents]] in --config hub.toml)"
            )
        use_app_dir(app_dir)
        _llm_environment(settings.server.host, settings.server.port)
        if settings.server.grpc_port is not None:
            import a2a_hub.server.grpc  # noqa: F401 - fails early with the extra to install
        if settings.server.tracing != "off":
            from a2a_hub import tracing

            tracing.configure(settings.server.tracing)  # fails early with the extra to install
        hub = Hub(settings)
    except (SettingsError, ValueError, ImportError) as exc:
        hint = ""
        if "No module named" in str(exc):
            hint = (
                f" (modules are looked for in --app-dir {Path(app_dir).resolve()}, "
                "then among the installed packages)"
            )
        fail(f"{exc}{hint}", 2)
    server, store = settings.server, settings.store
    sock = listen(server.host, server.port)
    try:
        check_store(store.url)
        asyncio.run(hub.admit_configured())  # e.g. a remote card failing its signature check
        check_executor(settings)  # a worker tier's Temporal (fails fast when unreachable)
    except KeyboardInterrupt:
        sock.close()
        raise typer.Exit(130) from None
    except SettingsError as exc:
        sock.close()
        fail(str(exc), 2)
    hold_early_interrupts()  # from here on nothing blocks: a Ctrl+C stops it once it runs
    configure_logging(server.log_level, server.log_format, server.access_log)
    base = f"http://{_url_host(server.host)}:{server.port}"
    say = err_console.print
    where_store = escape(describe_store_url(store.url))
    say(f"a2a-hub serving {len(hub.agents)} agent(s), store {where_store}", highlight=False)
    for agent_id in hub.agents:
        where = escape(f"{base}/a2a/{quote(agent_id, safe='')}")
        say(f"  {where}  (card: {where}/.well-known/agent-card.json)", highlight=False)
    if hub.auth.open:
        say(
            "  open hub: no authentication, anyone may call every agent (README: Authentication)",
            highlight=False,
        )
    else:
        locked = ", ".join(a for a in hub.agents if hub.auth.requires_key(a))
        say(f"  API keys required by: {escape(locked)}", highlight=False)
    if hub.default_agent_id:
        say(f"  default agent at {base}/ : {escape(hub.default_agent_id)}", highlight=False)
    if hub.turns is not None:
        say(
            f"  API node: agents run on workers via {escape(hub.turns.target.url)}", highlight=False
        )
    if server.grpc_port is not None:
        say(
            f"  gRPC (A2A 1.0) at {escape(server.host)}:{server.grpc_port}, tenant = agent id",
            highlight=False,
        )
    if server.workers > 1:
        say(f"  {server.workers} worker processes; press Ctrl+C to stop", highlight=False)
        with _multiprocess_metrics(server.metrics):
            _serve_workers(settings, sock)
    else:
        say("  press Ctrl+C to stop", highlight=False)
        _serve_one(hub, sock)


def _llm_environment(host: str, port: int) -> None:
    """Tell the agents this hub hosts where its LLM endpoint is (``A2A_HUB_LLM_URL``) and
    give them the token that opens it (``A2A_HUB_LLM_TOKEN``), before they are imported;
    worker processes inherit both."""
    from a2a_hub.llm.served import LLM_PATH, LLM_URL_ENV, llm_api_key

    local = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    os.environ[LLM_URL_ENV] = f"http://{_url_host(local)}:{port}{LLM_PATH}"
    llm_api_key()


def use_app_dir(app_dir: str) -> None:
    """Put ``app_dir`` (relative to the current directory) first on ``sys.path``, as
    uvicorn's ``--app-dir`` does, so that ``--agent mymod:MyExecutor`` finds ``mymod.py``
    there; worker processes inherit the path."""
    path = Path(app_dir).expanduser().resolve()
    if not path.is_dir():
        raise SettingsError(f"--app-dir {app_dir!r} is not a folder ({path})")
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` for uvicorn, or one line saying why not (exit 1)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        fail(f"--host {host!r} is not an address of this machine ({exc.strerror})", 1)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        where = f"{_url_host(host)}:{port}"
        if exc.errno == errno.EADDRINUSE:
            fail(
                f"port {port} is already in use on {host} (another a2a-hub?); stop that "
                f"server or choose another --port",
                1,
            )
        if exc.errno == errno.EACCES:
            fail(f"no permission to listen on {where}; choose a --port above 1023", 1)
        if exc.errno == errno.EADDRNOTAVAIL:
            fail(f"--host {host!r} is not an address of this machine; try 127.0.0.1", 1)
        fail(f"cannot listen on {where}: {exc.strerror or exc}", 1)
    sock.set_inheritable(True)
    return sock


def check_store(url: str) -> None:
    """Open the store at ``url`` once and close it; on failure, two lines and exit 1."""
    from a2a_hub.stores import open_store
    from a2a_hub.stores.urls import open_failure

    async def probe() -> None:
        store = open_store(url)
        try:
            async with asyncio.timeout(STORE_CHECK_TIMEOUT):
                await store.open()
        finally:
            await store.close()

    # the failure is said below, once: not also as the outage warning of stores/outage.py
    outage_log = logging.getLogger("a2a_hub.stores.outage")
    was = outage_log.disabled
    outage_log.disabled = True
    try:
        asyncio.run(probe())
    except Exception as exc:
        message = open_failure(url, exc)
        if isinstance(exc, TimeoutError):
            message = message.replace(" in time", f" within {STORE_CHECK_TIMEOUT:g} s", 1)
        fail(message, 1)
    finally:
        outage_log.disabled = was


def check_executor(settings: Settings) -> None:
    """Connect to the settings' Temporal once (nothing for ``inprocess``); on failure one
    line and exit 1."""
    from a2a_hub.protocol.errors import A2AError
    from a2a_hub.workers import connect, parse_executor

    try:
        target = parse_executor(settings.server.executor)
    except SettingsError as exc:
        fail(str(exc), 2)
    if target is None:
        return

    async def probe() -> None:
        await connect(target)

    try:
        asyncio.run(probe())
    except SettingsError as exc:
        fail(str(exc), 2)
    except A2AError as exc:
        fail(f"{exc.message} (--executor {target.url})", 1)


class _QuietCancellations(logging.Filter):
    """Hides what uvicorn logs about requests it cancels while it stops.

    An SSE stream never ends by itself; when the grace period after Ctrl+C is over
    (or at a second Ctrl+C), uvicorn cancels it and logs "Exception in ASGI
    application" with the CancelledError, and the cancelled lifespan as a traceback.
    Both are the expected end of a stop, not errors.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, asyncio.CancelledError):
            return False
        message = record.getMessage()
        if message.startswith("Traceback") and "CancelledError" in message:
            return False
        if "timeout graceful shutdown exceeded" in message:
            # the expected end of an open stream, said as such
            record.msg, record.args = (
                "Closing %s request(s) still open after %s s",
                (
                    message.split()[1],
                    _grace(),
                ),
            )
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def _grace() -> str:
    return os.environ.get(_GRACE_ENV, str(SHUTDOWN_GRACE))


def _quiet_stops() -> None:
    logging.getLogger("uvicorn.error").addFilter(_QuietCancellations())


def _uvicorn_config(app: Any, settings: Any, **extra: Any) -> Any:
    import uvicorn

    from a2a_hub._logging import redact_handlers
    from a2a_hub.server.connections import uvicorn_options

    server = settings.server
    if server.log_format == "json":
        extra["log_config"] = None  # keep the JSON handlers of configure_logging
    os.environ[_GRACE_ENV] = f"{server.graceful_timeout:g}"
    config = uvicorn.Config(
        app,
        host=server.host,
        port=server.port,
        log_level=server.log_level,
        access_log=False,
        timeout_graceful_shutdown=server.graceful_timeout,
        **extra,
    )
    uvicorn_options(config, server.header_timeout)  # slow clients: see server/connections.py
    # uvicorn configured its loggers above; its handlers redact keys and passwords too
    redact_handlers("uvicorn", "uvicorn.error", "uvicorn.access")
    return config


def _serve_one(hub: Any, sock: socket.socket) -> None:
    import uvicorn

    from a2a_hub.server import create_app
    from a2a_hub.server.app import tune_gc
    from a2a_hub.server.shutdown import Drain, early_interrupts

    app = create_app(hub, drain=Drain(hub.settings.server.graceful_timeout))
    server = uvicorn.Server(_uvicorn_config(app, hub.settings))
    _quiet_stops()
    tune_gc()
    if early_interrupts():
        raise typer.Exit(130)  # Ctrl+C before it started
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl+C it handled
        server.run(sockets=[sock])
    if not server.started:
        fail("the server did not start; the log above says why", 1)


def worker_app() -> Starlette:
    """The app of one ``--workers`` process (its settings come through the environment)."""
    from a2a_hub.server.app import app_from_environment

    _quiet_stops()
    return app_from_environment()


def _serve_workers(settings: Any, sock: socket.socket) -> None:
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    from a2a_hub.server.app import SETTINGS_ENV
    from a2a_hub.server.shutdown import early_interrupts

    # each worker process builds its own hub from the same settings
    os.environ[SETTINGS_ENV] = msgspec.json.encode(settings).decode()
    config = _uvicorn_config(
        "a2a_hub.cli.serve:worker_app", settings, factory=True, workers=settings.server.workers
    )
    if early_interrupts():
        raise typer.Exit(130)  # Ctrl+C before it started
    supervisor = Multiprocess(config, sockets=[sock])
    supervisor.run()
    if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes):
        fail("a worker process could not start; the log above says why", 1)


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
