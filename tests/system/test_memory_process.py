"""Memory comes back after a storm of refused requests (issue 30 item 16).

A serving process collects garbage rarely (``tune_gc``): a refused request whose error
kept its traceback held the request's body in a reference cycle for good (500 JSON-RPC
``SubscribeToTask`` calls with unknown ids and large metadata held 499 MiB).  The same
load is sent twice to a real ``a2a-hub serve``: the second must not grow the process
as the first did, on JSON-RPC, REST and both WebSocket subprotocols.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import websockets

from tests.support.processes import PIDS, hub_process

BIG = "v" * 200_000
ROUNDS = 60  # 12 MB of metadata per load, as much in REST bodies, 4 MB over WebSockets


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def storm(url: str) -> None:
    """One load: refused JSON-RPC, REST and WebSocket requests carrying large data."""
    v10 = {"A2A-Version": "1.0"}
    async with httpx.AsyncClient(timeout=60) as http:
        for i in range(ROUNDS):
            body = {"jsonrpc": "2.0", "id": i, "method": "SubscribeToTask",
                    "params": {"id": f"unknown-{i}", "metadata": {"k": BIG}}}  # fmt: skip
            r = await http.post(f"{url}/a2a/echo", json=body, headers=v10)
            assert "error" in r.json()
            r = await http.post(f"{url}/a2a/echo/message:send", headers=v10, json={
                "message": {"messageId": f"m{i}", "role": "ROLE_USER", "taskId": f"nope-{i}",
                            "parts": [{"text": BIG}]}})  # fmt: skip
            assert r.status_code == 404
    ws_url = url.replace("http://", "ws://") + "/a2a/echo/ws"
    async with websockets.connect(ws_url, max_size=None) as ws:
        for i in range(ROUNDS // 2):
            await ws.send(json.dumps({"action": "send_message", "message_id": f"w{i}",
                                      "task_id": f"nope-{i}", "text": BIG[:60_000]}))  # fmt: skip
            assert json.loads(await ws.recv())["event"] == "error"
            ids = {f"t{i}-{j}-" + "z" * 40: 1 for j in range(900)}
            await ws.send(json.dumps({"action": "sync_state", "last_seq": ids}))
            assert json.loads(await ws.recv())["event"] == "error"
        # what one sync_state may name is bounded
        ids = {f"t-{j}": 1 for j in range(1001)}
        await ws.send(json.dumps({"action": "sync_state", "last_seq": ids}))
        refused = json.loads(await ws.recv())
        assert refused["event"] == "error" and "at most 1000" in refused["message"]


def test_memory_comes_back_after_refused_requests(tmp_path: Path) -> None:
    with hub_process("echo", cwd=tmp_path,
                     options=("--max-body-bytes", "1000000", "--ws-max-frame-bytes",
                              "1000000")) as url:  # fmt: skip
        pid = PIDS[url]
        asyncio.run(storm(url))
        first = rss_mib(pid)
        asyncio.run(storm(url))
        second = rss_mib(pid)
        asyncio.run(storm(url))
        third = rss_mib(pid)
    # each load sends ~28 MB the server refuses; what it keeps must not grow with them
    # (before the fix: +24 MiB a load)
    assert third - first < 8, f"RSS after each load: {first:.0f}, {second:.0f}, {third:.0f} MiB"
