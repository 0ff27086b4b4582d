"""The client is usable without the server: importing it loads neither Starlette nor the hub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import a2a_hub

SRC = str(Path(a2a_hub.__file__).resolve().parents[1])


def modules_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    path = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": path},
    )
    return set(json.loads(out.stdout))


def test_importing_the_client_does_not_load_the_server() -> None:
    loaded = modules_after("import a2a_hub.client")
    assert "a2a_hub.client" in loaded
    assert not {m for m in loaded if m == "starlette" or m.startswith("starlette.")}
    assert not {m for m in loaded if m.startswith("a2a_hub.server")}


def test_the_package_still_exports_the_server_on_first_use() -> None:
    loaded = modules_after(
        "from a2a_hub import AgentExecutor, Hub, create_app, errors, types\n"
        "assert errors.__name__ == 'a2a_hub.protocol.errors'\n"
        "assert types.__name__ == 'a2a_hub.protocol.types'\n"
        "assert Hub.__module__.startswith('a2a_hub.server')"
    )
    assert "a2a_hub.server" in loaded
