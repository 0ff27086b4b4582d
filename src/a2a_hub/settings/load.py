"""Settings from hub.toml, ``A2A_HUB_*`` variables and the command line (later wins)."""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from a2a_hub.settings.fields import SettingField, SettingsError
from a2a_hub.settings.model import (
    Settings,
    assemble,
    field_for_key,
    section_types,
    setting_fields,
)

__all__ = ["CONFIG_ENV", "load_settings"]

#: Variable naming the config file when ``--config`` is not given.
CONFIG_ENV = "A2A_HUB_CONFIG"


def load_settings(
    config: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge the config file, ``A2A_HUB_*`` variables and ``overrides`` (the command line).

    ``overrides`` maps flat keys (``port``, ``store``, ``agents``, ``llm_model``) to
    values or to text as typed on the command line; None means "not given".  Each
    value is checked where it is read, so an error names its source (``--port``,
    ``A2A_HUB_PORT``, ``port in hub.toml``).
    """
    env = os.environ if env is None else env
    values: dict[SettingField, Any] = {}
    path = config or env.get(CONFIG_ENV)
    if path:
        values.update(_read_file(Path(path)))
    values.update(_read_env(env))
    for key, value in (overrides or {}).items():
        if value is not None:
            field = field_for_key(key)
            values[field] = field.parse(value, field.flag or key)
    for field in setting_fields():
        if field not in values:
            for name in field.fallback_env:
                if env.get(name, "").strip():
                    values[field] = field.parse(env[name], name)
                    break
    settings = assemble(values)
    _check(settings)
    return settings


def _read_env(env: Mapping[str, str]) -> dict[SettingField, Any]:
    values = {}
    for field in setting_fields():
        text = env.get(field.env, "")
        if text.strip():
            values[field] = field.parse(text, field.env)
    return values


def _read_file(path: Path) -> dict[SettingField, Any]:
    """The settings of a hub.toml: flat keys (``store = …``) and/or ``[section]`` tables."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SettingsError(f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise SettingsError(
            f"config file {path} is a directory: name the file (hub.toml)"
        ) from None
    except (PermissionError, UnicodeDecodeError) as exc:
        raise SettingsError(f"config file {path} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"config file {path} is not valid TOML: {exc}") from None
    fields = setting_fields()
    by_key = {f.key: f for f in fields}
    by_path = {(f.section, f.name): f for f in fields}
    sections = section_types()
    found: dict[SettingField, tuple[str, Any]] = {}

    def take(field: SettingField | None, where: str, value: Any, known: list[str]) -> None:
        if field is None:
            near = difflib.get_close_matches(where.rsplit(" ", 1)[-1], known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else f"; known: {', '.join(known)}"
            raise SettingsError(f"{path}: unknown setting {where}{hint}")
        if field in found:
            raise SettingsError(
                f"{path}: {field.path} is set twice ({found[field][0]} and {where})"
            )
        found[field] = (where, field.parse(value, f"{where} in {path}"))

    top_known = sorted({*by_key, *sections})
    for key, value in data.items():
        if key in sections and key not in by_key and not isinstance(value, dict):
            raise SettingsError(f"{path}: {key} must be a table ([{key}]); got {value!r}")
        if key in sections and isinstance(value, dict):
            known = sorted(name for sec, name in by_path if sec == key)
            for name, inner in value.items():
                take(by_path.get((key, name)), f"[{key}] {name}", inner, known)
        else:
            take(by_key.get(key), key, value, top_known)
    return {field: value for field, (_, value) in found.items()}


def _absolute_http_url(url: str) -> bool:
    """Whether ``url`` is ``http(s)://host[:port][/path]`` (what cards can advertise)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and " " not in url


def _check(settings: Settings) -> None:
    """What no single setting can say alone."""
    seen: set[str] = set()
    for agent in settings.agents:
        if not agent.id or "/" in agent.id:
            raise SettingsError(f"agent id {agent.id!r} must be non-empty and contain no '/'")
        if agent.id in seen:
            raise SettingsError(f"agent id {agent.id!r} is used twice")
        seen.add(agent.id)
    server, store = settings.server, settings.store
    public = server.public_url
    if public is not None and not _absolute_http_url(public):
        raise SettingsError(
            f"--public-url {public!r} must be an absolute http(s) URL, as clients reach the "
            f"hub: e.g. https://{public.split('://')[-1].strip('/') or 'hub.example.com'}"
        )
    if server.default_agent is not None and server.default_agent not in seen:
        raise SettingsError(
            f"default agent {server.default_agent!r} is not one of the agents: "
            f"{', '.join(sorted(seen)) or 'none'}"
        )
    if server.workers > 1 and not store.url.startswith(("redis", "postgres")):
        raise SettingsError(
            f"--workers {server.workers} needs a store the workers can share and signal "
            f"through: redis://… or postgresql://… (the store is {store.url.split('?')[0]})"
        )
    if server.executor != "inprocess" and not store.url.startswith(("redis", "postgres")):
        raise SettingsError(
            f"--executor {server.executor.split('?')[0]} needs a store the API nodes and the "
            f"workers share: redis://… or postgresql://… (the store is {store.url.split('?')[0]})"
        )
    for agent in settings.agents:
        if agent.retry_on_worker_loss < 0 or (agent.input_timeout or 1) <= 0:
            raise SettingsError(
                f"agent {agent.id!r}: retry_on_worker_loss must be 0 or more and "
                "input_timeout more than 0"
            )
    names: set[str] = set()
    for mcp in settings.mcp_servers:
        problem = mcp.problem()
        if problem is not None:
            raise SettingsError(problem)
        if mcp.name in names:
            raise SettingsError(f"MCP server name {mcp.name!r} is used twice")
        names.add(mcp.name)
    for limit in settings.limits:
        problem = limit.problem()
        if problem is not None:
            raise SettingsError(problem)
    _check_oidc(settings)


def _check_oidc(settings: Settings) -> None:
    """An agent with ``auth = "oidc"`` needs an issuer and an audience."""
    auth = settings.auth
    wanted = [a.id for a in settings.agents if a.auth is not None and "oidc" in a.auth]
    if wanted and (not auth.oidc_issuer or not auth.oidc_audience):
        raise SettingsError(
            f"agent(s) {', '.join(wanted)} accept OIDC tokens: set [auth] oidc_issuer and "
            "oidc_audience"
        )
