"""One settings object, fed by ``hub.toml``, ``A2A_HUB_*`` environment variables and CLI flags.

Later sources win: file < environment < command line.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import msgspec

from a2a_hub.protocol.types import AgentExtension

__all__ = ["AgentSpec", "Settings", "SettingsError", "load_settings", "parse_agent_spec"]

DEFAULT_STORE = "sqlite:///.a2a-hub/hub.db"


class SettingsError(ValueError):
    """A configuration value is missing or wrong; the message says which and why."""


class AgentSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One hosted agent: its id (the ``/a2a/{id}`` path), kind and options.

    Kinds: ``echo`` (built in) and ``python`` (``executor = "module:Class"``).
    """

    id: str
    kind: str = "echo"
    executor: str | None = None
    name: str | None = None
    description: str | None = None
    version: str = "1.0.0"
    options: dict[str, Any] = msgspec.field(default_factory=dict)
    #: Extensions for the card (``[[agents.extensions]]``: uri, description, required, params).
    extensions: list[AgentExtension] = msgspec.field(default_factory=list)


class Settings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Everything ``a2a-hub serve`` needs."""

    host: str = "127.0.0.1"
    port: int = 8000
    store: str = DEFAULT_STORE
    agents: list[AgentSpec] = msgspec.field(default_factory=list)
    default_agent: str | None = None
    max_body_bytes: int = 10 * 1024 * 1024
    public_url: str | None = None
    log_level: str = "info"
    #: Seconds of silence after which an SSE stream gets a keep-alive comment.
    sse_heartbeat: float = 15.0
    #: Seconds after which the task of an instance that died is failed by the others.
    orphan_timeout: float = 30.0
    #: Worker processes (needs a shared store: redis:// or postgresql://).
    workers: int = 1
    #: Port of the gRPC binding (A2A 1.0 ``lf.a2a.v1.A2AService``); None: no gRPC.
    grpc_port: int | None = None
    #: Keep the 0.3 top-level card fields (url, preferredTransport, protocolVersion) that let
    #: 0.3 clients read the 1.0 card; False for a strict 1.0 card.
    card_v03_fields: bool = True


def _boolean(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(value)


_ENV_FIELDS: dict[str, Any] = {
    "host": str,
    "port": int,
    "store": str,
    "default_agent": str,
    "max_body_bytes": int,
    "public_url": str,
    "log_level": str,
    "sse_heartbeat": float,
    "orphan_timeout": float,
    "workers": int,
    "grpc_port": int,
    "card_v03_fields": _boolean,
}


def parse_agent_spec(text: str) -> AgentSpec:
    """Parse ``[ID=]KIND_OR_IMPORT_PATH[?option=value&…]``.

    ``echo`` → the echo agent at ``/a2a/echo``; ``bot=pkg.mod:Bot`` → the
    executor class ``Bot`` at ``/a2a/bot``; ``pkg.mod:Bot`` alone gets the id
    ``bot``; ``echo?reply=message`` passes options.
    """
    spec, _, query = text.partition("?")
    agent_id, eq, target = spec.partition("=")
    if not eq:
        agent_id, target = "", spec
    target = target.strip()
    if not target:
        raise SettingsError(f"--agent {text!r}: say which agent, e.g. 'echo' or 'mymod:MyExecutor'")
    options: dict[str, Any] = dict(parse_qsl(query, keep_blank_values=True))
    if ":" in target:
        kind, executor = "python", target
        agent_id = agent_id or target.rsplit(":", 1)[1].lower()
    else:
        kind, executor = target, None
        agent_id = agent_id or target
    return AgentSpec(id=agent_id.strip(), kind=kind, executor=executor, options=options)


def load_settings(
    config: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge the config file, ``A2A_HUB_*`` variables and CLI ``overrides``."""
    env = os.environ if env is None else env
    merged: dict[str, Any] = {}
    path = config or env.get("A2A_HUB_CONFIG")
    if path:
        try:
            merged.update(tomllib.loads(Path(path).read_text()))
        except FileNotFoundError:
            raise SettingsError(f"config file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"config file {path} is not valid TOML: {exc}") from None
    for name, kind in _ENV_FIELDS.items():
        value = env.get(f"A2A_HUB_{name.upper()}")
        if value:
            try:
                merged[name] = kind(value)
            except ValueError:
                raise SettingsError(
                    f"A2A_HUB_{name.upper()}={value!r} is not a valid {kind.__name__.lstrip('_')}"
                ) from None
    if env.get("A2A_HUB_AGENTS"):
        merged["agents"] = [
            msgspec.to_builtins(parse_agent_spec(s))
            for s in env["A2A_HUB_AGENTS"].split(",")
            if s.strip()
        ]
    for key, value in (overrides or {}).items():
        if value is not None:
            merged[key] = value
    try:
        settings = msgspec.convert(merged, Settings)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"invalid setting: {exc}") from None
    _check(settings)
    return settings


def _check(settings: Settings) -> None:
    seen: set[str] = set()
    for agent in settings.agents:
        if not agent.id or "/" in agent.id:
            raise SettingsError(f"agent id {agent.id!r} must be non-empty and contain no '/'")
        if agent.id in seen:
            raise SettingsError(f"agent id {agent.id!r} is used twice")
        seen.add(agent.id)
    if settings.default_agent is not None and settings.default_agent not in seen:
        raise SettingsError(
            f"default agent {settings.default_agent!r} is not one of the agents: "
            f"{', '.join(sorted(seen)) or 'none'}"
        )
    if settings.orphan_timeout < 1:
        raise SettingsError("orphan_timeout must be at least 1 second")
    if settings.workers < 1:
        raise SettingsError("workers must be at least 1")
    if settings.workers > 1 and not settings.store.startswith(("redis", "postgres")):
        raise SettingsError(
            f"--workers {settings.workers} needs a store the workers can share and signal "
            f"through: redis://… or postgresql://… (the store is {settings.store.split('?')[0]})"
        )
    if settings.sse_heartbeat <= 0:
        raise SettingsError("sse_heartbeat must be a positive number of seconds")
    if settings.grpc_port is not None and not 0 <= settings.grpc_port <= 65535:
        raise SettingsError(f"grpc_port {settings.grpc_port} is not a TCP port (0-65535)")
    if settings.max_body_bytes < 1024:
        raise SettingsError("max_body_bytes must be at least 1024")
