"""`make demo` for now: serve the echo agent, send it one message, show the answer, stop.

The debate scenario (two LLM debaters and a judge) replaces this demo once the
scenario runner exists.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time

import httpx


def main() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    workdir = tempfile.mkdtemp(prefix="a2a-hub-demo-")
    print(f"$ a2a-hub serve --agent echo --port {port}   (in {workdir})")
    server = subprocess.Popen(
        [sys.executable, "-m", "a2a_hub", "serve", "--agent", "echo", "--port", str(port)],
        cwd=workdir,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                card = httpx.get(f"{url}/a2a/echo/.well-known/agent-card.json", timeout=1).json()
                break
            except httpx.HTTPError:
                if server.poll() is not None or time.monotonic() > deadline:
                    print("the server did not start", file=sys.stderr)
                    return 1
                time.sleep(0.2)
        print(f"\nagent card: {card['name']} — {card['description']}")
        for iface in card["supportedInterfaces"]:
            print(f"  {iface['protocolBinding']:9} {iface['protocolVersion']}  {iface['url']}")
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
            },
        }
        print("\n> SendMessage 'hi'")
        reply = httpx.post(
            f"{url}/a2a/echo", json=request, headers={"A2A-Version": "1.0"}, timeout=10
        ).json()
        print(json.dumps(reply, indent=2))
        task = reply["result"]["task"]
        print(
            f"\ntask {task['id']} is {task['status']['state']}; "
            f"artifact: {task['artifacts'][0]['parts'][0]['text']!r}"
        )
        return 0
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    sys.exit(main())
