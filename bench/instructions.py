"""Instructions per request, counted by valgrind: a measure this VM's noise does not touch.

Wall-clock A/B runs (``BENCH_BASELINE``) vary by 15-20 % from round to round on a shared
VM, too much to see a change of a few per cent.  This counts the CPU instructions of a
blocking send instead: an in-process client (httpx's ASGI transport) sends N requests
through ``create_app`` (memory store, echo agent) under ``valgrind --tool=callgrind``, for
two values of N; the difference divided by the difference of N is the cost of one request
(client side included, start-up and imports cancelled out).  Run it in each tree::

    .venv/bin/python bench/instructions.py            # 1.0 and 0.3 sends, N = 100 and 400
    .venv/bin/python bench/instructions.py 1.0 50 250
    .venv/bin/python bench/instructions.py 1.0+oidc     # with a bearer token checked (OIDC)
    .venv/bin/python bench/instructions.py 1.0+limit    # under a [[limits]] rate not reached

``BENCH_TARGET`` picks what serves the sends: ``hub`` (the default, the echo agent),
``hub-sdk-executor`` (bench/sdk_server.py's a2a-sdk ``EchoExecutor`` hosted by a2a-hub, kind
python) or ``sdk`` (the same executor on the SDK's own server, bench/sdk_server.py's app, with
the a2a-sdk of this venv): the two last side by side measure what hosting an SDK executor on
a2a-hub gains, whatever the load of the machine.

Needs valgrind (Debian package).  About a minute per run of N on this machine.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

V03 = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "message/send",
    "params": {
        "message": {
            "kind": "message",
            "messageId": "X",
            "role": "user",
            "parts": [{"kind": "text", "text": "hello bench"}],
        },
        "configuration": {"blocking": True},
    },
}
V10 = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {
        "message": {"messageId": "X", "role": "ROLE_USER", "parts": [{"text": "hello bench"}]}
    },
}


async def _send(version: str, n: int) -> None:
    import copy
    import os

    import httpx

    from a2a_hub import AgentSpec, Hub, Settings, create_app

    version, _, variant = version.partition("+")
    headers = {"A2A-Version": version}
    target = os.environ.get("BENCH_TARGET", "hub")
    spec = AgentSpec(id="echo", kind="echo")
    if target == "hub-sdk-executor":
        sys.path.insert(0, str(Path(__file__).parent))
        spec = AgentSpec(id="echo", kind="python", executor="sdk_server:EchoExecutor")
    flat: dict[str, object] = {}
    issuer = None
    if variant == "oidc":  # the agent takes OIDC tokens: the request carries one
        import socket

        from oidc_issuer import AUDIENCE, BenchIssuer

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        issuer = BenchIssuer(port)
        issuer.start()
        spec = AgentSpec(id="echo", kind="echo", auth="oidc")
        flat = {"auth_oidc_issuer": issuer.url, "auth_oidc_audience": AUDIENCE}
        headers["Authorization"] = f"Bearer {issuer.token('bench')}"
    elif variant == "limit":  # every request counted against a rate it never reaches
        flat = {"limits": ["caller=*;rate=1000000/second"]}
    elif variant:
        raise SystemExit(f"unknown variant {variant!r} (oidc, limit)")
    hub = Hub(Settings.from_flat(agents=[spec], store="memory://", **flat))
    app: Any = create_app(hub)
    if target == "sdk":
        sys.path.insert(0, str(Path(__file__).parent))
        from sdk_server import build_app

        app = build_app("http://localhost")
    await hub.start()
    body = V03 if version == "0.3" else V10
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            for i in range(n):
                request = copy.deepcopy(body)
                request["params"]["message"]["messageId"] = f"m{i}"  # type: ignore[index]
                r = await http.post("/a2a/echo", json=request, headers=headers)
                if r.status_code != 200 or "completed" not in r.text.lower() or "rror" in r.text:
                    raise SystemExit(f"unexpected answer: {r.status_code} {r.text[:200]}")
    finally:
        await hub.close()
        if issuer is not None:
            issuer.stop()


def _count(version: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        res = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--inner",
                version,
                str(n),
            ],
            capture_output=True,
            text=True,
        )
        found = re.search(r"Collected : (\d+)", res.stderr)
        if res.returncode != 0 or found is None:
            raise SystemExit(f"valgrind failed: {res.stderr.strip().splitlines()[-1:]}")
        return int(found.group(1))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--inner"]:
        asyncio.run(_send(argv[1], int(argv[2])))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    versions = [argv[0]] if argv else ["1.0", "0.3"]
    low, high = (int(argv[1]), int(argv[2])) if len(argv) >= 3 else (100, 400)
    for version in versions:
        a, b = _count(version, low), _count(version, high)
        print(
            f"{version} blocking send: {(b - a) / (high - low) / 1e6:.3f} M instructions per "
            f"request (N={low}: {a:,}, N={high}: {b:,})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
