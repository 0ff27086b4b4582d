"""``a2a-hub serve`` as a real process: the README's curl, and tasks surviving a restart."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx

from tests.support.processes import CLI, free_port, serve


def rpc(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    r = httpx.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={"A2A-Version": "1.0"},
        timeout=10,
    )
    assert r.status_code == 200
    return r.json()  # type: ignore[no-any-return]


def test_readme_curl_and_restart_on_the_same_sqlite_file(tmp_path: Path) -> None:
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    with serve(
        "--agent", "echo", "--agent", "pizza=tests.support.agents:PizzaExecutor", cwd=tmp_path
    ) as url:
        card = httpx.get(f"{url}/a2a/echo/.well-known/agent-card.json").json()
        assert card["supportedInterfaces"][0]["url"] == f"{url}/a2a/echo"
        done = rpc(f"{url}/a2a/echo", "SendMessage", {"message": message})["result"]["task"]
        asked = rpc(f"{url}/a2a/pizza", "SendMessage", {"message": message})["result"]["task"]
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    # the default store is a SQLite file under ./.a2a-hub/
    assert (tmp_path / ".a2a-hub" / "hub.db").exists()
    with serve(
        "--agent", "echo", "--agent", "pizza=tests.support.agents:PizzaExecutor", cwd=tmp_path
    ) as url:
        again = rpc(f"{url}/a2a/echo", "GetTask", {"id": done["id"]})["result"]
        assert again == done
        listed = rpc(f"{url}/a2a/echo", "ListTasks", {})["result"]
        assert [t["id"] for t in listed["tasks"]] == [done["id"]]
        # the interrupted conversation continues after the restart, history intact
        follow = {
            **message,
            "messageId": "m2",
            "taskId": asked["id"],
            "parts": [{"text": "salami"}],
        }
        finished = rpc(f"{url}/a2a/pizza", "SendMessage", {"message": follow})["result"]["task"]
        assert finished["status"]["state"] == "TASK_STATE_COMPLETED"
        assert [m["parts"][0]["text"] for m in finished["history"]][:3] == [
            "hi",
            "What kind of pizza?",
            "salami",
        ]


def test_serve_refuses_bad_settings_clearly(tmp_path: Path) -> None:
    out = subprocess.run([*CLI, "serve"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 2 and "no agents to serve" in out.stderr
    assert "Traceback" not in out.stderr
    out = subprocess.run(
        [*CLI, "serve", "--agent", "nosuch.module:X"], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 2 and "cannot import module 'nosuch.module'" in out.stderr
    out = subprocess.run(
        [*CLI, "serve", "--agent", "echo", "--store", "ftp://x"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "ftp://" in out.stderr and "Traceback" not in out.stderr


def test_config_file_and_environment(tmp_path: Path) -> None:
    (tmp_path / "hub.toml").write_text(
        'store = "memory://"\ndefault_agent = "hello"\n'
        '[[agents]]\nid = "hello"\nkind = "echo"\nname = "Hello"\n'
        '[agents.options]\nreply = "message"\n'
        '[[agents]]\nid = "other"\nkind = "echo"\n'
    )
    with serve("--config", "hub.toml", cwd=tmp_path) as url:
        card = httpx.get(f"{url}/.well-known/agent-card.json").json()
        assert card["name"] == "Hello" and card["url"] == url
        message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}
        assert rpc(url, "SendMessage", {"message": message})["result"]["message"]["parts"] == [
            {"text": "echo: x"}
        ]
    assert not (tmp_path / ".a2a-hub").exists()


def test_serve_with_grpc_port(tmp_path: Path) -> None:
    import asyncio

    import grpc
    from a2a.types import a2a_pb2_grpc
    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState

    grpc_port = free_port()
    with serve(
        "--agent", "echo", "--store", "memory://", "--grpc-port", str(grpc_port), cwd=tmp_path
    ) as url:
        card = httpx.get(f"{url}/a2a/echo/.well-known/agent-card.json").json()
        assert card["supportedInterfaces"][-1] == {
            "url": f"127.0.0.1:{grpc_port}",
            "protocolBinding": "GRPC",
            "protocolVersion": "1.0",
            "tenant": "echo",
        }

        async def send() -> Any:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                message = Message(message_id="g", role=Role.ROLE_USER, parts=[Part(text="hi")])
                return await stub.SendMessage(SendMessageRequest(tenant="echo", message=message))

        answer = asyncio.run(send())
        assert answer.task.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer.task.artifacts[0].parts[0].text == "echo: hi"
