"""The ``executor`` setting: ``inprocess``, or the Temporal service of a worker tier.

``temporal://HOST:PORT?namespace=NS&task_queue=Q&heartbeat_timeout=S`` names the Temporal
frontend, the namespace (``default``), the task queue of the workflows and of the agents
that name none (``a2a-hub``) and the seconds without a heartbeat after which a worker is
taken for lost (10).  :func:`connect` opens a client, or raises
:class:`~a2a_hub.protocol.errors.ExecutorUnavailableError` in one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

from a2a_hub.protocol.errors import ExecutorUnavailableError
from a2a_hub.settings import AgentSpec, SettingsError

if TYPE_CHECKING:
    from temporalio.client import Client

__all__ = [
    "CONNECT_TIMEOUT",
    "INPROCESS",
    "ExecutorTarget",
    "connect",
    "parse_executor",
    "queues_of",
]

INPROCESS = "inprocess"
#: Seconds a connection to Temporal may take before the executor counts as unreachable.
CONNECT_TIMEOUT = 10.0
_OPTIONS = {"namespace", "task_queue", "heartbeat_timeout"}
_EXAMPLE = "temporal://127.0.0.1:7233?namespace=default&task_queue=a2a-hub"


@dataclass(frozen=True)
class ExecutorTarget:
    """Where the turns of a worker tier are queued."""

    address: str
    namespace: str = "default"
    task_queue: str = "a2a-hub"
    heartbeat_timeout: float = 10.0

    @property
    def url(self) -> str:
        return f"temporal://{self.address}?namespace={self.namespace}&task_queue={self.task_queue}"


def parse_executor(url: str) -> ExecutorTarget | None:
    """``None`` for ``inprocess``, else the Temporal target; a clear SettingsError for
    anything else."""
    text = url.strip()
    if text == INPROCESS:
        return None
    parts = urlsplit(text)
    if parts.scheme != "temporal" or not parts.hostname or parts.path not in ("", "/"):
        raise SettingsError(f"--executor {url!r}: say 'inprocess' or '{_EXAMPLE}'")
    try:
        port = parts.port or 7233
    except ValueError:
        raise SettingsError(f"--executor {url!r}: the port is not a number") from None
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise SettingsError(
            f"--executor {url!r}: unknown option {', '.join(unknown)} "
            f"(options: {', '.join(sorted(_OPTIONS))})"
        )
    try:
        heartbeat = float(options.get("heartbeat_timeout", 10.0))
    except ValueError:
        raise SettingsError(f"--executor {url!r}: heartbeat_timeout is not a number") from None
    if heartbeat < 1:
        raise SettingsError(f"--executor {url!r}: heartbeat_timeout must be 1 s or more")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return ExecutorTarget(
        address=f"{host}:{port}",
        namespace=options.get("namespace") or "default",
        task_queue=options.get("task_queue") or "a2a-hub",
        heartbeat_timeout=heartbeat,
    )


async def connect(target: ExecutorTarget, within: float = CONNECT_TIMEOUT) -> Client:
    """A client of the target's namespace, checked with one call; unreachable:
    :class:`ExecutorUnavailableError` naming the address."""
    try:
        from temporalio.client import Client
    except ImportError:
        raise SettingsError(
            "--executor temporal://… needs the temporal extra: pip install 'a2a-hub[temporal]'"
        ) from None
    try:
        async with asyncio.timeout(within):
            client = await Client.connect(target.address, namespace=target.namespace)
            await client.service_client.check_health()
    except TimeoutError:
        raise ExecutorUnavailableError(
            f"Temporal at {target.address} did not answer within {within:g} s"
        ) from None
    except Exception as exc:
        raise ExecutorUnavailableError(
            f"cannot reach Temporal at {target.address}: {_first_line(exc)}"
        ) from None
    return client


def queues_of(target: ExecutorTarget, specs: Sequence[AgentSpec]) -> dict[str, list[str]]:
    """Task queue -> the ids of the agents whose turns it carries."""
    out: dict[str, list[str]] = {}
    for spec in specs:
        out.setdefault(spec.task_queue or target.task_queue, []).append(spec.id)
    return out


def _first_line(exc: BaseException) -> str:
    """The gist of a connection failure (the driver's messages nest the OS error deep)."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    for gist in ("Connection refused", "No route to host", "Name or service not known"):
        if gist.lower() in text.lower():
            return gist.lower()
    return text if len(text) <= 160 else text[:160] + "…"
