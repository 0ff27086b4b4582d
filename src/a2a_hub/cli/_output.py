"""What the commands print: one console for results, one for messages, errors as one line."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from a2a_hub.client import StreamItem

__all__ = [
    "TASK_EXIT_CODES",
    "console",
    "err_console",
    "escape",
    "fail",
    "follow",
    "print_json",
    "show",
]

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def fail(message: str, code: int, *, detail: str = "") -> NoReturn:
    """Print ``error: message`` (plain text, never read as markup) and exit with ``code``.

    ``detail`` is markup appended as is (e.g. a dim error code).
    """
    err_console.print(f"[red]error:[/red] {escape(message)}{detail}", highlight=False)
    raise typer.Exit(code)


def print_json(value: object) -> None:
    """``value`` as indented JSON on standard output."""
    from a2a_hub._render import to_json

    console.print(to_json(value), markup=False, highlight=False)


def show(value: object, as_json: bool, human: Callable[[], None]) -> None:
    """Print ``value`` as JSON with ``--json``, else the human way."""
    if as_json:
        print_json(value)
    else:
        human()


async def follow(items: AsyncIterator[StreamItem], as_json: bool) -> str | None:
    """Print a stream as it arrives; return the label of the task's last state (if any)."""
    from a2a_hub._render import EventPrinter

    printer = EventPrinter(console)
    state: str | None = None
    async for item in items:
        event = item.response
        if event.task is not None:
            state = event.task.status.state.label
        elif event.status_update is not None:
            state = event.status_update.status.state.label
        if as_json:
            print_json({"id": item.id, "event": event})
        else:
            printer.show(event)
    printer.finish()
    return state


#: Exit codes of ``a2a-hub send`` for a task that did not succeed, by state.  Every
#: other answer exits 0: a completed task, a message, a task waiting for input or
#: auth, or one still working.  Errors (unreachable agent, protocol error) exit 1,
#: a bad option 2.
TASK_EXIT_CODES = {"failed": 3, "rejected": 4, "canceled": 5}
