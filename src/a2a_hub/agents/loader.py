"""Build an executor from an :class:`~a2a_hub.settings.AgentSpec`: built-in kinds and ``python``."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from a2a_hub.agents.echo import EchoExecutor
from a2a_hub.agents.llm import LLMExecutor
from a2a_hub.engine.executor import AgentExecutor
from a2a_hub.settings import AgentSpec, SettingsError

__all__ = ["KINDS", "build_executor", "check_options", "load_class"]

KINDS: dict[str, type[AgentExecutor]] = {"echo": EchoExecutor, "llm": LLMExecutor}


def load_class(path: str) -> type[AgentExecutor]:
    """Import ``package.module:ClassName`` and check it is an :class:`AgentExecutor`."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise SettingsError(f"executor {path!r} must look like 'package.module:ClassName'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SettingsError(f"cannot import module {module_name!r} for {path!r}: {exc}") from None
    obj: Any = module
    for name in attr.split("."):
        obj = getattr(obj, name, None)
        if obj is None:
            raise SettingsError(f"module {module_name!r} has no {attr!r}")
    if not (isinstance(obj, type) and issubclass(obj, AgentExecutor)):
        raise SettingsError(
            f"{path} is not an AgentExecutor subclass (from a2a_hub import AgentExecutor)"
        )
    return obj


def build_executor(spec: AgentSpec) -> AgentExecutor:
    """Instantiate the executor of one agent with its options as keyword arguments."""
    if spec.kind == "python":
        if not spec.executor:
            raise SettingsError(f"agent {spec.id!r}: kind 'python' needs executor = 'module:Class'")
        cls = load_class(spec.executor)
    elif spec.kind in KINDS:
        cls = KINDS[spec.kind]
    else:
        raise SettingsError(
            f"agent {spec.id!r}: unknown kind {spec.kind!r}; known kinds: "
            f"{', '.join([*KINDS, 'python'])}"
        )
    check_options(spec, cls)
    try:
        return cls(**spec.options)
    except ValueError as exc:  # the class's own check of its options
        raise SettingsError(f"agent {spec.id!r}: {exc}") from None
    except TypeError as exc:
        raise SettingsError(f"agent {spec.id!r}: bad options {spec.options!r}: {exc}") from None


def check_options(spec: AgentSpec, cls: type[AgentExecutor]) -> None:
    """Refuse options the executor's constructor does not name (unless it takes ``**kwargs``,
    and then checks them itself), listing the valid ones."""
    params = inspect.signature(cls).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    names = [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    unknown = sorted(set(spec.options) - set(names))
    if unknown:
        what = spec.executor if spec.kind == "python" else f"kind {spec.kind!r}"
        plural = "s" if len(unknown) > 1 else ""
        raise SettingsError(
            f"agent {spec.id!r}: unknown option{plural} {', '.join(map(repr, unknown))} for "
            f"{what}; valid options: {', '.join(names) or 'none'}"
        )
