"""Where ``a2a-hub keys …`` and ``a2a-hub agents …`` do their work, and saying so.

A registry command never succeeds silently without effect (issue 30, item 3): it names the
registry it used (its URL, a SQLite file's absolute path) or the hub it went through; a
default SQLite registry that does not exist yet is not created (run from another directory,
the command would make a new ``./.a2a-hub/…`` database that no hub reads); and when a hub
started with the same settings would not open the registry at all (no auth settings), the
command says so and what to do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from a2a_hub.cli._output import err_console, escape, fail

if TYPE_CHECKING:
    from a2a_hub.registry import Registry
    from a2a_hub.settings import Settings

__all__ = ["call_admin", "with_registry"]

T = TypeVar("T")

#: What to tell when the settings give a hub no registry.
UNUSED = (
    "note: a hub started with these settings has no auth configured, so it does not read "
    "this registry (its keys, agents and admin API stay unused): start it with --registry "
    "URL, --auth-require-keys or an agent with auth=api-key"
)


def opens_registry(settings: Settings) -> bool:
    """Whether :class:`~a2a_hub.server.hub.Hub` opens a registry with ``settings`` (its rule)."""
    auth = settings.auth
    return bool(auth.registry or auth.require_keys or any(s.auth for s in settings.agents))


def call_admin(url: str, admin_key: str | None, method: str, path: str, body: Any = None) -> Any:
    """Call the admin API of the hub at ``url``; its error message, if any, ends the command."""
    import httpx

    if not admin_key:
        fail("--url needs --admin-key KEY (or A2A_HUB_ADMIN_KEY)", 2)
    try:
        r = httpx.request(
            method,
            url.rstrip("/") + "/admin/v1" + path,
            json=body,
            headers={"Authorization": f"Bearer {admin_key}"},
            timeout=30,
        )
    except httpx.HTTPError as exc:
        fail(f"{type(exc).__name__}: {exc or 'connection failed'}", 1)
    try:
        data = r.json()
    except ValueError:
        fail(f"{url} answered {r.status_code} without JSON: is it an a2a-hub?", 1)
    if r.status_code >= 400:
        fail(data.get("error", {}).get("message", r.text), 1)
    if method != "GET":
        err_console.print(f"hub: {escape(url)} (its admin API; applied there at once)")
    return data


def with_registry(
    registry: str | None,
    config: Path | None,
    use: Callable[[Registry], Awaitable[T]],
    *,
    writes: bool = False,
) -> T:
    """Run ``use`` on the registry named by ``--registry``, else the one ``serve`` would
    use with the same ``--config`` / ``A2A_HUB_*`` settings; say which on standard error."""
    from a2a_hub.registry import Registry, RegistryError, registry_url
    from a2a_hub.settings import SettingsError, load_settings
    from a2a_hub.stores.urls import describe_store_url, sqlite_path

    try:
        settings = load_settings(config, overrides={"registry": registry})
        url = registry_url(settings.auth.registry, settings.store.url)
        path = sqlite_path(url)
        if registry is None and path is not None and not Path(path).exists():
            fail(
                f"no registry at {path} (the default of these settings; run from the hub's "
                "directory, or name it: --registry URL or --config FILE)",
                1,
            )
        reg = Registry(url, secret=settings.auth.secret)
        served = registry is not None or opens_registry(settings)
    except (SettingsError, RegistryError) as exc:
        fail(str(exc), 2)
    err_console.print(f"registry: {escape(describe_store_url(url))}", highlight=False)
    if writes and not served:
        err_console.print(escape(UNUSED), highlight=False)

    async def work() -> T:
        await reg.open()
        try:
            return await use(reg)
        finally:
            await reg.close()

    try:
        return asyncio.run(work())
    except RegistryError as exc:
        fail(str(exc), 1)
