"""The official a2a-sdk's server doing the bench's echo work (runs in bench/.venv-sdk).

Built only from SDK parts, as its documentation shows: ``DefaultRequestHandler`` +
``InMemoryTaskStore`` + ``create_jsonrpc_routes`` / ``create_rest_routes`` /
``create_agent_card_routes`` in a Starlette app, served by one uvicorn worker (uvloop,
httptools, no access log), the same as a2a-hub.

Routes use the same paths as a2a-hub's ``/a2a/echo`` agent:

* ``POST /a2a/echo``: JSON-RPC 1.0 and, with ``enable_v0_3_compat``, the 0.3 methods
  (``message/send`` …) on the same URL;
* ``/a2a/echo/message:send`` and the other HTTP+JSON 1.0 routes;
* ``GET /a2a/echo/.well-known/agent-card.json``;
* with a second argument, also the SDK's gRPC server (``GrpcHandler`` on the same request
  handler, in the same event loop) on that port (needs ``a2a-sdk[grpc]``).

The executor does what a2a-hub's built-in echo agent does: a Task (submitted), working, one
artifact ``echo: <text>`` named ``echo``, completed.  Nothing sleeps.

    python bench/sdk_server.py PORT [GRPC_PORT]
"""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette
from starlette.routing import BaseRoute

PREFIX = "/a2a/echo"


class EchoExecutor(AgentExecutor):
    """Task + one artifact ``echo: <text>`` + completed, like a2a-hub's echo agent."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            assert context.message is not None
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        text = context.get_user_input()
        await updater.add_artifact([new_text_part(f"echo: {text}")], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def build_card(base: str) -> AgentCard:
    url = f"{base}{PREFIX}"
    return AgentCard(
        name="Echo",
        description="Answers every message with 'echo: <your text>'.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=url),
            AgentInterface(protocol_binding="HTTP+JSON", protocol_version="1.0", url=url),
            AgentInterface(protocol_binding="JSONRPC", protocol_version="0.3", url=url),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Repeats text.", tags=["echo"])],
    )


def build_app(base: str) -> Starlette:
    card = build_card(base)
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    return app_of(card, handler)


def app_of(card: AgentCard, handler: DefaultRequestHandler) -> Starlette:
    routes: list[BaseRoute] = []
    routes += create_agent_card_routes(card, card_url=f"{PREFIX}/.well-known/agent-card.json")
    routes += create_jsonrpc_routes(handler, rpc_url=PREFIX, enable_v0_3_compat=True)
    # create_rest_routes appends a catch-all Mount('/{tenant}'): it goes last.
    routes += create_rest_routes(handler, path_prefix=PREFIX)
    return Starlette(routes=routes)


async def serve_with_grpc(port: int, grpc_port: int) -> None:
    """HTTP as in :func:`main` plus the SDK's gRPC server, sharing one request handler."""
    import grpc
    from a2a.server.request_handlers.grpc_handler import GrpcHandler
    from a2a.types import a2a_pb2_grpc

    card = build_card(f"http://127.0.0.1:{port}")
    card.supported_interfaces.append(
        AgentInterface(
            protocol_binding="GRPC", protocol_version="1.0", url=f"127.0.0.1:{grpc_port}"
        )
    )
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    server.add_insecure_port(f"127.0.0.1:{grpc_port}")
    await server.start()
    config = uvicorn.Config(
        app_of(card, handler),
        host="127.0.0.1",
        port=port,
        http="httptools",
        log_level="warning",
        access_log=False,
    )
    try:
        await uvicorn.Server(config).serve()
    finally:
        await server.stop(1)


def main() -> None:
    port = int(sys.argv[1])
    if len(sys.argv) > 2:
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(serve_with_grpc(port, int(sys.argv[2])))
        return
    uvicorn.run(
        build_app(f"http://127.0.0.1:{port}"),
        host="127.0.0.1",
        port=port,
        workers=1,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
