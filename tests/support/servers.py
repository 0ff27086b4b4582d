"""Private Redis and PostgreSQL servers that a test stops and starts again (outages).

Each runs from the machine's own binaries (``redis-server``; PostgreSQL's ``initdb`` and
``postgres``) on a free port of 127.0.0.1, with its data under the test's ``tmp_path``,
in a process group of its own that :meth:`StoreServer.close` kills whatever happened.
PostgreSQL refuses to run as root: as root, its files (in a folder of their own under
the system's temporary directory, which that user can reach) belong to the ``postgres``
user and its programs run as that user.  A missing binary is a skip, or a
failure under ``CI=true`` (:func:`tests.support.stores.missing_service`).
"""

from __future__ import annotations

import abc
import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.cli import reachable
from tests.support.processes import free_port
from tests.support.stores import missing_service

__all__ = ["PostgresServer", "RedisServer", "StoreServer"]


class StoreServer(abc.ABC):
    """A server process on :attr:`port`: :meth:`start`, :meth:`stop` (as an outage would:
    connections dropped, new ones refused), :meth:`start` again, :meth:`close`."""

    name = "server"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.log = folder / f"{self.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    #: The user the server runs as (None: this process's).
    user: str | None = None

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """The store URL of this server."""

    @abc.abstractmethod
    def command(self) -> list[str]:
        """The command line running the server in the foreground."""

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.command(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                user=self.user,
            )
        deadline = time.monotonic() + 30
        while not reachable(self.url):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                output = self.log.read_text()
                self.close()
                raise AssertionError(f"{self.name} did not start:\n{output}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server the way its operator would (SIGTERM for Redis, PostgreSQL's
        fast shutdown: clients are disconnected) and wait for it to exit."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(self.stop_signal)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            self.close()

    stop_signal = signal.SIGTERM

    def close(self) -> None:
        """Kill the server's process group (whatever state it is in)."""
        proc = self.proc
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


class RedisServer(StoreServer):
    """``redis-server`` with an append-only file synced at every write (it loses nothing
    it acknowledged when stopped)."""

    name = "redis"

    def __init__(self, folder: Path) -> None:
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            missing_service("redis-server is not installed")
        super().__init__(folder)
        self.data = folder / "redis-data"
        self.data.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        assert self.binary is not None
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", str(self.data), "--appendonly", "yes", "--appendfsync", "always",
                "--save", ""]  # fmt: skip


def _postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("postgres")
    return Path(on_path).parent if on_path else None


class PostgresServer(StoreServer):
    """A PostgreSQL cluster of its own (``initdb`` with trust authentication), database
    ``postgres``.  SIGINT is PostgreSQL's fast shutdown."""

    name = "postgres"
    stop_signal = signal.SIGINT

    def __init__(self, folder: Path) -> None:
        bin_dir = _postgres_bin()
        if bin_dir is None:
            missing_service("PostgreSQL's server programs (initdb, postgres) are not installed")
        self.bin = bin_dir
        home = Path(tempfile.mkdtemp(prefix="a2a-hub-pg-"))
        self.home = home
        super().__init__(home)
        self.data = home / "data"
        if os.geteuid() == 0:  # PostgreSQL will not run as root
            self.user = "postgres"
            account = pwd.getpwnam(self.user)
            os.chown(home, account.pw_uid, account.pw_gid)
        subprocess.run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            user=self.user,
        )

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def command(self) -> list[str]:
        return [str(self.bin / "postgres"), "-D", str(self.data),
                "-p", str(self.port), "-h", "127.0.0.1", "-k", str(self.home),
                "-c", "fsync=off", "-c", "max_connections=200"]  # fmt: skip

    def close(self) -> None:
        """Kill the server, then delete its files."""
        super().close()
        shutil.rmtree(self.home, ignore_errors=True)
