"""Agent kinds: the built-in ``echo`` and executors loaded from an import path."""

from a2a_hub.agents.echo import EchoExecutor
from a2a_hub.agents.loader import build_executor, load_class

__all__ = ["EchoExecutor", "build_executor", "load_class"]
