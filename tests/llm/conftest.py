"""Restores the process-wide LLM defaults after each test (the ``embedded`` marker of the
real-model tests is registered in pyproject.toml)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from a2a_hub.llm import default_settings, set_default_settings
from a2a_hub.settings import LLMSettings


@pytest.fixture(autouse=True)
def _keep_llm_defaults() -> Iterator[None]:
    """Each test starts from the package's own defaults, whatever a hub built earlier in
    this worker set (every Hub sets them: on xdist a test of another module may have run
    just before), and leaves them as found."""
    saved = default_settings()
    set_default_settings(LLMSettings())
    yield
    set_default_settings(saved)
