"""What the admin API may name: an admin key is not a shell on the host.

Over the network, an admin key must not mean code execution nor a way into the hub's own
network.  So what the admin API stores is checked first (:func:`check_agent`,
:func:`check_mcp_server`), against settings only the operator can change in hub.toml:

* a stdio MCP server's ``command`` (a server of ``/admin/v1/mcp-servers``, or an ``llm``
  agent's inline ``stdio:…`` server) must be in ``admin_allow_commands`` (the command as
  written, or its file name: ``"python"`` allows ``python``; ``"*"`` allows any);
* a ``python`` agent's ``executor`` must be in a module of ``admin_allow_modules``
  (``"pkg.mod"`` exactly, ``"pkg.*"`` for every module below ``pkg``; ``"*"`` any), since
  importing a module runs its code;
* URLs (remote agents, remote children of composites, MCP servers over HTTP) pass the
  outbound address policy (:mod:`a2a_hub.netpolicy`), as the agents' own checks do when
  they are registered (:func:`a2a_hub.agents.loader.admit`).

Both lists are empty by default.  A refusal is a 400 saying which setting allows it.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from a2a_hub.netpolicy import OutboundPolicy
from a2a_hub.registry import McpServer
from a2a_hub.settings import AgentSpec, AuthSettings, MCPServerSpec, SettingsError

__all__ = ["check_agent", "check_mcp_server", "command_allowed", "module_allowed"]


def command_allowed(command: str, allowed: list[str]) -> bool:
    """Whether ``admin_allow_commands`` (``allowed``) lets the admin API name ``command``."""
    return "*" in allowed or command in allowed or PurePath(command).name in allowed


def module_allowed(module: str, allowed: list[str]) -> bool:
    """Whether ``admin_allow_modules`` (``allowed``) lets the admin API name ``module``."""
    for entry in allowed:
        if entry == "*" or entry == module:
            return True
        if entry.endswith(".*") and module.startswith(entry[:-1]):
            return True
    return False


def _refuse_command(command: str) -> SettingsError:
    return SettingsError(
        f"the admin API may not start the command {command!r} (an MCP stdio server): "
        "commands are off over the network unless hub.toml lists them in "
        "admin_allow_commands = [...]"
    )


def _inline_servers(options: dict[str, Any]) -> list[Any]:
    value = options.get("mcp_servers")
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value) if isinstance(value, list) else [value]


async def check_agent(spec: AgentSpec, auth: AuthSettings, policy: OutboundPolicy) -> None:
    """Refuse (:class:`SettingsError`) an agent the admin API may not create (see above);
    run before its executor is built (building imports its module)."""
    if spec.kind == "python":
        module = (spec.executor or "").partition(":")[0]
        if not module_allowed(module, auth.admin_allow_modules):
            raise SettingsError(
                f"the admin API may not name the executor {spec.executor!r}: importing a "
                "module runs its code, so modules are off over the network unless hub.toml "
                "lists them in admin_allow_modules = [...]"
            )
    for ref in _inline_servers(spec.options):
        server: MCPServerSpec | None = None
        if isinstance(ref, dict):
            try:
                server = MCPServerSpec(**{"name": "inline", **ref})
            except TypeError as exc:
                raise SettingsError(f"agent {spec.id!r}: bad inline MCP server: {exc}") from None
        elif isinstance(ref, str) and ref.startswith(("stdio:", "http://", "https://")):
            server = MCPServerSpec.inline(ref)
        if server is None:
            continue  # a name of [[mcp_servers]]: the operator's
        if server.transport == "stdio" and server.command:
            if not command_allowed(server.command, auth.admin_allow_commands):
                raise _refuse_command(server.command)
        elif server.url:
            await policy.check_url(server.url, f"MCP server {server.name!r} URL")


async def check_mcp_server(server: McpServer, auth: AuthSettings, policy: OutboundPolicy) -> None:
    """Refuse (:class:`SettingsError`) an MCP server the admin API may not store."""
    if server.command and not command_allowed(server.command[0], auth.admin_allow_commands):
        raise _refuse_command(server.command[0])
    if server.url:
        await policy.check_url(server.url, f"MCP server {server.name!r} URL")
