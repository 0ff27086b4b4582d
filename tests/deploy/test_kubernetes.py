"""deploy/kubernetes: every manifest is valid against the Kubernetes schemas (strict: no
unknown field), and the API nodes and the workers share one Temporal connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

FOLDER = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
KUBERNETES = "1.30.0"


def documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(FOLDER.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                found.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return found


@pytest.mark.parametrize(("name", "doc"), documents(), ids=[n for n, _ in documents()])
def test_each_manifest_is_valid(name: str, doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_kustomization_lists_every_manifest() -> None:
    listed = yaml.safe_load((FOLDER / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(
        p.name for p in FOLDER.glob("*.yaml") if p.stem != "kustomization"
    )


def test_api_and_workers_share_the_temporal_connection_and_have_probes() -> None:
    docs = {name.split(":")[1]: doc for name, doc in documents()}
    tier = docs["ConfigMap/a2a-hub-tier"]["data"]
    assert tier["A2A_HUB_EXECUTOR"].startswith("temporal://")
    for name in ("Deployment/a2a-hub-api", "Deployment/a2a-hub-worker"):
        container = docs[name]["spec"]["template"]["spec"]["containers"][0]
        assert {"configMapRef": {"name": "a2a-hub-tier"}} in container["envFrom"]
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    worker = docs["Deployment/a2a-hub-worker"]["spec"]["template"]["spec"]["containers"][0]
    assert worker["command"] == ["a2a-hub", "worker"]


def test_a_mistake_is_caught() -> None:
    """The check can fail: a misspelt field of a container is refused."""
    _, api = next((n, d) for n, d in documents() if n.endswith("Deployment/a2a-hub-api"))
    container = api["spec"]["template"]["spec"]["containers"][0]
    container["readynessProbe"] = container.pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(api, KUBERNETES, strict=True)
