"""The bare-stack ceiling: uvicorn (uvloop, httptools) + Starlette and no protocol work.

It parses the request body with the standard ``json`` module (``Request.json()``) and answers
a Task-shaped JSON of the same shape and about the same size as the real servers' answers
(fresh uuid4 ids, a timestamp, the artifact ``echo: <text>``, the message in the history), with
Starlette's ``JSONResponse``.  No validation, no store, no task engine: what is left is the cost
of the HTTP stack, which no A2A server on this stack can beat.

Same paths as a2a-hub's ``/a2a/echo`` agent:

* ``POST /a2a/echo``: JSON-RPC; ``SendMessage``, ``message/send`` (0.3 shape),
  ``GetTask``, ``SendStreamingMessage`` (four SSE events: task, working, artifact, completed);
* ``POST /a2a/echo/message:send``: REST;
* ``GET /healthz``.

    python bench/ceiling_server.py PORT
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

PREFIX = "/a2a/echo"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(message: dict[str, Any]) -> str:
    return "\n".join(p.get("text", "") for p in message.get("parts", []) if "text" in p)


def _task(message: dict[str, Any], state: str = "TASK_STATE_COMPLETED") -> dict[str, Any]:
    task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())
    user = {**message, "contextId": context_id, "taskId": task_id}
    task: dict[str, Any] = {
        "id": task_id,
        "contextId": context_id,
        "status": {"state": state, "timestamp": _now()},
        "history": [user],
    }
    if state == "TASK_STATE_COMPLETED":
        task["artifacts"] = [
            {
                "artifactId": str(uuid.uuid4()),
                "name": "echo",
                "parts": [{"text": f"echo: {_text(message)}"}],
            }
        ]
    return task


def _task_03(message: dict[str, Any]) -> dict[str, Any]:
    task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())
    return {
        "kind": "task",
        "id": task_id,
        "contextId": context_id,
        "status": {"state": "completed", "timestamp": _now()},
        "artifacts": [
            {
                "artifactId": str(uuid.uuid4()),
                "name": "echo",
                "parts": [{"kind": "text", "text": f"echo: {_text(message)}"}],
            }
        ],
        "history": [{**message, "contextId": context_id, "taskId": task_id}],
    }


_STORED_TASK = _task({"messageId": "m0", "role": "ROLE_USER", "parts": [{"text": "hello bench"}]})


async def _stream(req_id: Any, message: dict[str, Any]) -> AsyncIterator[bytes]:
    submitted = _task(message, "TASK_STATE_SUBMITTED")
    tid, cid = submitted["id"], submitted["contextId"]
    results: list[dict[str, Any]] = [
        {"task": submitted},
        {
            "statusUpdate": {
                "taskId": tid,
                "contextId": cid,
                "status": {"state": "TASK_STATE_WORKING", "timestamp": _now()},
            }
        },
        {
            "artifactUpdate": {
                "taskId": tid,
                "contextId": cid,
                "artifact": {
                    "artifactId": str(uuid.uuid4()),
                    "name": "echo",
                    "parts": [{"text": f"echo: {_text(message)}"}],
                },
            }
        },
        {
            "statusUpdate": {
                "taskId": tid,
                "contextId": cid,
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": _now()},
            }
        },
    ]
    for seq, result in enumerate(results, 1):
        data = json.dumps({"jsonrpc": "2.0", "id": req_id, "result": result})
        yield f"id: {seq}\ndata: {data}\n\n".encode()


async def rpc(request: Request) -> Response:
    body = await request.json()
    method, req_id, params = body["method"], body.get("id"), body.get("params") or {}
    result: Any
    if method == "SendMessage":
        result = {"task": _task(params["message"])}
    elif method == "message/send":
        result = _task_03(params["message"])
    elif method == "GetTask":
        result = {**_STORED_TASK, "id": params["id"]}
    elif method == "SendStreamingMessage":
        return StreamingResponse(
            _stream(req_id, params["message"]),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )
    else:
        return JSONResponse(
            {"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": "no"}}
        )
    return JSONResponse({"jsonrpc": "2.0", "id": req_id, "result": result})


async def rest_send(request: Request) -> Response:
    body = await request.json()
    return JSONResponse({"task": _task(body["message"])})


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


app = Starlette(
    routes=[
        Route("/healthz", healthz, methods=["GET"]),
        Route(f"{PREFIX}/message:send", rest_send, methods=["POST"]),
        Route(PREFIX, rpc, methods=["POST"]),
    ]
)


def main() -> None:
    port = int(sys.argv[1])
    uvicorn.run(
        app,
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
