"""Agent kinds: ``echo``, ``llm``, ``remote``, the composites, and executors from an import path."""

from a2a_hub.agents.composite import LoopExecutor, ParallelExecutor, SequentialExecutor
from a2a_hub.agents.echo import EchoExecutor
from a2a_hub.agents.links import HubLinks
from a2a_hub.agents.llm import LLMExecutor
from a2a_hub.agents.loader import KINDS, build_executor, load_class
from a2a_hub.agents.remote import RemoteExecutor

__all__ = [
    "KINDS",
    "EchoExecutor",
    "HubLinks",
    "LLMExecutor",
    "LoopExecutor",
    "ParallelExecutor",
    "RemoteExecutor",
    "SequentialExecutor",
    "build_executor",
    "load_class",
]
