"""Agents written with other frameworks, hosted unchanged: which framework an object is from,
and the adapter that turns it into a hub :class:`~a2a_hub.engine.executor.AgentExecutor`.

``--agent ID=module:attr`` (``executor = "module:attr"`` in hub.toml, the admin API) names an
object; :func:`~a2a_hub.agents.loader.build_executor` hands anything that is not a hub
``AgentExecutor`` subclass to :func:`adapt`.  The framework is told by the modules of the
object's type (its class's ``__mro__``), so nothing is imported to ask; the adapter module of
that framework (``a2a_hub.agents.frameworks.<name>``) is imported only then, and it alone
imports the framework.  Each adapter module defines::

    def adapt(obj: Any, *, spec: AgentSpec, links: HubLinks) -> AgentExecutor

returning an executor whose ``name``/``description``/``skills`` come from the object (the card
uses them unless hub.toml overrides), raising :class:`~a2a_hub.settings.SettingsError` (one
line) for an object it cannot host.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from a2a_hub.settings import SettingsError

if TYPE_CHECKING:
    from a2a_hub.agents.links import HubLinks
    from a2a_hub.engine.executor import AgentExecutor
    from a2a_hub.settings import AgentSpec

__all__ = ["FRAMEWORKS", "Framework", "accepted", "adapt", "extra_for_module", "framework_of"]


@dataclass(frozen=True, slots=True)
class Framework:
    """One framework whose agents the hub hosts."""

    #: Shown in messages, e.g. ``"Google ADK"``.
    title: str
    #: The a2a-hub extra that installs it (``pip install 'a2a-hub[EXTRA]'``).
    extra: str
    #: Top-level packages whose classes identify the framework's objects.
    packages: tuple[str, ...]
    #: What is accepted, for the one-line refusal of anything else.
    accepts: str
    #: The adapter module under ``a2a_hub.agents.frameworks``.
    adapter: str

    @property
    def pip(self) -> str:
        return f"pip install 'a2a-hub[{self.extra}]'"


FRAMEWORKS: tuple[Framework, ...] = (
    Framework("a2a-sdk", "a2a-sdk", ("a2a",), "an a2a-sdk AgentExecutor (class or instance)",
              "a2a_sdk"),
    Framework("Google ADK", "adk", ("google.adk",), "a Google ADK agent (e.g. root_agent)", "adk"),
    Framework("LangGraph", "langgraph", ("langgraph",),
              "a compiled LangGraph graph (MessagesState)", "langgraph"),
    Framework("pydantic-ai", "pydantic-ai", ("pydantic_ai",), "a pydantic-ai Agent",
              "pydantic_ai"),
    Framework("OpenAI Agents SDK", "openai-agents", ("agents",), "an OpenAI Agents SDK Agent",
              "openai_agents"),
)  # fmt: skip


def _in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def framework_of(obj: Any) -> Framework | None:
    """The framework ``obj`` (a class or an instance) comes from, by its classes' modules."""
    cls = obj if isinstance(obj, type) else type(obj)
    for klass in getattr(cls, "__mro__", (cls,)):
        module = getattr(klass, "__module__", "") or ""
        for framework in FRAMEWORKS:
            if any(_in_package(module, package) for package in framework.packages):
                return framework
    return None


def extra_for_module(module: str) -> Framework | None:
    """The framework a missing module belongs to (to name its extra), if any."""
    for framework in FRAMEWORKS:
        if any(_in_package(module, package) for package in framework.packages):
            return framework
    return None


def accepted() -> str:
    """What ``module:attr`` may name, in one line."""
    kinds = ["an a2a-hub AgentExecutor subclass", *(f.accepts for f in FRAMEWORKS)]
    return "; ".join(kinds)


def adapt(obj: Any, *, spec: AgentSpec, links: HubLinks) -> AgentExecutor:
    """The hub executor hosting ``obj`` (an object of one of :data:`FRAMEWORKS`)."""
    framework = framework_of(obj)
    if framework is None:
        raise SettingsError(
            f"agent {spec.id!r}: {spec.executor} is a {type(obj).__name__}, which a2a-hub cannot "
            f"host; it accepts {accepted()}"
        )
    try:
        module = importlib.import_module(f"{__name__}.{framework.adapter}")
    except ImportError as exc:
        raise SettingsError(
            f"agent {spec.id!r}: hosting a {framework.title} agent needs the "
            f"{framework.extra!r} extra ({exc}): {framework.pip}"
        ) from None
    executor: AgentExecutor = module.adapt(obj, spec=spec, links=links)
    return executor
