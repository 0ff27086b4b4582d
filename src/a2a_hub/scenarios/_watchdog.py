"""The scenario runner's watchdog: stops the agents' process groups when the runner dies.

Run as a script (``python _watchdog.py GRACE``; it imports nothing from a2a_hub, so it
starts in a few milliseconds), in its own session so that neither the terminal's Ctrl+C
nor a signal to the runner's group reaches it.  It reads lines from stdin, a pipe whose
only writer is the runner:

- ``+PGID``: watch that process group;
- ``-PGID``: forget it (the runner stopped it itself);
- ``exit``: the runner is ending normally; leave without touching anything.

When the pipe closes without ``exit`` (the runner was killed, even with SIGKILL), it
sends SIGTERM to every watched group, waits up to GRACE seconds, and sends SIGKILL to
what is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal(groups: set[int], signum: int) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)


def main() -> int:
    """Watch stdin; on EOF without ``exit``, stop every watched group."""
    grace = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    groups: set[int] = set()
    for line in sys.stdin:
        command = line.strip()
        if command == "exit":
            return 0
        if command[:1] in "+-" and command[1:].isdigit():
            pgid = int(command[1:])
            if command[0] == "+":
                groups.add(pgid)
            else:
                groups.discard(pgid)
    _signal(groups, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while groups and time.monotonic() < deadline:
        groups = {g for g in groups if _alive(g)}
        time.sleep(0.05)
    _signal(groups, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
