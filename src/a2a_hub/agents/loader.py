"""Build an executor from an :class:`~a2a_hub.settings.AgentSpec`: built-in kinds and ``python``.

Built-in kinds: ``echo``, ``llm``, ``remote`` (another A2A agent), and the composites
``sequential``, ``parallel`` and ``loop``.  The kinds that reach beyond themselves (other
hosted agents, MCP servers) get the hub's :class:`~a2a_hub.agents.links.HubLinks` as the
keyword argument ``links``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from a2a_hub.agents import frameworks
from a2a_hub.agents._options import INJECTED, named_options
from a2a_hub.agents.composite import (
    CompositeExecutor,
    LoopExecutor,
    ParallelExecutor,
    SequentialExecutor,
)
from a2a_hub.agents.echo import EchoExecutor
from a2a_hub.agents.frameworks import extra_for_module
from a2a_hub.agents.links import HubLinks
from a2a_hub.agents.llm import LLMExecutor
from a2a_hub.agents.remote import RemoteExecutor
from a2a_hub.engine.executor import AgentExecutor
from a2a_hub.protocol.errors import A2AError
from a2a_hub.settings import AgentSpec, SettingsError

__all__ = [
    "KINDS",
    "LINKED_KINDS",
    "admit",
    "build_executor",
    "callees",
    "check_options",
    "load_class",
    "load_object",
]

KINDS: dict[str, type[AgentExecutor]] = {
    "echo": EchoExecutor,
    "llm": LLMExecutor,
    "remote": RemoteExecutor,
    "sequential": SequentialExecutor,
    "parallel": ParallelExecutor,
    "loop": LoopExecutor,
}

#: Kinds built with ``links=`` (the hub's agents and MCP servers).
LINKED_KINDS = frozenset({"llm", "remote", "sequential", "parallel", "loop"})


def load_object(path: str) -> Any:
    """Import ``package.module:attr`` (``attr`` may be dotted) and return the object."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise SettingsError(f"executor {path!r} must look like 'package.module:ClassName'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        framework = extra_for_module(exc.name or "")
        hint = f" ({framework.title} is not installed: {framework.pip})" if framework else ""
        raise SettingsError(
            f"cannot import module {module_name!r} for {path!r}: {exc}{hint}"
        ) from None
    obj: Any = module
    for name in attr.split("."):
        obj = getattr(obj, name, None)
        if obj is None:
            raise SettingsError(f"module {module_name!r} has no {attr!r}")
    return obj


def load_class(path: str) -> type[AgentExecutor]:
    """Import ``package.module:ClassName`` and check it is an :class:`AgentExecutor`."""
    obj = load_object(path)
    if not (isinstance(obj, type) and issubclass(obj, AgentExecutor)):
        raise SettingsError(
            f"{path} is not an AgentExecutor subclass (from a2a_hub import AgentExecutor)"
        )
    return obj


def build_executor(spec: AgentSpec, *, links: HubLinks | None = None) -> AgentExecutor:
    """Instantiate the executor of one agent with its options as keyword arguments.

    ``links`` (the hub's other agents and MCP servers) goes to the kinds that use it; an
    executor built without it reaches no other hosted agent and only inline MCP servers.
    """
    if spec.kind == "python":
        if not spec.executor:
            raise SettingsError(f"agent {spec.id!r}: kind 'python' needs executor = 'module:Class'")
        target = load_object(spec.executor)
        if not (isinstance(target, type) and issubclass(target, AgentExecutor)):
            # another framework's agent (a2a-sdk, ADK, LangGraph, ...): its adapter
            return frameworks.adapt(target, spec=spec, links=links or HubLinks())
        cls = target
    elif spec.kind in KINDS:
        cls = KINDS[spec.kind]
    else:
        raise SettingsError(
            f"agent {spec.id!r}: unknown kind {spec.kind!r}; known kinds: "
            f"{', '.join([*KINDS, 'python'])}"
        )
    check_options(spec, cls)
    options = dict(spec.options)
    if spec.kind in LINKED_KINDS:
        options["links"] = links or HubLinks()
    try:
        return cls(**options)
    except ValueError as exc:  # the class's own check of its options
        raise SettingsError(f"agent {spec.id!r}: {exc}") from None
    except TypeError as exc:
        raise SettingsError(f"agent {spec.id!r}: bad options {spec.options!r}: {exc}") from None


def check_options(spec: AgentSpec, cls: type[AgentExecutor]) -> None:
    """Refuse options the executor's constructor does not name (unless it takes ``**kwargs``,
    and then checks them itself), listing the valid ones; ``links`` is never an option of
    the kinds the hub gives it to."""
    params = inspect.signature(cls).parameters.values()
    names = [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        and not (spec.kind in LINKED_KINDS and p.name in INJECTED)
    ]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        # the class checks the rest itself; what the hub passes is never an option
        unknown = sorted(set(spec.options) & INJECTED) if spec.kind in LINKED_KINDS else []
        names = named_options(cls, AgentExecutor)
    else:
        unknown = sorted(set(spec.options) - set(names))
    if unknown:
        what = spec.executor if spec.kind == "python" else f"kind {spec.kind!r}"
        plural = "s" if len(unknown) > 1 else ""
        raise SettingsError(
            f"agent {spec.id!r}: unknown option{plural} {', '.join(map(repr, unknown))} for "
            f"{what}; valid options: {', '.join(names) or 'none'}"
        )


def callees(executor: AgentExecutor, local_of: Callable[[str], str | None]) -> list[str]:
    """The ids of the hub's agents ``executor`` calls: a composite's hosted children, and
    the agents of this hub that its remote URLs name (``local_of`` maps a URL to one)."""
    found: list[str] = []
    if isinstance(executor, RemoteExecutor):
        found.append(local_of(executor.peer.url) or "")
    elif isinstance(executor, CompositeExecutor):
        for child in executor.children:
            found.append(
                child.agent if child.agent is not None else local_of(child.url or "") or ""
            )
    return [agent_id for agent_id in found if agent_id]


async def admit(spec: AgentSpec, executor: AgentExecutor) -> None:
    """The checks an agent passes before it is registered (the admin API, ``a2a-hub
    serve``): the outbound address policy for URLs that did not come from the operator's
    configuration, a remote card's signature.  Raises :class:`SettingsError` in one line."""
    if not isinstance(executor, RemoteExecutor | CompositeExecutor):
        return
    try:
        await executor.admit()
    except (ValueError, A2AError) as exc:
        raise SettingsError(f"agent {spec.id!r}: {exc}") from None
