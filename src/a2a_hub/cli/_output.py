"""What the commands print: one console for results, one for messages, errors as one line."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from a2a_hub.client import StreamItem

__all__ = ["console", "err_console", "escape", "fail", "follow", "print_json", "show"]

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


async def follow(items: AsyncIterator[StreamItem], as_json: bool) -> None:
    """Print a stream as it arrives."""
    from a2a_hub._render import EventPrinter

    printer = EventPrinter(console)
    async for item in items:
        if as_json:
            print_json({"id": item.id, "event": item.response})
        else:
            printer.show(item.response)
    printer.finish()
