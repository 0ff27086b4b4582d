"""Children of the test processes die with them, however those end.

A test stops what it started in a ``finally`` or a fixture's teardown, but neither runs
when the test process itself is killed: a pytest-xdist worker whose controller was
interrupted, a worker killed by a timeout, ``kill -9``.  Then the hubs, workers and
Temporal dev servers it started would run on.  :func:`install` makes every child started
from the main thread of a test process ask Linux for ``SIGKILL`` when that process dies
(``PR_SET_PDEATHSIG``), unless the caller gives its own ``preexec_fn``.  Children started
from other threads are left as they are: the signal follows the thread that forked,
which may end before the child should.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from typing import Any

__all__ = ["install"]

_PR_SET_PDEATHSIG = 1
_installed = False


def install() -> None:
    """Wrap :class:`subprocess.Popen` (asyncio's subprocesses use it too); idempotent."""
    global _installed
    if _installed or not sys.platform.startswith("linux"):
        return
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved now: nothing after fork
    except (OSError, AttributeError):
        return
    prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
    prctl.restype = ctypes.c_int
    original = subprocess.Popen.__init__

    def __init__(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        if (
            kwargs.get("preexec_fn") is None
            and threading.current_thread() is threading.main_thread()
        ):
            parent = os.getpid()

            def dies_with_parent() -> None:
                prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
                if os.getppid() != parent:  # the parent died before the line above
                    os.kill(os.getpid(), signal.SIGKILL)

            kwargs["preexec_fn"] = dies_with_parent
        original(self, *args, **kwargs)

    subprocess.Popen.__init__ = __init__  # type: ignore[method-assign]
    _installed = True
