"""Task engine: executor API, state machine, event log, runs."""

from a2a_hub.engine.engine import TaskEngine
from a2a_hub.engine.executor import AgentExecutor, RequestContext, TaskUpdater, text_of
from a2a_hub.engine.state import InvalidTransitionError

__all__ = [
    "AgentExecutor",
    "InvalidTransitionError",
    "RequestContext",
    "TaskEngine",
    "TaskUpdater",
    "text_of",
]
