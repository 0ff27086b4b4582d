"""The gRPC binding of A2A 1.0 (``lf.a2a.v1.A2AService``), off unless ``grpc_port`` is set.

``a2a-hub serve --grpc-port 50051`` (or ``A2A_HUB_GRPC_PORT``, or ``grpc_port`` in
``hub.toml``) serves every hosted agent on that one port, over the same engine, store and
agents as JSON-RPC and REST.  Each agent's card then lists an interface
``{"url": "<host>:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0",
"tenant": "<agent id>"}``; the request's ``tenant`` field chooses the agent (see
:mod:`.servicer` for the metadata fallback, versions, extensions and errors).

The protobuf modules in ``_generated`` come from ``proto/a2a.proto`` (``make proto``) and
live in a private descriptor pool (:mod:`._pool`), so this package can share a process with
the official ``a2a-sdk``.  Needs the ``grpc`` extra: ``pip install 'a2a-hub[grpc]'``.
"""

from __future__ import annotations

try:
    import google.rpc.status_pb2  # noqa: F401
    import grpc  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "the gRPC binding needs grpcio, protobuf and googleapis-common-protos: "
        "pip install 'a2a-hub[grpc]'"
    ) from exc

from a2a_hub.server.grpc.server import GrpcServer
from a2a_hub.server.grpc.servicer import AGENT_METADATA, A2AServicer

__all__ = ["AGENT_METADATA", "A2AServicer", "GrpcServer"]
