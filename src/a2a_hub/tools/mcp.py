"""Tools from MCP servers, through the official ``mcp`` SDK (``pip install 'a2a-hub[mcp]'``).

An MCP server is declared once (:class:`~a2a_hub.settings.MCPServerSpec`: stdio command or
streamable-HTTP URL) and used by any number of agents.  This process keeps **one session
per server** (per event loop): the first agent that needs the server connects, the others
share the session, and a session whose server went away is replaced on the next use.

A session lives in its own asyncio task, which enters and leaves the SDK's client (its
task groups must be left by the task that entered them); calls from any task go through
it.  Every tool call has a time limit (the server's ``timeout``, or the agent's
``tool_timeout``); a call that exceeds it, a server that cannot be reached and a tool that
reports an error all come back as a failed :class:`~a2a_hub.tools.base.ToolResult` saying
so, which the model reads and the task shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any, TextIO, cast

import msgspec

from a2a_hub.settings import MCPServerSpec
from a2a_hub.tools.base import Tool, ToolResult

if TYPE_CHECKING:
    from mcp import Client

__all__ = [
    "MCPError",
    "MCPSession",
    "MCPTool",
    "close_mcp_sessions",
    "inline_spec",
    "mcp_session",
    "mcp_tools",
]

log = logging.getLogger("a2a_hub.tools.mcp")

INSTALL_HINT = "pip install 'a2a-hub[mcp]'"


class MCPError(Exception):
    """An MCP server could not be used; the message names it and says why."""


def _explain(exc: BaseException) -> str:
    """A readable reason, unwrapping the exception groups anyio raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def inline_spec(value: str) -> MCPServerSpec:
    """An MCP server written in an agent's options: ``http(s)://…`` or ``stdio:<command line>``."""
    if value.startswith(("http://", "https://", "stdio:")):
        return MCPServerSpec.inline(value)
    raise ValueError(
        f"unknown MCP server {value!r}: name one from [[mcp_servers]] in hub.toml, or write "
        "'http(s)://host/mcp' or 'stdio:command args'"
    )


class MCPSession:
    """One connection to one MCP server, owned by a background task (see module docstring)."""

    def __init__(self, spec: MCPServerSpec) -> None:
        self.spec = spec
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._closing = asyncio.Event()
        self._tools: list[Any] | None = None
        #: A stdio server's standard error (a temporary file), for the tail errors quote.
        self._errlog: TextIO | None = None

    @property
    def alive(self) -> bool:
        """True while the session is connected (or connecting)."""
        return self._owner is not None and not self._owner.done()

    def _target(self) -> tuple[Any, Any]:
        """What ``mcp.Client`` connects to, and an HTTP client to close afterwards."""
        try:
            from mcp import StdioServerParameters
        except ImportError:
            raise MCPError(f"MCP tools need the mcp package: {INSTALL_HINT}") from None
        spec = self.spec
        if spec.transport == "stdio":
            assert spec.command is not None
            # The SDK passes a stdio server only a few safe variables besides ``env``.
            # "python" is the Python running the hub, with its import path.
            command, env = spec.command, dict(spec.env or {})
            if command in ("python", "python3"):
                command = sys.executable
                if os.environ.get("PYTHONPATH"):
                    env.setdefault("PYTHONPATH", os.environ["PYTHONPATH"])
            params = StdioServerParameters(
                command=command, args=list(spec.args), env=env or None, cwd=spec.cwd
            )
            from mcp.client.stdio import stdio_client

            if self._errlog is None:
                # closed by close(); kept open for the life of the process it logs
                errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
                self._errlog = cast(TextIO, errlog)
            return stdio_client(params, errlog=self._errlog), None
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert spec.url is not None
        http = create_mcp_http_client(headers=dict(spec.headers) or None)
        return streamable_http_client(spec.url, http_client=http), http

    async def start(self) -> None:
        """Connect (once); raises :class:`MCPError` naming the server if that fails."""
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._owner = asyncio.create_task(self._own(), name=f"mcp:{self.spec.name}")
        try:
            async with asyncio.timeout(self.spec.connect_timeout):
                await asyncio.shield(self._ready)
        except TimeoutError:
            await self.close()
            raise MCPError(
                f"MCP server {self.spec.name!r} did not answer within "
                f"{self.spec.connect_timeout:g} s"
            ) from None

    async def _own(self) -> None:
        assert self._ready is not None
        ready = self._ready
        try:
            try:
                from mcp import Client
            except ImportError:
                raise MCPError(f"MCP tools need the mcp package: {INSTALL_HINT}") from None
            target, http = self._target()
            async with contextlib.AsyncExitStack() as stack:
                if http is not None:
                    await stack.enter_async_context(http)
                client = await stack.enter_async_context(
                    Client(target, read_timeout_seconds=self.spec.timeout)
                )
                self._client = client
                if not ready.done():
                    ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:
            reason = _explain(exc) + self.stderr_tail()
            if not ready.done():
                ready.set_exception(
                    exc
                    if isinstance(exc, MCPError)
                    else MCPError(f"cannot connect to MCP server {self.spec.name!r}: {reason}")
                )
                ready.exception()  # retrieved: nobody may be waiting any more
            elif not isinstance(exc, asyncio.CancelledError):
                log.warning("MCP server %r went away: %s", self.spec.name, reason)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._client = None

    def stderr_tail(self, lines: int = 10, chars: int = 1500) -> str:
        """``"; its stderr ended with: …"`` (a stdio server's last lines), or ``""``."""
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            text = self._errlog.read()
            self._errlog.seek(0, os.SEEK_END)
        except (OSError, ValueError):
            return ""
        tail = [line.rstrip() for line in text[-chars:].splitlines() if line.strip()][-lines:]
        return f"; its stderr ended with: {' | '.join(tail)}" if tail else ""

    def _connected(self) -> Client:
        if self._client is None:
            raise MCPError(f"MCP server {self.spec.name!r} is not connected")
        return self._client

    async def list_tools(self) -> list[Any]:
        """The server's tools (``mcp.types.Tool``), listed once per session."""
        if self._tools is None:
            client = self._connected()
            tools: list[Any] = []
            cursor: str | None = None
            for _ in range(100):
                try:
                    async with asyncio.timeout(self.spec.timeout):
                        page = await client.list_tools(cursor=cursor)
                except TimeoutError:
                    raise MCPError(
                        f"MCP server {self.spec.name!r} did not list its tools within "
                        f"{self.spec.timeout:g} s"
                    ) from None
                except Exception as exc:
                    raise MCPError(
                        f"MCP server {self.spec.name!r} did not list its tools: {_explain(exc)}"
                    ) from exc
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            self._tools = tools
        return self._tools

    async def call(
        self, name: str, arguments: dict[str, Any], *, limit: float | None = None
    ) -> ToolResult:
        """Call one tool within ``limit`` seconds (default: the server's ``timeout``); every
        failure, the timeout included, is a failed :class:`ToolResult`."""
        limit = limit if limit is not None else self.spec.timeout
        where = f"tool {name!r} of MCP server {self.spec.name!r}"
        try:
            client = self._connected()
            # the SDK's own limit first; ours only if the SDK itself hangs
            async with asyncio.timeout(limit + 5):
                result = await client.call_tool(name, arguments, read_timeout_seconds=limit)
        except TimeoutError:
            return ToolResult(ok=False, text=f"{where} timed out after {limit:g} s")
        except MCPError as exc:
            return ToolResult(ok=False, text=str(exc))
        except Exception as exc:
            reason = _explain(exc)
            if "timed out" in reason:
                return ToolResult(ok=False, text=f"{where} timed out after {limit:g} s")
            return ToolResult(ok=False, text=f"{where} failed: {reason}")
        text = _content_text(result.content)
        data = result.structured_content
        if isinstance(data, dict) and set(data) == {"result"}:
            data = data["result"]  # the SDK wraps a plain return value
        if result.is_error:
            return ToolResult(ok=False, text=f"{where} failed: {text or 'no detail'}")
        return ToolResult(ok=True, text=text or _json(data), data=data)

    async def close(self) -> None:
        """Disconnect (stops a stdio server's process)."""
        self._closing.set()
        owner = self._owner
        if owner is not None and not owner.done():
            try:
                async with asyncio.timeout(5):
                    await asyncio.shield(owner)
            except (TimeoutError, Exception):
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await owner
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode() if value is not None else ""


def _content_text(content: list[Any]) -> str:
    pieces = []
    for block in content:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            pieces.append(text)
        else:
            kind = getattr(block, "type", type(block).__name__)
            mime = getattr(block, "mime_type", None)
            pieces.append(f"[{kind} content{f' ({mime})' if mime else ''}]")
    return "\n".join(pieces)


# --------------------------------------------------------------------------- registry

_SESSIONS: dict[tuple[int, bytes], MCPSession] = {}
_LOCKS: dict[tuple[int, bytes], asyncio.Lock] = {}


def _key(spec: MCPServerSpec) -> tuple[int, bytes]:
    return id(asyncio.get_running_loop()), msgspec.json.encode(spec)


async def mcp_session(spec: MCPServerSpec) -> MCPSession:
    """The session of this process with the server ``spec`` (connected on first use)."""
    key = _key(spec)
    lock = _LOCKS.setdefault(key, asyncio.Lock())
    async with lock:
        session = _SESSIONS.get(key)
        if session is None or not session.alive:
            session = _SESSIONS[key] = MCPSession(spec)
        try:
            await session.start()
        except BaseException:
            _SESSIONS.pop(key, None)
            raise
        return session


async def close_mcp_sessions() -> None:
    """Close every session of the running event loop (tests, shutdown)."""
    loop = id(asyncio.get_running_loop())
    for key in [k for k in _SESSIONS if k[0] == loop]:
        session = _SESSIONS.pop(key)
        _LOCKS.pop(key, None)
        await session.close()


class MCPTool(Tool):
    """One tool of an MCP server, called through the process's session with it."""

    def __init__(
        self,
        spec: MCPServerSpec,
        name: str,
        description: str,
        parameters: dict[str, Any],
        *,
        timeout: float | None = None,
    ) -> None:
        self.spec = spec
        self.name = name
        self.description = description
        self.parameters = parameters
        self.timeout = timeout

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            session = await mcp_session(self.spec)
        except MCPError as exc:
            return ToolResult(ok=False, text=str(exc))
        return await session.call(self.name, arguments, limit=self.timeout)


async def mcp_tools(
    spec: MCPServerSpec, *, only: set[str] | None = None, limit: float | None = None
) -> list[MCPTool]:
    """The tools of an MCP server (those named in ``only``, if given) as :class:`MCPTool`;
    ``limit`` replaces the server's per-call timeout for them."""
    session = await mcp_session(spec)
    tools = []
    for tool in await session.list_tools():
        if only is not None and tool.name not in only:
            continue
        schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
        tools.append(
            MCPTool(
                spec,
                tool.name,
                tool.description or "",
                schema or {"type": "object", "properties": {}},
                timeout=limit,
            )
        )
    return tools
