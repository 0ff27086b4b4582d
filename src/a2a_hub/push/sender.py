"""One webhook POST, made safely and cheaply.

:class:`WebhookSender` resolves the webhook's host itself, checks every address
against the :class:`~a2a_hub.push.urls.WebhookPolicy` (so a name rebound to a
private address after the config was accepted is still refused), then connects to
the checked IP; the ``Host`` header keeps the webhook's host and, for ``https``,
the TLS server name (SNI) and certificate check use the host name.  Redirects are
not followed (a 3xx is a failure), and the whole request has a timeout (10 s), checked
for all requests in flight by one timer every quarter of the timeout (a request times
out after 1 to 1.25 times it) rather than by a timer of its own: a dispatcher sends
thousands a second, and ``asyncio.timeout`` (an object, a timer scheduled, then
cancelled) cost several microseconds each.

The POST goes over a small HTTP/1.1 client of its own (:class:`Connections`):
keep-alive connections pooled per receiver (scheme, checked address, port, server
name), so a dispatcher sending many notifications to one receiver pays neither a
connect nor a TLS handshake each time, nor a general-purpose client's per-request
overhead.  A pooled connection the receiver closed meanwhile is replaced before
use, or, if that shows only when the request fails without any answer, the
request is sent once more on a fresh connection.  Response bodies are read (up to
1 MiB, to keep the connection) and ignored.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import ssl
import time
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlsplit

from a2a_hub import tracing
from a2a_hub.push.urls import UnresolvedWebhookError, UnsafeWebhookError, WebhookPolicy

__all__ = ["Connections", "Outcome", "WebhookSender", "retry_after_seconds"]

DEFAULT_TIMEOUT = 10.0
#: Idle connections kept per receiver (as many as the dispatcher may send at once).
MAX_IDLE = 128
#: Seconds a host name's checked address is reused (a literal address: always).
RESOLVED_TTL = 10.0
#: A larger (ignored) response body is not read: the connection is closed instead.
MAX_BODY = 1 << 20
#: The requests in flight are checked for their timeout this many times per timeout.
SWEEPS = 4


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one POST gave: ``ok`` (2xx), ``gone`` (410: drop the config), ``permanent``
    (never worth retrying: an unsafe URL), the HTTP status (0: no answer), a
    ``Retry-After`` in seconds, and a description of the failure."""

    ok: bool
    status: int = 0
    gone: bool = False
    permanent: bool = False
    retry_after: float | None = None
    error: str = ""


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header (seconds or an HTTP date) in seconds from now."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _tls_context() -> ssl.SSLContext:
    """Certificate checks against certifi's bundle when it is there (as httpx does), else
    the system's."""
    try:
        import certifi
    except ImportError:  # pragma: no cover - httpx brings certifi
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class HttpError(Exception):
    """A response that is not HTTP/1.x."""


_Key = tuple[str, str, int, str]
_Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Connections:
    """Keep-alive HTTP/1.1 connections, pooled per receiver (see the module doc)."""

    def __init__(self, max_idle: int = MAX_IDLE) -> None:
        self.max_idle = max_idle
        self._idle: dict[_Key, list[_Stream]] = {}
        self._tls: ssl.SSLContext | None = None
        #: Connections opened so far (for tests and metrics).
        self.opened = 0

    async def post(
        self,
        key: _Key,
        request: bytes,
    ) -> tuple[int, dict[str, str]]:
        """Send one request (head and body, bytes) to the receiver ``key`` = (scheme,
        address, port, server name); returns the status and the headers (lower-case
        names).  Raises OSError, ssl.SSLError, asyncio.IncompleteReadError or HttpError."""
        stream, reused = self._take(key)
        if stream is None:
            stream = await self._open(key)
        try:
            return await self._exchange(key, stream, request)
        except (OSError, asyncio.IncompleteReadError) as exc:
            answered = isinstance(exc, asyncio.IncompleteReadError) and exc.partial
            if not reused or answered:
                raise
        # The receiver had closed the pooled connection: once more on a fresh one.
        return await self._exchange(key, await self._open(key), request)

    def _take(self, key: _Key) -> tuple[_Stream | None, bool]:
        idle = self._idle.get(key)
        while idle:
            reader, writer = idle.pop()
            if writer.is_closing() or reader.at_eof():
                writer.close()
                continue
            return (reader, writer), True
        return None, False

    async def _open(self, key: _Key) -> _Stream:
        scheme, host, port, server_name = key
        tls = None
        if scheme == "https":
            if self._tls is None:
                self._tls = _tls_context()
            tls = self._tls
        stream = await asyncio.open_connection(
            host, port, ssl=tls, server_hostname=server_name if tls else None
        )
        self.opened += 1
        return stream

    async def _exchange(
        self, key: _Key, stream: _Stream, request: bytes
    ) -> tuple[int, dict[str, str]]:
        reader, writer = stream
        keep = False
        try:
            writer.write(request)
            await writer.drain()
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head[:-4].decode("latin-1").split("\r\n")
                version, _, rest = lines[0].partition(" ")
                code = rest[:3]
                if not version.startswith("HTTP/1.") or not code.isdigit():
                    raise HttpError(f"not an HTTP/1.x answer: {lines[0][:80]!r}")
                status = int(code)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                if not 100 <= status < 200:
                    break
            complete = await _read_body(reader, status, headers)
            connection = headers.get("connection", "").lower()
            keep = complete and (
                "keep-alive" in connection if version == "HTTP/1.0" else "close" not in connection
            )
            return status, headers
        finally:
            idle = self._idle.setdefault(key, [])
            if keep and len(idle) < self.max_idle:
                idle.append(stream)
            else:
                writer.close()

    def close(self) -> None:
        """Close every idle connection."""
        for idle in self._idle.values():
            for _, writer in idle:
                writer.close()
        self._idle.clear()


async def _read_body(reader: asyncio.StreamReader, status: int, headers: dict[str, str]) -> bool:
    """Read and drop a response body; False if the connection cannot carry another request
    (a body too large to read, or one that ends only when the connection does)."""
    if status in (204, 304):
        return True
    if "chunked" in headers.get("transfer-encoding", "").lower():
        total = 0
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return True
            total += size
            if total > MAX_BODY:
                return False
            await reader.readexactly(size + 2)
    length = headers.get("content-length")
    if length is None or not length.isdigit():
        return False  # the body ends with the connection: do not wait for it
    if int(length) > MAX_BODY:
        return False
    await reader.readexactly(int(length))
    return True


class _Target(NamedTuple):
    """A checked webhook URL: its pool key and the first lines of its requests."""

    key: _Key
    head: bytes


class WebhookSender:
    """POSTs notification bodies to webhooks over pooled keep-alive connections."""

    def __init__(self, policy: WebhookPolicy, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.policy = policy
        self.timeout = timeout
        self.connections = Connections()
        #: url -> (valid until, where it is sent).
        self._resolved: dict[str, tuple[float, _Target]] = {}
        #: The tasks with a request in flight -> when it times out (loop time).
        self._due: dict[asyncio.Task[object], float] = {}
        #: The tasks this sender cancelled because their request timed out.
        self._expired: set[asyncio.Task[object]] = set()
        self._sweeper: asyncio.TimerHandle | None = None

    async def _target(self, url: str) -> _Target:
        """Where ``url`` is sent: checked by the policy, resolved (reused for
        :data:`RESOLVED_TTL` seconds; every connection goes to the checked address)."""
        found = self._resolved.get(url)
        now = time.monotonic()
        if found is not None and found[0] > now:
            return found[1]
        host, ip = await self.policy.resolve(url)
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        port = parts.port or (443 if scheme == "https" else 80)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = f"POST {path} HTTP/1.1\r\nHost: {parts.netloc.rpartition('@')[2]}\r\n"
        target = _Target((scheme, str(ip), port, host), head.encode())
        if len(self._resolved) >= 4096:
            self._resolved.clear()
        literal = host.strip("[]") == str(ip)
        self._resolved[url] = (math.inf if literal else now + RESOLVED_TTL, target)
        return target

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Outcome:
        """POST ``body`` to ``url`` at a checked address; never raises for a failure."""
        try:
            target = await self._target(url)
        except UnresolvedWebhookError as exc:  # DNS may answer on a later try
            return Outcome(ok=False, error=str(exc))
        except UnsafeWebhookError as exc:
            return Outcome(ok=False, permanent=True, error=str(exc))
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - always called from a task
            raise RuntimeError("WebhookSender.post runs in an asyncio task")
        cancelling = task.cancelling()
        self._due[task] = asyncio.get_running_loop().time() + self.timeout
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().call_later(
                self.timeout / SWEEPS, self._sweep
            )
        try:
            if tracing.active:
                with tracing.client_span("a2a.push.deliver", {"url.full": url}):
                    traced = tracing.inject_headers(dict(headers))
                    status, answer = await self._exchange(target, body, traced)
            else:  # no span to open: spare the context manager (one per notification)
                status, answer = await self._exchange(target, body, headers)
        except asyncio.CancelledError:
            if task not in self._expired or task.uncancel() > cancelling:
                raise  # cancelled by someone else (too)
            return Outcome(ok=False, error=f"timed out after {self.timeout:g} s")
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, HttpError) as exc:
            return Outcome(ok=False, error=_describe(exc))
        except ValueError as exc:  # a malformed chunk size
            return Outcome(ok=False, error=f"malformed response: {exc}")
        finally:
            del self._due[task]
            self._expired.discard(task)
        if 200 <= status < 300:
            return Outcome(ok=True, status=status)
        return Outcome(
            ok=False,
            status=status,
            gone=status == 410,
            retry_after=retry_after_seconds(answer.get("retry-after")),
            error=f"HTTP {status}",
        )

    def _sweep(self) -> None:
        """Cancel the requests past their timeout; again in a while if any are in flight."""
        self._sweeper = None
        now = asyncio.get_running_loop().time()
        for task, due in self._due.items():
            if due <= now and task not in self._expired:
                self._expired.add(task)
                task.cancel()
        if self._due:
            self._sweeper = asyncio.get_running_loop().call_later(
                self.timeout / SWEEPS, self._sweep
            )

    async def _exchange(
        self, target: _Target, body: bytes, headers: dict[str, str]
    ) -> tuple[int, dict[str, str]]:
        head = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
        request = b"%b%b\r\n%b" % (
            target.head,
            f"Content-Length: {len(body)}\r\nUser-Agent: a2a-hub\r\n{head}".encode(),
            body,
        )
        return await self.connections.post(target.key, request)

    async def close(self) -> None:
        """Close the pooled connections."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        self.connections.close()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.IncompleteReadError):
        return "the receiver closed the connection before answering"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
