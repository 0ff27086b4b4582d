"""Registry commands never succeed silently without effect (issue 30, item 3).

``a2a-hub keys …`` / ``agents …`` name the registry they used; the default SQLite registry
is not created from another directory; a write that no hub started with the same settings
would read says so and what to do; a hub with a registry picks up what the commands wrote.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.cli import MODULE, env, serving

#: Processes start slowly on a busy machine: never a failure for that.
pytestmark = pytest.mark.timeout(900)


def a2a_hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MODULE, *args], cwd=cwd, env=env(), capture_output=True, text=True, timeout=60
    )


def test_keys_create_from_another_directory_creates_no_database(tmp_path: Path) -> None:
    out = a2a_hub("keys", "create", "--all-agents", "--scope", "admin", cwd=tmp_path)
    assert out.returncode == 1, out
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "no registry at" in lines[0], out.stderr
    assert str(tmp_path / ".a2a-hub") in lines[0] and "--registry" in lines[0]
    assert not (tmp_path / ".a2a-hub").exists()


def test_a_write_names_its_registry_and_says_when_no_hub_reads_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/hub.db"
    made = a2a_hub("keys", "create", "--all-agents", "--registry", url, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert f"registry: {url} (file {tmp_path}/hub.db)" in made.stderr
    assert "does not read" not in made.stderr  # named on purpose: the hub is told too

    # the settings of a hub without auth: its store's database is the registry, unread
    (tmp_path / "open.toml").write_text(f'store = "{url}"\n')
    made = a2a_hub("keys", "create", "--all-agents", "--scope", "admin", "-c", "open.toml",
                   cwd=tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert f"registry: {url}" in made.stderr
    assert "does not read this registry" in made.stderr and "--auth-require-keys" in made.stderr
    listed = a2a_hub("keys", "list", "-c", "open.toml", cwd=tmp_path)
    assert listed.returncode == 0 and f"registry: {url}" in listed.stderr
    assert "does not read" not in listed.stderr  # only writes warn

    # with auth in the settings, the note goes: such a hub reads the registry
    (tmp_path / "auth.toml").write_text(f'store = "{url}"\n[auth]\nrequire_keys = true\n')
    added = a2a_hub("agents", "add", "later=echo", "--config", "auth.toml", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert "agent later registered" in added.stderr and f"registry: {url}" in added.stderr
    assert "does not read" not in added.stderr


def test_a_hub_with_the_registry_picks_up_keys_and_agents(tmp_path: Path) -> None:
    """What the README promises: the admin key opens the admin API of a hub on that registry,
    and an agent added while it runs is served, without a restart."""
    url = f"sqlite:///{tmp_path}/reg.db"
    with serving(MODULE, "--agent", "echo", "--registry", url, cwd=tmp_path) as (base, _):
        made = a2a_hub("keys", "create", "--all-agents", "--scope", "admin", "--registry", url,
                       cwd=tmp_path)  # fmt: skip
        assert made.returncode == 0, made.stderr
        assert "does not read" not in made.stderr
        key = made.stdout.strip()
        r = httpx.get(f"{base}/admin/v1/agents", headers={"X-API-Key": key}, timeout=30)
        assert r.status_code == 200, r.text
        added = a2a_hub("agents", "add", "later=echo", "--registry", url, cwd=tmp_path)
        assert added.returncode == 0, added.stderr
        card = f"{base}/a2a/later/.well-known/agent-card.json"
        deadline = time.monotonic() + 30  # the follower polls every 0.5 s
        while httpx.get(card, timeout=30).status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert httpx.get(card, timeout=30).status_code == 200
