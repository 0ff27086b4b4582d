"""``a2a-hub serve`` starting (or not) as a newcomer runs it: real processes, real stores.

Modules in the current directory are found; a store or a port that cannot be used is
one or two lines and a non-zero exit before any banner; the SQLite rule of slashes
shows the file's absolute path; Ctrl+C with a stream open ends without a traceback.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from tests.support.cli import (
    MODULE,
    MYMOD,
    env,
    free_port,
    need,
    say,
    serving,
)
from tests.support.stores import POSTGRES_URL, PURGE_AT_EXIT, REDIS_URL, redis_test_url


def clis() -> list[list[str]]:
    found = [MODULE, [sys.executable, "-m", "a2a_hub"]]
    script = shutil.which("a2a-hub", path=str(Path(sys.executable).parent))
    if script is not None:
        found.append([script])
    return found


@pytest.mark.parametrize("cli", clis(), ids=lambda c: " ".join(Path(p).name for p in c))
def test_an_agent_module_in_the_current_directory(tmp_path: Path, cli: list[str]) -> None:
    (tmp_path / "mymod.py").write_text(MYMOD)
    with serving(cli, "--agent", "mymod:MyExecutor", "--store", "memory://", cwd=tmp_path) as (
        url,
        _,
    ):
        answer = say(f"{url}/a2a/myexecutor", "hi")
        assert answer["message"]["parts"] == [{"text": "mine: hi"}]  # type: ignore[index]


def test_a_hub_toml_python_agent_in_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "mymod.py").write_text(MYMOD)
    (tmp_path / "hub.toml").write_text(
        'store = "memory://"\n[[agents]]\nid = "helper"\nkind = "python"\n'
        'executor = "mymod:MyExecutor"\n'
    )
    with serving(MODULE, "--config", "hub.toml", cwd=tmp_path) as (url, _):
        answer = say(f"{url}/a2a/helper", "hello")
        assert answer["message"]["parts"] == [{"text": "mine: hello"}]  # type: ignore[index]


def test_app_dir_names_another_folder(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "mymod.py").write_text(MYMOD)
    args = ["--agent", "mymod:MyExecutor", "--store", "memory://"]
    # not found from here without --app-dir; the error says where it looked
    out = subprocess.run(
        [*MODULE, "serve", *args], cwd=tmp_path, env=env(), capture_output=True, text=True
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot import module 'mymod'" in lines[0]
    assert f"--app-dir {tmp_path.resolve()}" in lines[0]
    with serving(MODULE, *args, "--app-dir", "agents", cwd=tmp_path) as (url, _):
        answer = say(f"{url}/a2a/myexecutor", "x")
        assert answer["message"]["parts"] == [{"text": "mine: x"}]  # type: ignore[index]
    variable = {**env(), "A2A_HUB_APP_DIR": "nowhere"}
    out = subprocess.run(
        [*MODULE, "serve", *args], cwd=tmp_path, env=variable, capture_output=True, text=True
    )
    assert out.returncode == 2 and out.stderr.startswith("error: --app-dir 'nowhere' is not")


# --- item 2: a store that cannot be used -----------------------------------------------


def refused(cwd: Path, *args: str) -> list[str]:
    """Run serve, expect a refusal before any banner: its one or two lines."""
    out = subprocess.run(
        [*MODULE, "serve", "--agent", "echo", "--port", str(free_port()), *args],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    assert "a2a-hub serving" not in out.stderr, "the banner came before the check"
    lines = out.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2, out.stderr
    assert lines[0].startswith("error: ")
    return lines


def with_port(url: str, port: int) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")
    host = netloc[2].rsplit(":", 1)[0] if ":" in netloc[2] else netloc[2]
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}{netloc[1]}{host}:{port}"))


def with_user_and_db(url: str, user: str, database: str) -> str:
    parts = urlsplit(url)
    hostport = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}@{hostport}", path=f"/{database}"))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_redis_on_a_wrong_port(tmp_path: Path, workers: str) -> None:
    pytest.importorskip("redis")
    url = with_port(REDIS_URL, free_port())
    lines = refused(tmp_path, "--store", url, "--workers", workers)
    assert "nothing answers at" in lines[0] and "connection refused" in lines[0]
    assert "Is Redis running there?" in lines[1]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_postgresql_on_a_wrong_port(tmp_path: Path, workers: str) -> None:
    pytest.importorskip("asyncpg")
    url = with_port(POSTGRES_URL, free_port())
    lines = refused(tmp_path, "--store", url, "--workers", workers)
    assert "nothing answers at" in lines[0]
    assert "Is PostgreSQL running there?" in lines[1]


def test_postgresql_unknown_role(tmp_path: Path) -> None:
    pytest.importorskip("asyncpg")
    need(POSTGRES_URL, "PostgreSQL")
    role = f"nobody_{uuid.uuid4().hex[:8]}"
    database = urlsplit(POSTGRES_URL).path.lstrip("/")
    lines = refused(tmp_path, "--store", with_user_and_db(POSTGRES_URL, role, database))
    assert f'role "{role}" does not exist' in lines[0]
    assert "createuser" in lines[1]


def test_postgresql_unknown_database(tmp_path: Path) -> None:
    pytest.importorskip("asyncpg")
    need(POSTGRES_URL, "PostgreSQL")
    user = urlsplit(POSTGRES_URL).username or "postgres"
    database = f"nodb_{uuid.uuid4().hex[:8]}"
    lines = refused(tmp_path, "--store", with_user_and_db(POSTGRES_URL, user, database))
    assert f'database "{database}" does not exist' in lines[0]
    assert f"createdb -h {urlsplit(POSTGRES_URL).hostname}" in lines[1]


def test_sqlite_with_two_slashes(tmp_path: Path) -> None:
    lines = refused(tmp_path, "--store", "sqlite://x.db")
    assert lines == [
        "error: store URL 'sqlite://x.db' has two slashes: write sqlite:///x.db for x.db in "
        "the current directory (four slashes before an absolute path: "
        "sqlite:////var/lib/a2a-hub/hub.db)"
    ]
    assert not list(tmp_path.iterdir())


def test_unknown_redis_option_suggests_the_nearest(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    lines = refused(tmp_path, "--store", "redis://127.0.0.1:6379/0?task_tll=60")
    assert lines[0].startswith(
        "error: unknown Redis store option 'task_tll' (did you mean 'task_ttl'?)"
    )
    assert "prefix, task_ttl, history_ttl, push_ttl" in lines[0]


def test_sqlite_in_a_folder_that_cannot_exist(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    lines = refused(tmp_path, "--store", f"sqlite:///{tmp_path}/file/hub.db")
    assert f"cannot create or open {tmp_path}/file/hub.db" in lines[0]
    assert "sqlite:////PATH (absolute)" in lines[1]


# --- item 4: SQLite's slashes, and the path shown ---------------------------------------


def serve_piped(cwd: Path, *args: str) -> subprocess.Popen[str]:
    """``serve`` on a free port, its output (stdout and stderr) a pipe to read."""
    return subprocess.Popen(
        [*MODULE, "serve", "--port", str(free_port()), *args],
        cwd=cwd,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def interrupt(proc: subprocess.Popen[str], within: float = 60) -> str:
    """Ctrl+C ``proc``; what it printed once it ended (killed, and the test failed, if it
    is still running ``within`` seconds later)."""
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"still running {within:g} s after Ctrl+C:\n{out}") from None
    return out


@pytest.mark.parametrize("slashes", [3, 4])
def test_sqlite_url_rule_and_the_path_in_the_start_up_line(tmp_path: Path, slashes: int) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    if slashes == 3:  # relative to the current directory
        url, expected = "sqlite:///data/hub.db", cwd / "data" / "hub.db"
    else:  # absolute
        url, expected = f"sqlite:///{tmp_path}/abs/hub.db", tmp_path / "abs" / "hub.db"
    assert url.startswith("sqlite:" + "/" * slashes) and url[7 + slashes] != "/"
    with serving(MODULE, "--agent", "echo", "--store", url, cwd=cwd) as (_, proc):
        output = interrupt(proc)
    first = output.splitlines()[0]
    assert first == f"a2a-hub serving 1 agent(s), store {url} (file {expected.resolve()})"
    assert expected.exists()


def test_the_start_up_line_hides_a_password(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    need(REDIS_URL, "Redis")
    mine = redis_test_url()  # a prefix of its own: the hub's keys are purged after
    parts = urlsplit(mine)
    # a Redis without a password takes any password for its default user
    url = urlunsplit(parts._replace(netloc=f"default:secret-pw@{parts.netloc}"))
    PURGE_AT_EXIT.append(mine)
    proc = serve_piped(tmp_path, "--agent", "echo", "--store", url)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
    finally:
        out = interrupt(proc)
    text = first + out
    assert "secret-pw" not in text
    assert "redis://default:***@" in first


def cpu_ticks(pid: int) -> int:
    """User and system CPU time of process ``pid`` so far, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def after_cpu(proc: subprocess.Popen[str], ticks: int) -> None:
    """Return once ``proc`` has used ``ticks`` more clock ticks of CPU, or has ended, or
    has stopped using CPU for half a second (it is idle: whatever it was doing is done)."""
    try:
        last = start = cpu_ticks(proc.pid)
        idle_since = time.monotonic()
        while proc.poll() is None:
            used = cpu_ticks(proc.pid)
            if used - start >= ticks:
                return
            if used != last:
                last, idle_since = used, time.monotonic()
            elif time.monotonic() - idle_since > 0.5:
                return
            time.sleep(0.001)  # the poll's step, not a wait for a time to pass
    except FileNotFoundError:  # it ended
        return


def test_ctrl_c_while_starting_stops_serve(tmp_path: Path) -> None:
    """Ctrl+C while the server still starts stops it (a KeyboardInterrupt that lands in a
    finalizer is dropped by Python: serve once went on serving).

    The window is between the banner's last line and uvicorn's signal handlers, and
    nothing is printed inside it: each try waits for that last line, then for the server
    to use 0 to 5 more clock ticks of CPU (its own progress, not the clock's: the same
    points of its start-up on a fast or a slow machine), and sends Ctrl+C there.  Wherever
    it lands, a fixed serve stops."""
    for attempt in range(6):
        proc = serve_piped(tmp_path, "--agent", "echo", "--store", "memory://")
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().startswith("a2a-hub serving 1 agent(s)")
            for line in proc.stdout:  # the banner's last line (or the end, if it exited)
                if "press Ctrl+C to stop" in line:
                    break
            after_cpu(proc, ticks=attempt)
        finally:
            out = interrupt(proc, within=20)
        assert proc.returncode in (0, 130), out
        assert "Traceback" not in out, out


# --- item 5: the port before the banner; Ctrl+C with a stream open ----------------------


def test_a_taken_port_is_one_line_before_the_banner(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(
            [*MODULE, "serve", "--agent", "echo", "--store", "memory://", "--port", str(port)],
            cwd=tmp_path,
            env=env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode == 1
    assert out.stderr.strip() == (
        f"error: port {port} is already in use on 127.0.0.1 (another a2a-hub?); stop that "
        "server or choose another --port"
    )


def open_stream(url: str) -> httpx.Response:
    client = httpx.Client(timeout=httpx.Timeout(30, read=None))
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {
            "message": {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": "x"}],
            }
        },
    }
    request = client.build_request("POST", url, json=body)
    response = client.send(request, stream=True)
    lines = response.iter_lines()
    while "TASK_STATE_WORKING" not in next(lines):
        pass
    return response


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_with_an_open_stream_prints_no_traceback(tmp_path: Path, presses: int) -> None:
    """One Ctrl+C: the stream ends, the running task gets the grace period, then fails.
    A second one: the grace period ends at once (the default 30 s is not waited out)."""
    args = ["--agent", "slow=tests.support.agents:SlowExecutor", "--store", "memory://"]
    if presses == 1:
        args += ["--graceful-timeout", "2"]
    with serving(MODULE, *args, cwd=tmp_path, tests=True) as (url, proc):
        stream = open_stream(f"{url}/a2a/slow")
        try:
            proc.send_signal(signal.SIGINT)
            if presses == 2:
                time.sleep(0.5)
                proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=60)
        finally:
            stream.close()
    assert proc.returncode == 0
    assert "Traceback" not in out and "ERROR" not in out, out
    assert "Finished server process" in out
    if presses == 1:
        assert "graceful timeout: failing 1 task(s) still running" in out, out
    else:
        assert "second Ctrl+C: failing 1 task(s) still running" in out, out
