"""The terminal renderer prints data as it is: brackets in names and texts are not markup."""

from __future__ import annotations

import io

from rich.console import Console

from a2a_hub._render import EventPrinter, print_card, print_error, print_result, print_tasks
from a2a_hub.protocol.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    Part,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

TRICKY = "[redis] and [dim]dim[/dim] and [bold red]x[/]"


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=400, color_system=None, soft_wrap=True), out


def test_a_card_keeps_its_brackets() -> None:
    card = AgentCard(
        name=f"name {TRICKY}",
        description=f"description {TRICKY}",
        supported_interfaces=[
            AgentInterface(url="http://h/[x]", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        version="[1.0]",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="s", name=f"skill {TRICKY}", description=f"does {TRICKY}")],
    )
    c, out = console()
    print_card(c, card)
    text = out.getvalue()
    for expected in (f"name {TRICKY} [1.0]", f"description {TRICKY}", "http://h/[x]"):
        assert expected in text, text
    assert f"skill skill {TRICKY}: does {TRICKY}" in text, text


def test_tasks_results_events_and_errors_keep_their_brackets() -> None:
    task = Task(
        id="[t1]",
        context_id="[c1]",
        status=TaskStatus(state=TaskState.COMPLETED, timestamp="[now]"),
        artifacts=[Artifact(artifact_id="a", name=f"art {TRICKY}", parts=[Part(text=TRICKY)])],
    )
    c, out = console()
    print_result(c, task)
    print_tasks(c, [task], "[next]", 1)
    print_error(c, f"{TRICKY} must be a table")
    printer = EventPrinter(c)
    printer.show(StreamResponse(task=task))
    printer.show(
        StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id="[t1]", context_id="[c1]", status=TaskStatus(state=TaskState.WORKING)
            )
        )
    )
    printer.finish()
    text = out.getvalue()
    assert "task [t1] completed  (context [c1])" in text, text
    assert f"artifact art {TRICKY}" in text and f"  {TRICKY}" in text, text
    assert "[t1]" in text.split("task [t1] completed")[1], text  # the table's id column
    assert "next page: [next]" in text, text
    assert f"error: {TRICKY} must be a table" in text, text
    assert "task [t1] completed" in text.rsplit("error:", 1)[1], text  # the event printer
