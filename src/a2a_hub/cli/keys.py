"""``a2a-hub keys …`` and ``a2a-hub agents …``: API keys and agents in the registry.

Both work on the registry directly (``--registry URL``, else the registry that
``serve`` with the same ``--config`` / ``A2A_HUB_*`` settings would use), or with
``--url URL --admin-key KEY`` through a running hub's admin API.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from a2a_hub.cli._options import Command, Group
from a2a_hub.cli._output import console, err_console, escape, fail, print_json
from a2a_hub.cli._registry import call_admin as _admin
from a2a_hub.cli._registry import with_registry as _with_registry

__all__ = ["agents_app", "keys_app"]

keys_app = typer.Typer(
    cls=Group,
    help="API keys in the registry (create, list, revoke); the push signing key (rotate-signing).",
    no_args_is_help=True,
)
agents_app = typer.Typer(
    cls=Group, help="List, add and remove the registry's agents.", no_args_is_help=True
)

Registry_ = Annotated[
    str | None,
    typer.Option(
        "--registry",
        metavar="URL",
        help="Registry URL (default: the one serve would use with the same settings).",
    ),
]
Config = Annotated[
    Path | None,
    typer.Option("--config", "-c", metavar="FILE", help="hub.toml naming the registry or store."),
]
AsJson = Annotated[bool, typer.Option("--json", metavar="", help="Print JSON.")]
Url = Annotated[
    str | None,
    typer.Option(
        "--url",
        metavar="URL",
        help="A running hub: go through its admin API (/admin/v1) instead of the registry.",
    ),
]
AdminKey = Annotated[
    str | None,
    typer.Option(
        "--admin-key",
        metavar="KEY",
        envvar="A2A_HUB_ADMIN_KEY",
        help="API key with the admin scope, for --url.",
    ),
]


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


@keys_app.command("create", cls=Command)
def keys_create(
    agent: Annotated[
        list[str] | None,
        typer.Option("--agent", "-a", metavar="ID", help="Agent the key opens (repeatable)."),
    ] = None,
    all_agents: Annotated[
        bool, typer.Option("--all-agents", metavar="", help="The key opens every agent.")
    ] = False,
    name: Annotated[str | None, typer.Option("--name", metavar="NAME", help="A label.")] = None,
    principal: Annotated[
        str | None,
        typer.Option(
            "--principal",
            metavar="WHO",
            help="Who the key stands for; tasks are theirs (default: NAME, else the key id). "
            "Several keys of one principal share their tasks (rotation).",
        ),
    ] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option("--scope", metavar="SCOPE", help="invoke (default), read-all or admin."),
    ] = None,
    expires: Annotated[
        str | None, typer.Option("--expires", metavar="DURATION", help="e.g. 30d, 12h, 90m.")
    ] = None,
    registry: Registry_ = None,
    config: Config = None,
    url: Url = None,
    admin_key: AdminKey = None,
    as_json: AsJson = False,
) -> None:
    """Create an API key and print it (once: only its hash is kept)."""
    from msgspec import convert, to_builtins

    from a2a_hub.registry import KeyInfo, RegistryError, parse_duration

    if all_agents == bool(agent):
        fail("say which agents the key opens: --agent ID (repeatable) or --all-agents", 2)
    try:
        expires_in = parse_duration(expires) if expires else None
    except RegistryError as exc:
        fail(str(exc), 2)

    def show(key: str, info: KeyInfo) -> None:
        if as_json:
            print_json({"key": key, **to_builtins(info)})
            return
        console.print(key, markup=False, highlight=False)
        err_console.print(
            f"key {escape(info.id)} for {escape(info.principal)}, scopes "
            f"{escape(' '.join(info.scopes))}, agents "
            f"{escape(', '.join(info.agents) if info.agents else 'all')}, expires "
            f"{_when(info.expires_at)}.  Store it now: it cannot be shown again."
        )

    if url:
        body = {
            "agents": None if all_agents else agent,
            "scopes": scope,
            "name": name,
            "principal": principal,
            "expires": expires,
        }
        made = _admin(url, admin_key, "POST", "/keys", body)
        show(made.pop("key"), convert(made, KeyInfo))
        return

    async def use(reg: object) -> None:
        from a2a_hub.registry import Registry

        assert isinstance(reg, Registry)
        key, info = await reg.create_key(
            principal=principal,
            agents=None if all_agents else agent,
            scopes=scope,
            name=name,
            expires_in=expires_in,
        )
        show(key, info)

    _with_registry(registry, config, use, writes=True)


@keys_app.command("list", cls=Command)
def keys_list(
    principal: Annotated[
        str | None, typer.Option("--principal", metavar="WHO", help="Only this principal's.")
    ] = None,
    registry: Registry_ = None,
    config: Config = None,
    url: Url = None,
    admin_key: AdminKey = None,
    as_json: AsJson = False,
) -> None:
    """List the API keys (prefix, principal, scopes, agents, expiry, revocation, last use)."""
    from msgspec import convert, to_builtins

    from a2a_hub.registry import KeyInfo

    def show(keys: list[KeyInfo]) -> None:
        if as_json:
            print_json([to_builtins(k) for k in keys])
            return
        now = time.time()
        for k in keys:
            state = "revoked" if k.revoked_at else ("expired" if not k.usable(now) else "active")
            console.print(
                f"{k.id}  {k.prefix}…  {k.principal}  {' '.join(k.scopes)}  "
                f"agents={','.join(k.agents) if k.agents else 'all'}  {state}  "
                f"expires={_when(k.expires_at)}  last_used={_when(k.last_used_at)}"
                + (f"  ({k.name})" if k.name else ""),
                markup=False,
                highlight=False,
            )

    if url:
        path = "/keys" + (f"?principal={principal}" if principal else "")
        show(convert(_admin(url, admin_key, "GET", path)["keys"], list[KeyInfo]))
        return

    async def use(reg: object) -> None:
        from a2a_hub.registry import Registry

        assert isinstance(reg, Registry)
        show(await reg.list_keys(principal))

    _with_registry(registry, config, use)


@keys_app.command("revoke", cls=Command)
def keys_revoke(
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id or prefix.")],
    registry: Registry_ = None,
    config: Config = None,
    url: Url = None,
    admin_key: AdminKey = None,
) -> None:
    """Revoke an API key: it stops working at once (within auth.cache_seconds elsewhere)."""
    if url:
        done = _admin(url, admin_key, "DELETE", f"/keys/{key_id}")
        err_console.print(f"revoked {escape(done['id'])} ({escape(done['prefix'])}…)")
        return

    async def use(reg: object) -> None:
        from a2a_hub.registry import Registry

        assert isinstance(reg, Registry)
        info = await reg.revoke_key(key_id)
        err_console.print(f"revoked {escape(info.id)} ({escape(info.prefix)}…)")

    _with_registry(registry, config, use, writes=True)


@agents_app.command("list", cls=Command)
def agents_list(
    registry: Registry_ = None,
    config: Config = None,
    url: Url = None,
    admin_key: AdminKey = None,
    as_json: AsJson = False,
) -> None:
    """List the registry's agents."""
    from msgspec import convert, to_builtins

    from a2a_hub.settings import AgentSpec

    def show(specs: list[AgentSpec]) -> None:
        if as_json:
            print_json([to_builtins(s) for s in specs])
            return
        for s in specs:
            console.print(
                f"{s.id}  {s.executor or s.kind}  auth={s.auth or 'open'}",
                markup=False,
                highlight=False,
            )

    if url:
        found = _admin(url, admin_key, "GET", "/agents")["agents"]
        show([convert({k: v for k, v in a.items() if k != "hosted"}, AgentSpec) for a in found])
        return

    async def use(reg: object) -> None:
        from a2a_hub.registry import Registry

        assert isinstance(reg, Registry)
        show(await reg.list_agents())

    _with_registry(registry, config, use)


@agents_app.command("add", cls=Command)
def agents_add(
    spec: Annotated[str, typer.Argument(metavar="SPEC", help="As serve --agent: 'ID=echo?…'.")],
    registry: Registry_ = None,
    config: Config = None,
    url: Url = None,
    admin_key: AdminKey = None,
) -> None:
    """Add (or replace) an agent; running hubs sharing the registry host it within a second."""
    from msgspec import to_builtins

    from a2a_hub.settings import AgentSpec, SettingsError

    try:
        parsed = AgentSpec.parse(spec)
    except SettingsError as exc:
        fail(str(exc), 2)
    if url:
        _admin(url, admin_key, "PUT", f"/agents/{parsed.id}", to_builtins(parsed))
        err_console.print(f"agent {escape(parsed.id)} registered")
        return

    async def use(reg: object) -> None:
        from a2a_hub.registry import Registry

        assert isinstance(reg, Registry)
        await reg.put_agent(parsed)
        err_console.print(f"agent {escape(parsed.id)} registered")

    _with_registry(registry, config, use, writes=True)


@agents_app.command("remove", cls=Command)
def agents_remove(
    agent_id: Annotated[str, typer.Argument(metavar="ID", help="The agent's id.")],
    registry: Registry_ = None,
    config: Config = None,
    url: Url = None,
    admin_key: AdminKey = None,
) -> None:
    """Remove an agent from the registry (hubs sharing it stop hosting it)."""
    if url:
        _admin(url, admin_key, "DELETE", f"/agents/{agent_id}")
        err_console.print(f"agent {escape(agent_id)} removed")
        return

    async def use(reg: object) -> None:
        from a2a_hub.registry import Registry

        assert isinstance(reg, Registry)
        if not await reg.delete_agent(agent_id):
            fail(f"no agent {agent_id!r} in the registry", 1)
        err_console.print(f"agent {escape(agent_id)} removed")

    _with_registry(registry, config, use, writes=True)
