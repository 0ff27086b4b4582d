"""The gRPC server of a hub: one port for every hosted agent, in the hub's event loop."""

from __future__ import annotations

import logging

import grpc

from a2a_hub.server.grpc._generated import a2a_pb2_grpc
from a2a_hub.server.grpc.servicer import A2AServicer, ServedHub

__all__ = ["GrpcServer"]

log = logging.getLogger("a2a_hub.server")

#: Seconds running calls (streams) get to finish when the hub stops.
STOP_GRACE = 2.0


class GrpcServer:
    """``lf.a2a.v1.A2AService`` on ``host:port`` (insecure: put TLS in front, as for HTTP).

    A service of the hub when ``grpc_port`` is set (:meth:`a2a_hub.server.hub.Hub.services`).
    Port 0 picks a free port; :attr:`port` is the one bound, and each agent's card lists it.
    With several ``--workers`` every worker binds the same port (``SO_REUSEPORT``) and the
    kernel spreads the connections; a single process refuses a port already in use.
    """

    def __init__(self, hub: ServedHub) -> None:
        self.hub = hub
        self.port: int | None = None
        self._server: grpc.aio.Server | None = None

    async def start(self, host: str, port: int) -> GrpcServer:
        """Listen on ``host:port`` and serve; OSError if the address cannot be bound."""
        share = self.hub.settings.server.workers > 1
        server = grpc.aio.server(
            options=[
                ("grpc.so_reuseport", 1 if share else 0),
                ("grpc.max_receive_message_length", self.hub.settings.server.max_body_bytes),
            ]
        )
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(A2AServicer(self.hub), server)
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            bound = server.add_insecure_port(address)
        except RuntimeError as exc:
            raise OSError(f"gRPC cannot listen on {address}: {exc}") from None
        if not bound:  # older grpcio reports a failed bind as port 0
            raise OSError(f"gRPC cannot listen on {address} (in use or not permitted)")
        await server.start()
        self._server, self.port = server, bound
        for agent in self.hub.agents.values():
            agent.grpc_port = bound
            agent.card_changed()
        log.info("gRPC (A2A 1.0) listening on %s", address.rsplit(":", 1)[0] + f":{bound}")
        return self

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop accepting calls; running ones get ``grace`` seconds, then are cancelled."""
        server, self._server = self._server, None
        if server is not None:
            await server.stop(grace)
        for agent in self.hub.agents.values():
            if agent.grpc_port is not None:
                agent.grpc_port = None
                agent.card_changed()
