"""deploy/compose.yaml: API nodes and a worker service sharing one store and one Temporal."""

from __future__ import annotations

from pathlib import Path

import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "compose.yaml"


def test_the_worker_tier_is_wired() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    worker, temporal = services["worker"], services["temporal"]
    assert worker["entrypoint"] == ["a2a-hub", "worker"]
    assert "temporal" in worker["depends_on"] and "temporal" in services["hub1"]["depends_on"]
    for name in ("hub1", "hub2", "worker"):
        executor = services[name]["environment"]["A2A_HUB_EXECUTOR"]
        assert "temporal://temporal:7233" in executor
    assert temporal["entrypoint"][:3] == ["temporal", "server", "start-dev"]
