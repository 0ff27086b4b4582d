"""Showing tasks, messages and streamed events in a terminal (rich)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from rich import box
from rich.console import Console
from rich.json import JSON
from rich.table import Column, Table
from rich.text import Text

from a2a_hub.protocol.types import (
    AgentCard,
    Artifact,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskState,
)

__all__ = [
    "EventPrinter",
    "print_card",
    "print_error",
    "print_result",
    "print_tasks",
    "to_json",
]

_STYLE = {
    TaskState.COMPLETED: "green",
    TaskState.FAILED: "red",
    TaskState.REJECTED: "red",
    TaskState.CANCELED: "yellow",
    TaskState.INPUT_REQUIRED: "yellow",
    TaskState.AUTH_REQUIRED: "yellow",
}


def to_json(value: object) -> str:
    """Canonical JSON of any wire value, indented."""
    return msgspec.json.format(msgspec.json.encode(value), indent=2).decode()


def print_error(console: Console, message: str) -> None:
    """``error: message``, the message printed as it is (brackets in it are not markup)."""
    console.print(Text.assemble(("error:", "red"), f" {message}"), highlight=False)


def _part_text(part: Part) -> str | None:
    if part.text is not None:
        return part.text
    if part.raw is not None:
        return f"[file {part.filename or ''} {part.media_type or ''} {len(part.raw)} bytes]"
    if part.url is not None:
        return f"[file {part.filename or ''} {part.url}]"
    return None


def print_parts(console: Console, parts: Sequence[Part], *, prefix: str = "") -> None:
    """Text as text, files as a one-line summary, data as pretty JSON."""
    for part in parts:
        text = _part_text(part)
        if text is not None:
            console.print(f"{prefix}{text}", markup=False, highlight=False)
        elif part.data is not msgspec.UNSET:
            if prefix:
                console.print(prefix.rstrip(), markup=False, highlight=False)
            console.print(JSON(msgspec.json.encode(part.data).decode()))


def print_message(console: Console, message: Message, label: str = "agent") -> None:
    """``agent> text``."""
    print_parts(console, message.parts, prefix=f"{label}> ")


def print_artifact(console: Console, artifact: Artifact) -> None:
    """An artifact with its name."""
    console.print(Text(f"artifact {artifact.name or artifact.artifact_id}", style="bold"))
    print_parts(console, artifact.parts, prefix="  ")


def print_result(console: Console, result: Task | Message) -> None:
    """A send's answer: the message, or the task's state, message and artifacts."""
    if isinstance(result, Message):
        print_message(console, result)
        return
    state = result.status.state
    console.print(
        Text.assemble(
            f"task {result.id} ",
            (state.label, _STYLE.get(state, "cyan")),
            f"  (context {result.context_id})",
        ),
        highlight=False,
    )
    if result.status.message is not None:
        print_message(console, result.status.message)
    for artifact in result.artifacts or []:
        print_artifact(console, artifact)


def print_tasks(console: Console, tasks: Sequence[Task], next_token: str, total: int) -> None:
    """A table of tasks whose ids are never cut, so they can be copied (80 columns do).

    The task id and, below it, the context id share the first column, which is as wide
    as the longest id and never wraps; the last message gives way instead.
    """
    widest = max((len(i) for t in tasks for i in (t.id, t.context_id)), default=4)
    table = Table(
        Column("task / context", no_wrap=True, min_width=widest),
        Column("state", no_wrap=True),
        Column("updated", no_wrap=True),
        Column("last message", ratio=1, overflow="fold"),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for task in tasks:
        message = task.status.message
        text = "" if message is None else " ".join(p.text or "" for p in message.parts)[:60]
        stamp = (task.status.timestamp or "").partition(".")[0].rstrip("Z")
        day, _, clock = stamp.partition("T")
        table.add_row(
            Text(task.id) + Text("\n") + Text(task.context_id, style="dim"),
            Text(task.status.state.label, style=_STYLE.get(task.status.state, "")),
            Text(f"{day}\n{clock}Z" if clock else day),
            Text(text),
        )
    console.print(table)
    console.print(
        f"{len(tasks)} of {total} tasks" + (f"; next page: {next_token}" if next_token else ""),
        markup=False,
        highlight=False,
    )


def print_card(console: Console, card: AgentCard) -> None:
    """The essentials of an agent card."""
    console.print(Text.assemble((card.name, "bold"), f" {card.version}"), highlight=False)
    console.print(card.description, markup=False)
    caps = card.capabilities
    console.print(
        f"streaming: {bool(caps.streaming)}  push notifications: {bool(caps.push_notifications)}"
    )
    table = Table("binding", "version", "url")
    for iface in card.supported_interfaces:
        table.add_row(Text(iface.protocol_binding), Text(iface.protocol_version), Text(iface.url))
    console.print(table)
    for skill in card.skills:
        console.print(
            Text.assemble("skill ", (skill.name, "bold"), f": {skill.description}"),
            highlight=False,
        )


class EventPrinter:
    """Prints a stream as it arrives: state changes, agent messages, artifact text inline."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._open_line = False
        self._shown_artifacts: set[str] = set()

    def _end_line(self) -> None:
        if self._open_line:
            self.console.print()
            self._open_line = False

    def show(self, event: StreamResponse) -> None:
        """Print one event."""
        c = self.console
        if event.message is not None:
            self._end_line()
            print_message(c, event.message)
        elif event.task is not None:
            self._end_line()
            task = event.task
            c.print(Text(f"task {task.id} {task.status.state.label}", style="dim"))
        elif event.status_update is not None:
            self._end_line()
            status = event.status_update.status
            style = _STYLE.get(status.state, "dim")
            c.print(Text(f"· {status.state.label}", style=style))
            if status.message is not None:
                label = "agent asks" if status.state.interrupted else "agent"
                print_message(c, status.message, label)
        elif event.artifact_update is not None:
            update = event.artifact_update
            art = update.artifact
            if art.artifact_id not in self._shown_artifacts:
                self._end_line()
                self._shown_artifacts.add(art.artifact_id)
                c.print(Text(f"artifact {art.name or art.artifact_id}", style="bold"))
            for part in art.parts:
                if part.text is not None:
                    c.print(part.text, end="", markup=False, highlight=False)
                    self._open_line = True
                else:
                    self._end_line()
                    print_parts(c, [part], prefix="  ")
            if update.last_chunk:
                self._end_line()

    def finish(self) -> None:
        """Close an open line."""
        self._end_line()
