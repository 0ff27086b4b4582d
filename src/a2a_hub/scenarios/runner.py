"""The scenario runner: ``a2a-hub run scenario.toml``.

It reads an AgentBeats scenario file::

    [green_agent]
    endpoint = "http://127.0.0.1:9009"
    cmd = "a2a-hub serve --agent judge=a2a_hub.scenarios.debate:DebateJudge --port 9009"
    [[participants]]
    role = "pro_debater"
    endpoint = "http://127.0.0.1:9018"
    cmd = "…"
    [config]
    topic = "…"

starts each ``cmd`` in its own process group (output to a log file per agent),
waits for every agent card, sends the ``EvalRequest`` to the green agent as a
streaming message, shows each update as it arrives, writes the results file, and
— after a normal end, an error or Ctrl+C — stops every process group (SIGTERM,
then SIGKILL after a grace period).  Keys it does not know (an ``agentbeats_id``,
say) are kept and written to the results file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec
from rich.console import Console
from rich.table import Table

from a2a_hub.client import A2AClient, fetch_card
from a2a_hub.engine.executor import text_of
from a2a_hub.protocol.types import Message, Part, Role, StreamResponse, TaskState

__all__ = ["Agent", "Scenario", "ScenarioError", "load_scenario", "run_scenario"]


class ScenarioError(Exception):
    """Something the person running the scenario must fix; the message says what."""


@dataclass
class Agent:
    """The green agent or one participant of a scenario."""

    role: str
    endpoint: str
    cmd: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    process: asyncio.subprocess.Process | None = None
    log_path: Path | None = None


@dataclass
class Scenario:
    """A parsed scenario file."""

    path: Path
    green: Agent
    participants: list[Agent]
    config: dict[str, Any]
    extra: dict[str, Any]

    @property
    def agents(self) -> list[Agent]:
        """The green agent first, then the participants."""
        return [self.green, *self.participants]


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file (errors name the key that is wrong)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ScenarioError(f"scenario file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path} is not valid TOML: {exc}") from None

    def agent(table: Any, where: str, role: str | None) -> Agent:
        if not isinstance(table, dict):
            raise ScenarioError(f"{path}: [{where}] must be a table")
        endpoint = table.get("endpoint")
        if not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://")):
            raise ScenarioError(f"{path}: {where}.endpoint must be an http(s) URL")
        name = role or table.get("role")
        if not isinstance(name, str) or not name:
            raise ScenarioError(f"{path}: {where}.role is missing")
        cmd = table.get("cmd")
        if cmd is not None and not isinstance(cmd, str):
            raise ScenarioError(f"{path}: {where}.cmd must be a string")
        extra = {k: v for k, v in table.items() if k not in ("endpoint", "cmd", "role")}
        return Agent(name, endpoint.rstrip("/"), cmd or None, extra)

    green = agent(data.get("green_agent"), "green_agent", "green_agent")
    raw_participants = data.get("participants", [])
    if not isinstance(raw_participants, list) or not raw_participants:
        raise ScenarioError(f"{path}: at least one [[participants]] entry is needed")
    participants = [agent(p, f"participants[{i}]", None) for i, p in enumerate(raw_participants)]
    roles = [p.role for p in participants]
    if len(set(roles)) != len(roles):
        raise ScenarioError(f"{path}: participant roles must be unique: {roles}")
    config = data.get("config", {})
    if not isinstance(config, dict):
        raise ScenarioError(f"{path}: [config] must be a table")
    extra = {k: v for k, v in data.items() if k not in ("green_agent", "participants", "config")}
    return Scenario(path, green, participants, config, extra)


def _command(cmd: str) -> list[str]:
    args = shlex.split(cmd)
    if args and args[0] == "a2a-hub":  # the a2a-hub of this very installation
        args = [sys.executable, "-m", "a2a_hub", *args[1:]]
    return args


def _tail(path: Path | None, lines: int = 15) -> str:
    if path is None or not path.exists():
        return "(no log)"
    text = path.read_text(errors="replace").splitlines()[-lines:]
    return "\n".join("    " + line for line in text) or "    (empty log)"


class Runner:
    """Runs one scenario (see the module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        console: Console,
        *,
        run_dir: Path,
        show_logs: bool = False,
        ready_timeout: float = 30.0,
        grace: float = 3.0,
    ) -> None:
        self.scenario = scenario
        self.console = console
        self.run_dir = run_dir
        self.show_logs = show_logs
        self.ready_timeout = ready_timeout
        self.grace = grace
        self._pumps: list[asyncio.Task[None]] = []

    # --- processes ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start every agent that has a ``cmd``, each in its own process group."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for agent in self.scenario.agents:
            if agent.cmd is None:
                continue
            agent.log_path = self.run_dir / f"{agent.role}.log"
            try:
                agent.process = await asyncio.create_subprocess_exec(
                    *_command(agent.cmd),
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,
                    stdin=asyncio.subprocess.DEVNULL,
                )
            except OSError as exc:
                raise ScenarioError(f"cannot start {agent.role} ({agent.cmd!r}): {exc}") from exc
            self._pumps.append(asyncio.ensure_future(self._pump(agent)))
        pids = {a.role: a.process.pid for a in self.scenario.agents if a.process is not None}
        (self.run_dir / "processes.json").write_bytes(msgspec.json.encode(pids))

    async def _pump(self, agent: Agent) -> None:
        assert agent.process is not None and agent.process.stdout is not None
        assert agent.log_path is not None
        with agent.log_path.open("wb") as log:
            async for line in agent.process.stdout:
                log.write(line)
                log.flush()
                if self.show_logs:
                    self.console.print(
                        f"[dim]{agent.role}:[/dim] {line.decode(errors='replace').rstrip()}",
                        markup=False,
                        highlight=False,
                    )

    async def wait_ready(self) -> None:
        """Wait until every agent serves its card; name the ones that do not."""
        agents = self.scenario.agents
        ready: set[str] = set()
        deadline = time.monotonic() + self.ready_timeout
        async with httpx.AsyncClient(timeout=2) as http:
            with self.console.status(f"0/{len(agents)} agents ready") as status:
                while len(ready) < len(agents):
                    for agent in agents:
                        if agent.role in ready:
                            continue
                        if agent.process is not None and agent.process.returncode is not None:
                            await asyncio.sleep(0.2)  # let the log catch up
                            raise ScenarioError(
                                f"{agent.role} exited with code {agent.process.returncode} "
                                f"before it was ready; the end of {agent.log_path}:\n"
                                f"{_tail(agent.log_path)}"
                            )
                        with contextlib.suppress(Exception):
                            await fetch_card(http, agent.endpoint)
                            ready.add(agent.role)
                    status.update(f"{len(ready)}/{len(agents)} agents ready")
                    if len(ready) == len(agents):
                        break
                    if time.monotonic() > deadline:
                        late = [a for a in agents if a.role not in ready]
                        details = "\n".join(
                            f"  {a.role} at {a.endpoint}; the end of its log:\n{_tail(a.log_path)}"
                            for a in late
                        )
                        raise ScenarioError(
                            f"{', '.join(a.role for a in late)} not ready after "
                            f"{self.ready_timeout:g} s:\n{details}"
                        )
                    await asyncio.sleep(0.25)
        self.console.print(f"[green]{len(agents)}/{len(agents)} agents ready[/green]")

    def stop(self) -> None:
        """SIGTERM every process group, wait ``grace`` seconds, then SIGKILL what is left."""
        groups = [
            a.process.pid
            for a in self.scenario.agents
            if a.process is not None and a.process.returncode is None
        ]
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while groups and time.monotonic() < deadline:
            groups = [g for g in groups if _group_alive(g)]
            time.sleep(0.05)
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        for agent in self.scenario.agents:  # reap our children
            if agent.process is not None:
                with contextlib.suppress(ChildProcessError, ProcessLookupError):
                    os.waitpid(agent.process.pid, os.WNOHANG)
        for pump in self._pumps:
            if not pump.get_loop().is_closed():  # (called again after asyncio.run)
                pump.cancel()

    async def reap(self) -> None:
        """After :meth:`stop`: let asyncio see every process exit and close its pipes.

        Transports still open when the loop closes are closed by the garbage collector
        later, which then fails with "RuntimeError: Event loop is closed".
        """
        for agent in self.scenario.agents:
            if agent.process is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(agent.process.wait(), self.grace)
        await asyncio.gather(*self._pumps, return_exceptions=True)

    # --- the evaluation -----------------------------------------------------------------

    async def evaluate(self, limit: float) -> dict[str, Any]:
        """Send the EvalRequest, show the stream, and return the results document."""
        scenario = self.scenario
        request = {
            "participants": {p.role: p.endpoint for p in scenario.participants},
            "config": scenario.config,
        }
        message = Message(
            message_id=f"eval-{int(time.time() * 1000)}", role=Role.USER, parts=[Part(data=request)]
        )
        result: dict[str, Any] = {}
        reason = ""
        state: TaskState | None = None
        final_message = ""
        async with await A2AClient.connect(scenario.green.endpoint) as client:
            async with asyncio.timeout(limit):
                async for item in client.stream(message):
                    state, data, text = self._show(item.response, state)
                    if data is not None:
                        result, reason = data, text
                    final_message = text if text and data is None else final_message
        if state is not TaskState.COMPLETED:
            label = state.label if state else "unknown"
            raise ScenarioError(f"the evaluation ended {label}: {final_message}")
        return {"result": result, "reason": reason}

    def _show(
        self, event: StreamResponse, state: TaskState | None
    ) -> tuple[TaskState | None, dict[str, Any] | None, str]:
        c = self.console
        if event.status_update is not None:
            status = event.status_update.status
            if status.state != state:
                c.print(f"[dim]· {status.state.label}[/dim]")
            if status.message is not None and status.state is not TaskState.COMPLETED:
                meta = status.message.metadata or {}
                text = text_of(status.message.parts)
                if "role" in meta:
                    title = meta["role"].replace("_", " ")
                    if "round" in meta:
                        title = f"Round {meta['round']} · {title}"
                    c.rule(f"[bold]{title}[/bold]")
                c.print(text, markup=False, highlight=False)
                return status.state, None, text
            return status.state, None, ""
        if event.task is not None:
            return event.task.status.state, None, ""
        if event.artifact_update is not None and event.artifact_update.artifact.name == "Result":
            parts = event.artifact_update.artifact.parts
            data = next((p.data for p in parts if p.data is not msgspec.UNSET), None)
            if isinstance(data, dict):
                return state, data, text_of(parts)
        if event.message is not None:
            return state, None, text_of(event.message.parts)
        return state, None, ""

    def show_scores(self, outcome: dict[str, Any]) -> None:
        """The score table, the winner and the reason."""
        result = outcome["result"]
        scores: dict[str, dict[str, int]] = result.get("scores", {})
        roles = list(scores)
        if roles:
            table = Table(title="Scores", show_lines=False)
            table.add_column("criterion")
            for role in roles:
                table.add_column(role.replace("_", " "), justify="right")
            criteria = list(next(iter(scores.values())))
            for criterion in criteria:
                table.add_row(
                    criterion.replace("_", " "), *(str(scores[r].get(criterion, "")) for r in roles)
                )
            table.add_row(
                "[bold]total[/bold]", *(f"[bold]{sum(scores[r].values())}[/bold]" for r in roles)
            )
            self.console.print(table)
        self.console.print(
            f"[bold green]Winner: {result.get('winner', '?')}[/bold green] — {outcome['reason']}",
            highlight=False,
        )


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _results_doc(
    scenario: Scenario, outcome: dict[str, Any] | None, started: str, error: str | None
) -> dict[str, Any]:
    def describe(agent: Agent) -> dict[str, Any]:
        doc: dict[str, Any] = {"role": agent.role, "endpoint": agent.endpoint, **agent.extra}
        if agent.cmd:
            doc["cmd"] = agent.cmd
        return doc

    doc: dict[str, Any] = {
        "scenario": str(scenario.path),
        "started": started,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "green_agent": describe(scenario.green),
        "participants": [describe(p) for p in scenario.participants],
        "config": scenario.config,
        **scenario.extra,
    }
    if outcome is not None:
        doc.update(outcome)
    if error is not None:
        doc["error"] = error
    return doc


async def _main(runner: Runner, *, serve_only: bool, limit: float, out: Path, started: str) -> int:
    outcome: dict[str, Any] | None = None
    error: str | None = None
    try:
        await runner.start()
        await runner.wait_ready()
        if serve_only:
            runner.console.print("Agents are serving; press Ctrl+C to stop them.")
            await asyncio.Event().wait()
        outcome = await runner.evaluate(limit)
        runner.show_scores(outcome)
        return 0
    except TimeoutError:
        error = f"the evaluation did not finish within {limit:g} s"
        raise ScenarioError(error) from None
    except ScenarioError as exc:
        error = str(exc)
        raise
    finally:
        with _no_interrupts():  # a second Ctrl+C must not cut the clean-up short
            runner.stop()  # while the loop still runs: every process group, TERM then KILL
            await runner.reap()
        if not serve_only:
            _write_results(out, _results_doc(runner.scenario, outcome, started, error))
            runner.console.print(f"results: {out}", highlight=False)


@contextlib.contextmanager
def _no_interrupts() -> Iterator[None]:
    """Ignore Ctrl+C meanwhile (the clean-up is bounded: ``grace`` seconds, then SIGKILL)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _write_results(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.json.format(msgspec.json.encode(document), indent=2))


def run_scenario(
    path: str | Path,
    *,
    console: Console,
    show_logs: bool = False,
    serve_only: bool = False,
    out: str | Path | None = None,
    timeout: float = 600.0,
    ready_timeout: float = 30.0,
    run_dir: str | Path | None = None,
) -> int:
    """Run a scenario; returns the exit code.  Agent processes never outlive this call."""
    scenario = load_scenario(path)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    directory = Path(run_dir) if run_dir else Path(".a2a-hub") / "runs" / stamp
    runner = Runner(
        scenario, console, run_dir=directory, show_logs=show_logs, ready_timeout=ready_timeout
    )
    results = Path(out) if out else directory / "results.json"
    console.print(
        f"scenario {scenario.path}: {len(scenario.agents)} agents, logs in {directory}",
        highlight=False,
    )

    def on_sigterm(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        return asyncio.run(
            _main(runner, serve_only=serve_only, limit=timeout, out=results, started=started)
        )
    finally:
        runner.stop()
        signal.signal(signal.SIGTERM, previous)
