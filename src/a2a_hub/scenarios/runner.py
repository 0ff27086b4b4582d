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

checks that the port of every agent it is to start is free (one line naming the
agent and the port otherwise, before anything starts), starts each ``cmd`` in its own
process group (output to a log file per agent), waits for every agent card and checks
it is the expected one (its URL is the endpoint's; its name is ``card_name`` when the
entry gives one), sends the ``EvalRequest`` to the green agent as a streaming
message, shows each update as it arrives, writes the results file, and — after a
normal end, an error or Ctrl+C — stops every process group (SIGTERM, then SIGKILL
after a grace period).  Keys it does not know (an ``agentbeats_id``, say) are kept
and written to the results file.

The agents never outlive the runner, even when it is killed with SIGKILL: on Linux
each one gets SIGTERM when the runner dies (``PR_SET_PDEATHSIG``), and everywhere a
small watchdog process (:mod:`a2a_hub.scenarios._watchdog`) stops their whole
process groups once the runner's end of a pipe closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import httpx
import msgspec
from rich.console import Console
from rich.table import Table
from rich.text import Text

from a2a_hub.client import A2AClient, fetch_card
from a2a_hub.engine.executor import text_of
from a2a_hub.protocol.types import AgentCard, Message, Part, Role, StreamResponse, TaskState
from a2a_hub.scenarios.models import TIE

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
    #: The name the agent's card must have (``card_name`` in the scenario file), if any.
    card_name: str | None = None
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
        if table is None:
            raise ScenarioError(f"{path}: [{where}] is missing")
        if not isinstance(table, dict):
            what = f"[{where}]" if role else f"{where} (a [[participants]] entry)"
            raise ScenarioError(f"{path}: {what} must be a table")
        endpoint = table.get("endpoint")
        if not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://")):
            raise ScenarioError(f"{path}: {where}.endpoint must be an http(s) URL")
        name = role or table.get("role")
        if not isinstance(name, str) or not name:
            raise ScenarioError(f"{path}: {where}.role is missing")
        cmd = table.get("cmd")
        if cmd is not None and not isinstance(cmd, str):
            raise ScenarioError(f"{path}: {where}.cmd must be a string")
        card_name = table.get("card_name")
        if card_name is not None and (not isinstance(card_name, str) or not card_name.strip()):
            raise ScenarioError(f"{path}: {where}.card_name must be a non-empty string")
        extra = {
            k: v for k, v in table.items() if k not in ("endpoint", "cmd", "role", "card_name")
        }
        return Agent(name, endpoint.rstrip("/"), cmd or None, extra, card_name=card_name)

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


_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", ""})


def _address(url: str) -> tuple[str, int]:
    """The host and port a URL points at (loopback names all become ``localhost``)."""
    parsed = httpx.URL(url)
    host = parsed.host.lower()
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return ("localhost" if host in _LOOPBACK else host), port


def port_in_use(endpoint: str) -> bool:
    """Whether something already holds the port of ``endpoint``: it accepts connections,
    or the port cannot be bound (checked only for addresses of this machine)."""
    parsed = httpx.URL(endpoint)
    host = parsed.host or "127.0.0.1"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return False  # a name that does not resolve: starting the cmd will say more
    for family, kind, proto, _, address in infos:
        with contextlib.suppress(OSError), socket.socket(family, kind, proto) as probe:
            probe.settimeout(1.0)
            probe.connect(address)
            return True
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            # as uvicorn binds: SO_REUSEADDR, so connections in TIME_WAIT do not count
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return True
    return False


def card_problem(agent: Agent, card: AgentCard) -> str | None:
    """Why ``card`` is not the card of ``agent``, or ``None`` when it is.

    Its interfaces must point at the endpoint's host and port (the runner talks to the
    URL the card gives), and its name must be ``card_name`` when the entry has one.
    """
    if agent.card_name is not None and card.name.strip().lower() != agent.card_name.lower():
        return (
            f"{agent.role}: the agent at {agent.endpoint} is {card.name!r}, not "
            f"{agent.card_name!r} (card_name); is another agent using that port?"
        )
    urls = [iface.url for iface in card.supported_interfaces]
    if urls and not any(_address(url) == _address(agent.endpoint) for url in urls):
        return (
            f"{agent.role}: the card at {agent.endpoint} says the agent is at {urls[0]}, "
            "not at that endpoint; is another agent answering on that port?"
        )
    return None


_PR_SET_PDEATHSIG = 1


def _dies_with_runner() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to send SIGTERM to the child when the runner dies."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # loaded now: no imports after the fork
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
    prctl.restype = ctypes.c_int
    runner = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != runner:  # the runner died before the line above
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


class Watchdog:
    """The runner's end of :mod:`a2a_hub.scenarios._watchdog` (see there)."""

    def __init__(self, grace: float) -> None:
        script = Path(__file__).with_name("_watchdog.py")
        self._process = subprocess.Popen(
            [sys.executable, str(script), str(grace)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
        )
        self.pid = self._process.pid

    def _tell(self, line: str) -> None:
        pipe: IO[str] | None = self._process.stdin
        if pipe is not None and not pipe.closed:
            with contextlib.suppress(OSError, ValueError):
                pipe.write(line + "\n")
                pipe.flush()

    def watch(self, pgid: int) -> None:
        """Stop this process group if the runner dies."""
        self._tell(f"+{pgid}")

    def forget(self, pgid: int) -> None:
        """The runner stopped this group itself."""
        self._tell(f"-{pgid}")

    def close(self) -> None:
        """The runner ends normally: the watchdog leaves without stopping anything."""
        self._tell("exit")
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


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
        self._watchdog: Watchdog | None = None

    # --- processes ----------------------------------------------------------------------

    def check_ports(self) -> None:
        """Refuse to start when the port of an agent to start is taken or shared."""
        seen: dict[tuple[str, int], str] = {}
        for agent in self.scenario.agents:
            if agent.cmd is None:
                continue
            host, port = _address(agent.endpoint)
            if (host, port) in seen:
                raise ScenarioError(
                    f"{agent.role} and {seen[host, port]} both use port {port}; give each "
                    f"agent its own port (endpoint and cmd) in {self.scenario.path}"
                )
            seen[host, port] = agent.role
            if port_in_use(agent.endpoint):
                raise ScenarioError(
                    f"port {port} of {agent.role} ({agent.endpoint}) is already in use by "
                    f"another process; stop it, or give {agent.role} another port (endpoint "
                    f"and cmd) in {self.scenario.path}"
                )

    async def start(self) -> None:
        """Start every agent that has a ``cmd``, each in its own process group, once every
        port is known to be free; the agents die with the runner (module docstring)."""
        self.check_ports()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        preexec = _dies_with_runner()
        for agent in self.scenario.agents:
            if agent.cmd is None:
                continue
            if self._watchdog is None:
                self._watchdog = Watchdog(self.grace)
            agent.log_path = self.run_dir / f"{agent.role}.log"
            try:
                agent.process = await asyncio.create_subprocess_exec(
                    *_command(agent.cmd),
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,
                    stdin=asyncio.subprocess.DEVNULL,
                    preexec_fn=preexec,
                )
            except OSError as exc:
                raise ScenarioError(f"cannot start {agent.role} ({agent.cmd!r}): {exc}") from exc
            self._watchdog.watch(agent.process.pid)
            self._pumps.append(asyncio.ensure_future(self._pump(agent)))
            pids = {a.role: a.process.pid for a in self.scenario.agents if a.process is not None}
            # written whole, then renamed: a reader never sees it half written
            record = self.run_dir / "processes.json"
            staged = record.with_suffix(".json.tmp")
            staged.write_bytes(msgspec.json.encode(pids))
            staged.replace(record)

    async def _pump(self, agent: Agent) -> None:
        assert agent.process is not None and agent.process.stdout is not None
        assert agent.log_path is not None
        with agent.log_path.open("wb") as log:
            async for line in agent.process.stdout:
                log.write(line)
                log.flush()
                if self.show_logs:
                    text = line.decode(errors="replace").rstrip()
                    self.console.print(
                        Text.assemble((f"{agent.role}: ", "dim"), text), highlight=False
                    )

    async def wait_ready(self) -> None:
        """Wait until every agent serves its card; name the ones that do not."""
        agents = self.scenario.agents
        ready: set[str] = set()
        cards: dict[str, AgentCard] = {}
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
                        try:
                            card, _ = await fetch_card(http, agent.endpoint)
                        except Exception:
                            continue
                        problem = card_problem(agent, card)
                        if problem is not None:
                            raise ScenarioError(problem)
                        cards[agent.role] = card
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
        for agent in agents:
            self.console.print(
                Text.assemble(
                    f"  {agent.role:<14} ", (cards[agent.role].name, "bold"), f"  {agent.endpoint}"
                ),
                highlight=False,
            )

    def stop(self) -> None:
        """SIGTERM every process group, wait ``grace`` seconds, then SIGKILL what is left.

        Every group, even one whose first process has exited: what it started may still run.
        """
        groups = [a.process.pid for a in self.scenario.agents if a.process is not None]
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
        if self._watchdog is not None:
            self._watchdog.close()
            self._watchdog = None

    async def reap(self) -> None:
        """After :meth:`stop`: let asyncio see every process exit and close its pipes.

        Transports still open when the loop closes are closed by the garbage collector
        later, which then fails with "RuntimeError: Event loop is closed".
        """
        for agent in self.scenario.agents:
            if agent.process is not None:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(self.grace):
                        await agent.process.wait()
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
            ended = {
                TaskState.REJECTED: "was rejected",
                TaskState.FAILED: "failed",
                TaskState.CANCELED: "was canceled",
            }.get(state, f"ended {state.label if state else 'without a state'}")  # type: ignore[arg-type]
            said = f": {final_message}" if final_message else ""
            raise ScenarioError(f"the evaluation {ended}{said}")
        return {"result": result, "reason": reason}

    def _show(
        self, event: StreamResponse, state: TaskState | None
    ) -> tuple[TaskState | None, dict[str, Any] | None, str]:
        c = self.console
        if event.status_update is not None:
            status = event.status_update.status
            if status.state != state:
                c.print(Text(f"· {status.state.label}", style="dim"))
            if status.message is not None and status.state is not TaskState.COMPLETED:
                meta = status.message.metadata or {}
                text = text_of(status.message.parts)
                title = meta.get("title") or str(meta.get("role", "")).replace("_", " ")
                if title:
                    if "round" in meta:
                        title = f"Round {meta['round']} · {title}"
                    c.rule(Text(str(title), style="bold"))
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
        """The score table with each side's total, then the winner (or the tie) and why."""
        result = outcome["result"]
        scores: dict[str, dict[str, int]] = result.get("scores", {})
        roles = list(scores)
        if roles:
            table = Table(title="Scores", show_lines=False)
            table.add_column("criterion")
            for role in roles:
                table.add_column(Text(role.replace("_", " ")), justify="right")
            criteria = list(next(iter(scores.values())))
            for criterion in criteria:
                table.add_row(
                    Text(criterion.replace("_", " ")),
                    *(Text(str(scores[r].get(criterion, ""))) for r in roles),
                )
            table.add_row(
                Text("total", style="bold"),
                *(Text(str(sum(scores[r].values())), style="bold") for r in roles),
            )
            self.console.print(table)
        winner = str(result.get("winner") or "")
        headline = (
            "Result: a tie"
            if winner == TIE
            else f"Winner: {winner.replace('_', ' ')}"
            if winner
            else "No winner"
        )
        self.console.print(
            Text.assemble((headline, "bold green"), f" — {outcome['reason']}"), highlight=False
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
        if agent.card_name:
            doc["card_name"] = agent.card_name
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
            runner.console.print(f"results: {out}", markup=False, highlight=False)


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
    err_console: Console | None = None,
) -> int:
    """Run a scenario; returns the exit code.  Agent processes never outlive this call.

    A problem the person running it must fix (a :class:`ScenarioError`) is printed as
    ``error: …`` on ``err_console`` (default: standard error) and gives exit code 1.
    """
    errors = err_console or Console(stderr=True, soft_wrap=True)
    try:
        return _run(
            path,
            console=console,
            show_logs=show_logs,
            serve_only=serve_only,
            out=out,
            timeout=timeout,
            ready_timeout=ready_timeout,
            run_dir=run_dir,
        )
    except ScenarioError as exc:
        errors.print(Text.assemble(("error:", "red"), f" {exc}"), highlight=False)
        return 1


def _run(
    path: str | Path,
    *,
    console: Console,
    show_logs: bool,
    serve_only: bool,
    out: str | Path | None,
    timeout: float,
    ready_timeout: float,
    run_dir: str | Path | None,
) -> int:
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
        markup=False,
        highlight=False,
    )

    def on_signal(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return asyncio.run(
            _main(runner, serve_only=serve_only, limit=timeout, out=results, started=started)
        )
    finally:
        runner.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
