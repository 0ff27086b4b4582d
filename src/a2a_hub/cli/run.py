"""``a2a-hub run``: a scenario's agents, its judge, and the scores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from a2a_hub.cli._options import default_help
from a2a_hub.cli._output import console, err_console, fail

__all__ = ["run"]


def run(
    scenario: Annotated[
        Path, typer.Argument(metavar="SCENARIO", help="Scenario file (AgentBeats TOML format).")
    ],
    show_logs: Annotated[
        bool, typer.Option("--show-logs", metavar="", help="Print the agents' logs.")
    ] = False,
    serve_only: Annotated[
        bool,
        typer.Option("--serve-only", metavar="", help="Start the agents and wait; no evaluation."),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="FILE",
            help=default_help("Results file.", "results.json in the run's folder"),
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            help=default_help("Seconds the evaluation may take.", "600"),
            show_default=False,
        ),
    ] = 600.0,
    ready_timeout: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            help=default_help("Seconds to wait for every agent card.", "30"),
            show_default=False,
        ),
    ] = 30.0,
    run_dir: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help=default_help("Folder for logs and results.", ".a2a-hub/runs/DATE-TIME"),
            show_default=False,
        ),
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
        fail(str(exc), 1)
    except KeyboardInterrupt:
        err_console.print("stopped; every agent process was terminated")
        raise typer.Exit(0 if serve_only else 130) from None
    raise typer.Exit(code)
