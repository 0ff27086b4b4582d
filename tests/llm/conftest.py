"""Restores the process-wide LLM defaults after each test (the ``embedded`` marker of the
real-model tests is registered in pyproject.toml)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from a2a_hub.llm import default_settings, set_default_settings


@pytest.fixture(autouse=True)
def _keep_llm_defaults() -> Iterator[None]:
    """A test that sets the process-wide LLM settings (or builds a Hub) leaves them as found."""
    saved = default_settings()
    yield
    set_default_settings(saved)
