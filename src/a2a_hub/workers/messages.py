"""What the workflow and the activities of a worker tier pass each other: identifiers and
decisions only (the tasks, their events and push deliveries stay in the hub's store)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "END_ACTIVITY",
    "TURN_ACTIVITY",
    "WORKFLOW",
    "EndTask",
    "TaskStart",
    "Turn",
    "TurnOutcome",
]

#: The names registered with Temporal (kept stable: running workflows refer to them).
WORKFLOW = "a2a-hub.task"
TURN_ACTIVITY = "a2a-hub.run-turn"
END_ACTIVITY = "a2a-hub.end-task"


@dataclass
class TaskStart:
    """The workflow's input: one A2A task, its first message stored at ``seq``."""

    agent_id: str
    task_id: str
    seq: int
    #: The task queue of the agent's turns (only the workers hosting it poll it).
    task_queue: str
    #: Turns run again after their worker was lost (0: the task fails instead).
    retry_on_worker_loss: int = 0
    #: Seconds an interrupted task waits for its next message (None: for ever).
    input_timeout: float | None = None
    heartbeat_timeout: float = 10.0


@dataclass
class Turn:
    """One turn: the task's message at ``seq`` is answered by the agent."""

    agent_id: str
    task_id: str
    seq: int


@dataclass
class TurnOutcome:
    """How a turn left the task: its state (``TASK_STATE_…``) and last seq."""

    state: str
    seq: int
    terminal: bool


@dataclass
class EndTask:
    """End a task that no turn runs (canceled, input timed out, worker lost)."""

    agent_id: str
    task_id: str
    state: str
    reason: str
    #: Only a task still submitted or working is ended (a lost worker may have ended its
    #: turn before it was lost: a task waiting for input then keeps waiting).
    only_running: bool = False
