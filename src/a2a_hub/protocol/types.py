"""A2A 1.0 wire types: the one canonical model of the protocol.

Every struct mirrors a message of ``specification/a2a.proto`` in its JSON form
(camelCase names, enums as their proto names, defaults left out).  Requests are
decoded straight from bytes into these structs; the 0.3 and 0.1 codecs translate
to and from them at the edge.  Nothing else in the package defines wire types.

**A2A 1.1 preview** (the ``dev-1.1`` branch of a2aproject/A2A, commit ``28491879``, PR
#1810): ``generation`` on :class:`Task` and on the status and artifact events is set only in
answers to ``A2A-Version: 1.1`` requests (the engine never sets it, and 0 is left out of the
JSON, so 1.0 and 0.3 answers do not change); the 1.1 request fields (``currentGeneration``,
``ifGenerationMatch``) live on the ``…V11`` request types, which only 1.1 requests are decoded
into (a 1.0 request carrying them is unchanged: unknown fields are ignored).
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec

__all__ = [
    "APIKeySecurityScheme",
    "AgentCapabilities",
    "AgentCard",
    "AgentExtension",
    "AgentInterface",
    "AgentProvider",
    "AgentSkill",
    "Artifact",
    "AuthenticationInfo",
    "CancelTaskRequest",
    "GetExtendedAgentCardRequest",
    "GetTaskRequest",
    "GetTaskRequestV11",
    "HTTPAuthSecurityScheme",
    "ListTasksRequest",
    "ListTasksResponse",
    "Message",
    "Part",
    "Role",
    "SecurityRequirement",
    "SecurityScheme",
    "SendMessageConfiguration",
    "SendMessageConfigurationV11",
    "SendMessageRequest",
    "SendMessageRequestV11",
    "SendMessageResponse",
    "StreamResponse",
    "StringList",
    "SubscribeToTaskRequest",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskIdRequest",
    "TaskPushNotificationConfig",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
]


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """Base of every wire struct: camelCase on the wire, defaults omitted."""


class TaskState(enum.StrEnum):
    """Lifecycle state of a task (``TaskState`` in the proto)."""

    UNSPECIFIED = "TASK_STATE_UNSPECIFIED"
    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

    # Plain attributes of each member, set below (a property of an enum member costs a
    # Python call per read, and the engine reads these on every event).
    #: The short name people read: ``TASK_STATE_INPUT_REQUIRED`` → ``input-required``.
    label: str
    #: True for states a task never leaves.
    terminal: bool
    #: True for states that wait for the client (input or auth).
    interrupted: bool


_TERMINAL = frozenset(
    {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}
)
_INTERRUPTED = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})
for _state in TaskState:
    _state.label = _state.value.removeprefix("TASK_STATE_").lower().replace("_", "-")
    _state.terminal = _state in _TERMINAL
    _state.interrupted = _state in _INTERRUPTED
del _state
#: The states that end a turn (terminal or interrupted), for :attr:`StreamResponse.ends_turn`.
_TURN_ENDS = _TERMINAL | _INTERRUPTED


class Role(enum.StrEnum):
    """Sender of a message."""

    UNSPECIFIED = "ROLE_UNSPECIFIED"
    USER = "ROLE_USER"
    AGENT = "ROLE_AGENT"


_AGENT = Role.AGENT  # read once: an enum member costs a metaclass lookup per read (3.11)


class Part(_Wire):
    """One piece of content: exactly one of ``text``, ``raw``, ``url`` or ``data``."""

    text: str | None = None
    raw: bytes | None = None
    url: str | None = None
    data: Any = msgspec.UNSET
    metadata: dict[str, Any] | None = None
    filename: str | None = None
    media_type: str | None = None


class Message(_Wire):
    """One unit of communication between client and agent."""

    message_id: str
    role: Role
    parts: list[Part]
    context_id: str | None = None
    task_id: str | None = None
    metadata: dict[str, Any] | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None


class TaskStatus(_Wire):
    """State of a task, with the message that goes with it and when it was set."""

    state: TaskState
    message: Message | None = None
    timestamp: str | None = None


class Artifact(_Wire):
    """An output of a task."""

    artifact_id: str
    parts: list[Part]
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    extensions: list[str] | None = None


class Task(_Wire):
    """The unit of work: status, artifacts and the history of its messages."""

    id: str
    status: TaskStatus
    context_id: str = ""
    artifacts: list[Artifact] | None = None
    history: list[Message] | None = None
    metadata: dict[str, Any] | None = None
    #: A2A 1.1 preview: the seq of the last event of the task's log (0: not shown).
    generation: int = 0


class TaskStatusUpdateEvent(_Wire):
    """A change of a task's status."""

    task_id: str
    context_id: str
    status: TaskStatus
    metadata: dict[str, Any] | None = None
    #: A2A 1.1 preview: the task's generation after this event, its seq (0: not shown).
    generation: int = 0


class TaskArtifactUpdateEvent(_Wire):
    """A new artifact, or a chunk appended to one (``append``/``lastChunk``)."""

    task_id: str
    context_id: str
    artifact: Artifact
    append: bool = False
    last_chunk: bool = False
    metadata: dict[str, Any] | None = None
    #: A2A 1.1 preview: the task's generation after this event, its seq (0: not shown).
    generation: int = 0


class StreamResponse(_Wire):
    """One streamed item: exactly one member is set."""

    task: Task | None = None
    message: Message | None = None
    status_update: TaskStatusUpdateEvent | None = None
    artifact_update: TaskArtifactUpdateEvent | None = None

    @property
    def ends_turn(self) -> bool:
        """True for the last event of a turn: the agent's direct message, a terminal or
        interrupted status, or a snapshot of a terminal task (an interrupted snapshot can
        still be continued)."""
        if self.status_update is not None:
            return self.status_update.status.state in _TURN_ENDS
        if self.message is not None:
            return self.message.role is _AGENT
        if self.task is not None:
            return self.task.status.state in _TERMINAL
        return False


class SendMessageResponse(_Wire):
    """Result of ``SendMessage``: a task or a direct message."""

    task: Task | None = None
    message: Message | None = None


# --- push notifications -------------------------------------------------------------


class AuthenticationInfo(_Wire):
    """How the server authenticates to a push notification receiver."""

    scheme: str
    credentials: str | None = None


class TaskPushNotificationConfig(_Wire):
    """A webhook that receives a task's updates."""

    url: str
    id: str | None = None
    task_id: str | None = None
    token: str | None = None
    authentication: AuthenticationInfo | None = None
    tenant: str | None = None
    #: Not on the wire of any version: the protocol version the config came through
    #: ("0.3", "0.1"; None: 1.0), which picks the notification body's shape.  The hub
    #: stores it and strips it from what it answers.
    hub_protocol: str | None = None


# --- requests -----------------------------------------------------------------------


class SendMessageConfiguration(_Wire):
    """Options of a send request."""

    accepted_output_modes: list[str] | None = None
    task_push_notification_config: TaskPushNotificationConfig | None = None
    history_length: int | None = None
    return_immediately: bool = False


class SendMessageRequest(_Wire):
    """Params of ``SendMessage`` and ``SendStreamingMessage``."""

    message: Message
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None
    tenant: str | None = None


class GetTaskRequest(_Wire):
    """Params of ``GetTask``."""

    id: str
    history_length: int | None = None
    tenant: str | None = None


class SendMessageConfigurationV11(SendMessageConfiguration):
    """A2A 1.1 preview: ``ifGenerationMatch``, the generation the task must be at."""

    if_generation_match: int | None = None


class SendMessageRequestV11(SendMessageRequest):
    """A2A 1.1 preview: params of ``SendMessage`` with the 1.1 configuration."""

    configuration: SendMessageConfigurationV11 | None = None


class GetTaskRequestV11(GetTaskRequest):
    """A2A 1.1 preview: ``currentGeneration`` makes ``GetTask`` a long poll."""

    current_generation: int | None = None


class TaskIdRequest(_Wire):
    """Params of requests naming only a task: ``CancelTask``, ``SubscribeToTask``."""

    id: str
    metadata: dict[str, Any] | None = None
    tenant: str | None = None


CancelTaskRequest = TaskIdRequest
SubscribeToTaskRequest = TaskIdRequest


class ListTasksRequest(_Wire):
    """Params of ``ListTasks``."""

    context_id: str | None = None
    status: TaskState | None = None
    page_size: int | None = None
    page_token: str | None = None
    history_length: int | None = None
    status_timestamp_after: str | None = None
    include_artifacts: bool | None = None
    tenant: str | None = None


class ListTasksResponse(_Wire):
    """Result of ``ListTasks``."""

    tasks: list[Task]
    next_page_token: str
    page_size: int
    total_size: int


class GetExtendedAgentCardRequest(_Wire):
    """Params of ``GetExtendedAgentCard``."""

    tenant: str | None = None


# --- agent card ---------------------------------------------------------------------


class AgentInterface(_Wire):
    """A URL, binding and protocol version at which the agent answers."""

    url: str
    protocol_binding: str
    protocol_version: str
    tenant: str | None = None


class AgentProvider(_Wire):
    """Who runs the agent."""

    url: str
    organization: str


class AgentExtension(_Wire):
    """A protocol extension the agent supports."""

    uri: str
    description: str | None = None
    required: bool = False
    params: dict[str, Any] | None = None


class AgentCapabilities(_Wire):
    """Optional protocol features the agent supports."""

    streaming: bool | None = None
    push_notifications: bool | None = None
    extensions: list[AgentExtension] | None = None
    extended_agent_card: bool | None = None


class StringList(_Wire):
    """A list of strings (scopes of a security requirement)."""

    items: list[str] = msgspec.field(default_factory=list, name="list")


class SecurityRequirement(_Wire):
    """Schemes (with scopes) a caller must satisfy together."""

    schemes: dict[str, StringList] = msgspec.field(default_factory=dict)


class APIKeySecurityScheme(_Wire):
    """An API key in a header, query parameter or cookie."""

    location: str
    name: str
    description: str | None = None


class HTTPAuthSecurityScheme(_Wire):
    """HTTP authentication, e.g. ``Bearer``."""

    scheme: str
    description: str | None = None
    bearer_format: str | None = None


class SecurityScheme(_Wire):
    """One way to authenticate (a oneof in the proto)."""

    api_key_security_scheme: APIKeySecurityScheme | None = None
    http_auth_security_scheme: HTTPAuthSecurityScheme | None = None
    oauth2_security_scheme: dict[str, Any] | None = None
    open_id_connect_security_scheme: dict[str, Any] | None = None
    mtls_security_scheme: dict[str, Any] | None = None


class AgentSkill(_Wire):
    """Something the agent is good at."""

    id: str
    name: str
    description: str
    tags: list[str] = msgspec.field(default_factory=list)
    examples: list[str] | None = None
    input_modes: list[str] | None = None
    output_modes: list[str] | None = None
    security_requirements: list[SecurityRequirement] | None = None


class AgentCard(_Wire):
    """Self-description of an agent, served at ``/.well-known/agent-card.json``.

    ``url``, ``preferred_transport``, ``protocol_version`` and
    ``additional_interfaces`` are the 0.3 top-level fields, kept so that 0.3
    clients can use the same card.
    """

    name: str
    description: str
    supported_interfaces: list[AgentInterface]
    version: str
    capabilities: AgentCapabilities
    default_input_modes: list[str]
    default_output_modes: list[str]
    skills: list[AgentSkill]
    provider: AgentProvider | None = None
    documentation_url: str | None = None
    security_schemes: dict[str, SecurityScheme] | None = None
    security_requirements: list[SecurityRequirement] | None = None
    icon_url: str | None = None
    # 0.3 compatibility
    url: str | None = None
    preferred_transport: str | None = None
    protocol_version: str | None = None
    additional_interfaces: list[dict[str, str]] | None = None
