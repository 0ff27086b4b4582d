"""A server built only from the official a2a-sdk, as a peer for our client's tests."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    TaskState,
)
from starlette.applications import Starlette


class SdkPizza(AgentExecutor):
    """Echo, or (text starting with 'pizza') ask which kind and then complete."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([new_text_part(f"order: {text}")], name="order")
            await updater.complete()
            return
        if text.startswith("pizza"):
            await updater.requires_input(
                updater.new_agent_message([new_text_part("What kind of pizza?")])
            )
            return
        await updater.start_work()
        await asyncio.sleep(0.01)
        await updater.add_artifact([new_text_part(f"echo: {text}")], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        context_id = task.context_id if task else context.context_id
        await TaskUpdater(event_queue, context.task_id, context_id).cancel()


class SdkServer:
    """The official SDK's server on a loopback port: JSON-RPC 1.0 (+0.3 compat) and REST."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        card = AgentCard(
            name="SDK pizza",
            description="built with the official a2a-sdk",
            version="1.0.0",
            supported_interfaces=[
                AgentInterface(
                    protocol_binding="JSONRPC", protocol_version="1.0", url=f"{self.url}/rpc"
                ),
                AgentInterface(
                    protocol_binding="HTTP+JSON", protocol_version="1.0", url=f"{self.url}/rest"
                ),
                AgentInterface(
                    protocol_binding="JSONRPC", protocol_version="0.3", url=f"{self.url}/v03"
                ),
            ],
            capabilities=AgentCapabilities(streaming=True, push_notifications=False),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[AgentSkill(id="pizza", name="pizza", description="orders", tags=["demo"])],
        )
        handler = DefaultRequestHandler(
            agent_executor=SdkPizza(), task_store=InMemoryTaskStore(), agent_card=card
        )
        routes: list[Any] = []
        routes += create_agent_card_routes(card)
        routes += create_jsonrpc_routes(handler, rpc_url="/rpc", enable_v0_3_compat=True)
        routes += create_jsonrpc_routes(handler, rpc_url="/v03", enable_v0_3_compat=True)
        routes += create_rest_routes(handler, path_prefix="/rest")
        config = uvicorn.Config(Starlette(routes=routes), log_level="warning")
        self.server = uvicorn.Server(config)

    async def __aenter__(self) -> SdkServer:
        self._task = asyncio.ensure_future(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        await self._task
        self.sock.close()
