"""Fixtures of the store contract suite: every test that takes ``store`` runs once per
backend of :data:`tests.support.stores.BACKENDS`.  Backends that need a server are skipped
with the reason when it (or its driver) is missing, except when ``CI=true``: then they fail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from a2a_hub.protocol.errors import StoreUnavailableError
from a2a_hub.stores import Store
from tests.support.stores import BACKENDS, Backend, StoreHarness, missing_service, unavailable


def _unusable(backend: Backend, reason: str) -> None:
    unavailable[backend.name] = reason
    missing_service(f"{backend.name} store unavailable: {reason}")


@pytest.fixture(params=BACKENDS, ids=[b.name for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> Backend:
    """The backend under test."""
    result: Backend = request.param
    return result


@pytest.fixture
async def harness(backend: Backend, tmp_path: Path) -> AsyncIterator[StoreHarness]:
    """Opens stores of the backend under test; skips (or fails in CI) if it is missing."""
    if backend.name in unavailable:
        _unusable(backend, unavailable[backend.name])
    h = StoreHarness(backend, backend.url(tmp_path))
    try:
        h.store = await h.open()
    except (ImportError, StoreUnavailableError, OSError) as exc:
        _unusable(backend, f"{type(exc).__name__}: {exc}")
    try:
        yield h
        await h.cleanup()
    finally:
        await h.aclose()


@pytest.fixture
async def store(harness: StoreHarness) -> Store:
    """An opened store of the backend under test (closed by the harness)."""
    return harness.store


@pytest.fixture
def agent_id(harness: StoreHarness) -> str:
    """A fresh agent id for this test."""
    return harness.new_agent_id()
