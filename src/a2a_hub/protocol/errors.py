"""The one exception tree of a2a-hub and its mapping to every transport.

Each error class carries its JSON-RPC code, HTTP status, the ``reason`` used in
the HTTP+JSON error body (google.rpc ``ErrorInfo``), and the code used on the
WebSocket channel.  Raise these anywhere; the transports turn them into the
right wire form, so a client always gets an error it can act on and never a
stack trace.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

__all__ = [
    "A2AError",
    "AgentNotFoundError",
    "ContentTypeNotSupportedError",
    "ExecutorUnavailableError",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "IdempotencyKeyReusedError",
    "InternalError",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "JSONParseError",
    "MethodNotAllowedError",
    "MethodNotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PushNotificationNotSupportedError",
    "RateLimitedError",
    "ResourceNotFoundError",
    "StoreUnavailableError",
    "TaskGenerationMismatchError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "UnauthenticatedError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
    "error_from_code",
    "error_from_reason",
]


class A2AError(Exception):
    """Base of every protocol error.

    ``message`` is written for a person: it says what was wrong and, where it
    can, what to do instead.  ``data`` is optional structured detail that goes
    into the JSON-RPC ``error.data`` / the ErrorInfo ``metadata``.
    """

    code: ClassVar[int] = -32603
    http_status: ClassVar[int] = 500
    reason: ClassVar[str] = "INTERNAL_ERROR"
    ws_code: ClassVar[str] = "internal_error"
    grpc_status: ClassVar[str] = "INTERNAL"
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, *, data: dict[str, Any] | None = None):
        self.message = message or self.default_message
        self.data = data
        super().__init__(self.message)


class JSONParseError(A2AError):
    """The body is not valid JSON."""

    code = -32700
    http_status = 400
    reason = "PARSE_ERROR"
    ws_code = "parse_error"
    grpc_status = "INVALID_ARGUMENT"
    default_message = "Invalid JSON payload"


class InvalidRequestError(A2AError):
    """The body is JSON but not a valid JSON-RPC 2.0 request."""

    code = -32600
    http_status = 400
    reason = "INVALID_REQUEST"
    ws_code = "invalid_request"
    grpc_status = "INVALID_ARGUMENT"
    default_message = "Request payload validation error"


class MethodNotFoundError(A2AError):
    """No such method in the protocol version spoken."""

    code = -32601
    http_status = 404
    reason = "METHOD_NOT_FOUND"
    ws_code = "method_not_found"
    grpc_status = "NOT_FOUND"
    default_message = "Method not found"


class InvalidParamsError(A2AError):
    """Params are missing, of the wrong type, or contradict each other."""

    code = -32602
    http_status = 400
    reason = "INVALID_PARAMS"
    ws_code = "invalid_params"
    grpc_status = "INVALID_ARGUMENT"
    default_message = "Invalid parameters"


class IdempotencyKeyReusedError(InvalidParamsError):
    """A send whose ``Idempotency-Key`` (or ``messageId``) was already used by the same
    caller for another message: invalid params on JSON-RPC (with its own ``reason``),
    HTTP 422, gRPC ``INVALID_ARGUMENT``."""

    http_status = 422
    reason = "IDEMPOTENCY_KEY_REUSED"
    default_message = "The idempotency key was already used for another message"


class InternalError(A2AError):
    """Something failed on our side."""


class TaskNotFoundError(A2AError):
    """The task does not exist (or is not visible to the caller)."""

    code = -32001
    http_status = 404
    reason = "TASK_NOT_FOUND"
    ws_code = "task_not_found"
    grpc_status = "NOT_FOUND"
    default_message = "Task not found"


class TaskNotCancelableError(A2AError):
    """The task is already in a terminal state."""

    code = -32002
    http_status = 400
    reason = "TASK_NOT_CANCELABLE"
    ws_code = "task_not_cancelable"
    grpc_status = "FAILED_PRECONDITION"
    default_message = "Task cannot be canceled"


class PushNotificationNotSupportedError(A2AError):
    """The agent does not send push notifications."""

    code = -32003
    http_status = 400
    reason = "PUSH_NOTIFICATION_NOT_SUPPORTED"
    ws_code = "push_notification_not_supported"
    grpc_status = "FAILED_PRECONDITION"
    default_message = "Push Notification is not supported"


class UnsupportedOperationError(A2AError):
    """The operation is not allowed for this agent or task now."""

    code = -32004
    http_status = 400
    reason = "UNSUPPORTED_OPERATION"
    ws_code = "unsupported_operation"
    grpc_status = "FAILED_PRECONDITION"
    default_message = "This operation is not supported"


class ContentTypeNotSupportedError(A2AError):
    """Wrong or missing Content-Type, or media types the agent cannot handle."""

    code = -32005
    http_status = 415
    reason = "CONTENT_TYPE_NOT_SUPPORTED"
    ws_code = "content_type_not_supported"
    grpc_status = "INVALID_ARGUMENT"
    default_message = "Incompatible content types"


class InvalidAgentResponseError(A2AError):
    """The agent produced something the protocol does not allow."""

    code = -32006
    http_status = 500
    reason = "INVALID_AGENT_RESPONSE"
    ws_code = "invalid_agent_response"
    grpc_status = "INTERNAL"
    default_message = "Invalid agent response"


class ExtendedAgentCardNotConfiguredError(A2AError):
    """No extended agent card is configured for this agent."""

    code = -32007
    http_status = 400
    reason = "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    ws_code = "extended_card_not_configured"
    grpc_status = "FAILED_PRECONDITION"
    default_message = "Extended agent card is not configured"


class ExtensionSupportRequiredError(A2AError):
    """The agent requires an extension the client did not declare."""

    code = -32008
    http_status = 400
    reason = "EXTENSION_SUPPORT_REQUIRED"
    ws_code = "extension_support_required"
    grpc_status = "FAILED_PRECONDITION"
    default_message = "Extension support required"


class VersionNotSupportedError(A2AError):
    """The requested A2A version is not served.

    gRPC ``FAILED_PRECONDITION``, as the spec's §5.4 table since 1.0.1 (a2aproject/A2A
    PR #1627; 1.0.0 said ``UNIMPLEMENTED``), the official SDK and the TCK's mandatory
    ``test_version_not_supported_returns_failed_precondition`` have it.
    """

    code = -32009
    http_status = 400
    reason = "VERSION_NOT_SUPPORTED"
    ws_code = "version_not_supported"
    grpc_status = "FAILED_PRECONDITION"
    default_message = "Protocol version not supported"


class TaskGenerationMismatchError(A2AError):
    """A2A 1.1 preview: ``ifGenerationMatch`` is not the task's generation (the dev-1.1
    spec's §5.4: JSON-RPC -32010, gRPC ``ABORTED``, HTTP 409 Conflict)."""

    code = -32010
    http_status = 409
    reason = "TASK_GENERATION_MISMATCH"
    ws_code = "task_generation_mismatch"
    grpc_status = "ABORTED"
    default_message = "Task generation mismatch"


class AgentNotFoundError(A2AError):
    """No agent with that id is hosted here (HTTP 404; JSON-RPC -32601 has no better fit)."""

    code = -32600
    http_status = 404
    reason = "AGENT_NOT_FOUND"
    ws_code = "agent_not_found"
    grpc_status = "NOT_FOUND"
    default_message = "Agent not found"


class PayloadTooLargeError(A2AError):
    """The request body is larger than the configured limit."""

    code = -32600
    http_status = 413
    reason = "PAYLOAD_TOO_LARGE"
    ws_code = "payload_too_large"
    grpc_status = "INVALID_ARGUMENT"
    default_message = "Request body too large"


class StoreUnavailableError(A2AError):
    """The task store cannot be reached; the request may be retried."""

    code = -32603
    http_status = 503
    reason = "STORE_UNAVAILABLE"
    ws_code = "store_unavailable"
    grpc_status = "UNAVAILABLE"
    default_message = "Task store unavailable"


class ExecutorUnavailableError(A2AError):
    """The engine that runs the agents (Temporal, ``--executor temporal://…``) cannot be
    reached; the request may be retried."""

    code = -32603
    http_status = 503
    reason = "EXECUTOR_UNAVAILABLE"
    ws_code = "executor_unavailable"
    grpc_status = "UNAVAILABLE"
    default_message = "Agent executor unavailable"


class UnauthenticatedError(A2AError):
    """The request carries no credential, or one that is unknown, revoked or expired (401)."""

    code = -32600
    http_status = 401
    reason = "UNAUTHENTICATED"
    ws_code = "unauthenticated"
    grpc_status = "UNAUTHENTICATED"
    default_message = "Authentication required: send X-API-Key: KEY or Authorization: Bearer KEY"


class ResourceNotFoundError(A2AError):
    """An admin resource (API key, MCP server, conversation) that does not exist (404)."""

    code = -32600
    http_status = 404
    reason = "NOT_FOUND"
    ws_code = "not_found"
    grpc_status = "NOT_FOUND"
    default_message = "Not found"


class MethodNotAllowedError(A2AError):
    """An HTTP method the route does not serve (405, with the ``Allow`` header)."""

    code = -32600
    http_status = 405
    reason = "METHOD_NOT_ALLOWED"
    ws_code = "method_not_allowed"
    grpc_status = "UNIMPLEMENTED"
    default_message = "Method not allowed"


class PermissionDeniedError(A2AError):
    """The credential is valid but does not open this agent or operation (403)."""

    code = -32600
    http_status = 403
    reason = "PERMISSION_DENIED"
    ws_code = "permission_denied"
    grpc_status = "PERMISSION_DENIED"
    default_message = "This API key does not open this agent"


class RateLimitedError(A2AError):
    """The caller is over a ``[[limits]]`` rate or ``max_running`` cap: retry after
    ``retry_after`` seconds.  HTTP 429 with ``Retry-After`` (JSON-RPC too: its error's data
    carries a google.rpc ``RetryInfo``), gRPC ``RESOURCE_EXHAUSTED`` with ``RetryInfo`` in
    the status details, a WebSocket ``error`` event with ``retry_after``."""

    code = -32029
    http_status = 429
    reason = "RATE_LIMITED"
    ws_code = "rate_limited"
    grpc_status = "RESOURCE_EXHAUSTED"
    default_message = "Too many requests: retry later"

    def __init__(
        self,
        message: str | None = None,
        *,
        retry_after: float = 1.0,
        data: dict[str, Any] | None = None,
    ) -> None:
        self.retry_after = max(0.001, float(retry_after))
        super().__init__(message, data={"retryAfter": f"{self.retry_after:.3f}", **(data or {})})

    def retry_info(self) -> dict[str, Any]:
        """The google.rpc ``RetryInfo`` detail (``retryDelay`` as a protobuf Duration)."""
        return {
            "@type": "type.googleapis.com/google.rpc.RetryInfo",
            "retryDelay": f"{self.retry_after:.3f}s",
        }

    @property
    def retry_after_header(self) -> str:
        """The ``Retry-After`` header: whole seconds, at least 1."""
        return str(max(1, math.ceil(self.retry_after)))


_BY_CODE: dict[int, type[A2AError]] = {
    cls.code: cls
    for cls in (
        JSONParseError,
        InvalidRequestError,
        MethodNotFoundError,
        InvalidParamsError,
        InternalError,
        TaskNotFoundError,
        TaskNotCancelableError,
        PushNotificationNotSupportedError,
        UnsupportedOperationError,
        ContentTypeNotSupportedError,
        InvalidAgentResponseError,
        ExtendedAgentCardNotConfiguredError,
        ExtensionSupportRequiredError,
        VersionNotSupportedError,
        TaskGenerationMismatchError,
        RateLimitedError,
    )
}


_BY_REASON: dict[str, type[A2AError]] = {cls.reason: cls for cls in _BY_CODE.values()}
_BY_REASON["INTERNAL"] = InternalError
_BY_REASON[IdempotencyKeyReusedError.reason] = IdempotencyKeyReusedError
_BY_REASON["UNAUTHENTICATED"] = UnauthenticatedError
_BY_REASON["PERMISSION_DENIED"] = PermissionDeniedError


def error_from_reason(reason: str, message: str, status: int | None = None) -> A2AError:
    """Build the typed error for an HTTP+JSON error body (its ErrorInfo ``reason``)."""
    cls = _BY_REASON.get(reason)
    if cls is not None:
        return cls(message)
    if status == 404:
        return TaskNotFoundError(message)
    return A2AError(message)


def error_from_code(code: int, message: str, data: Any = None) -> A2AError:
    """Build the typed error for a JSON-RPC error a peer sent us."""
    cls = _BY_CODE.get(code, A2AError)
    err = cls(message, data=data if isinstance(data, dict) else None)
    if cls is A2AError:
        err.code = code  # type: ignore[misc]
    return err
