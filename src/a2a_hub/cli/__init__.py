"""The ``a2a-hub`` command line (a thin shell around asyncio and uvicorn).

``serve`` (:mod:`.serve`) hosts agents; ``card``, ``send``, ``chat`` and ``tasks``
(:mod:`.client`) talk to any A2A agent; ``run`` (:mod:`.run`) runs a scenario;
``push``, ``keys rotate-signing`` and ``webhook`` (:mod:`.admin`) operate push
notifications; ``keys`` and ``agents`` (:mod:`.keys`) the registry.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Annotated, NoReturn

import typer

from a2a_hub._version import __version__
from a2a_hub.cli import admin, client
from a2a_hub.cli._options import Command, Group, env_only_help
from a2a_hub.cli.keys import agents_app, keys_app
from a2a_hub.cli.run import run
from a2a_hub.cli.serve import serve
from a2a_hub.cli.worker import worker

__all__ = ["app", "main"]

app = typer.Typer(
    cls=Group,
    name="a2a-hub",
    help=(
        "a2a-hub: one server hosting many A2A agents at /a2a/{agent_id}, speaking A2A 1.0 "
        "(JSON-RPC, REST and gRPC), 0.3 and the 0.1 legacy methods.\n\n"
        "Start with:  a2a-hub serve --agent echo   then, in another terminal:  "
        "a2a-hub send http://127.0.0.1:8000/a2a/echo hello   (or open "
        "http://127.0.0.1:8000/a2a/echo/chat in a browser)"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("a2a-hub")
    except PackageNotFoundError:  # running from a source tree
        return __version__


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"a2a-hub {_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            metavar="",
            help="Show the version and exit.",
            callback=_show_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """a2a-hub command line."""


app.command(cls=Command, epilog=env_only_help())(serve)
app.command(cls=Command, epilog=env_only_help())(worker)
for command in (client.card, client.send, client.chat):
    app.command(cls=Command)(command)
app.add_typer(client.tasks_app, name="tasks")
app.add_typer(admin.push_app, name="push")
app.add_typer(admin.webhook_app, name="webhook")
app.command(cls=Command)(run)
# one `keys` group: the registry's API keys (cli/keys.py) and the push signing key
keys_app.command("rotate-signing", cls=Command)(admin.rotate_signing)
app.add_typer(keys_app, name="keys")
app.add_typer(agents_app, name="agents")


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except SystemExit as ending:
        if _native_threads_loaded():
            _exit_now(ending.code)
        raise


def _native_threads_loaded() -> bool:
    """True once Temporal's client ran in this process: its Rust runtime keeps threads
    that may call into Python while the interpreter finalizes, which aborts it
    ("Fatal Python error: PyGILState_Release") after the command has said its last word."""
    return "temporalio.bridge.temporal_sdk_bridge" in sys.modules


def _exit_now(code: object) -> NoReturn:
    """Leave with ``code`` as ``sys.exit`` would, without finalizing the interpreter
    (the output and the log flushed first)."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)
