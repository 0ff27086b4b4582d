"""Registers the ``embedded`` marker used by the real-model tests; restores the LLM defaults."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from a2a_hub.llm import default_settings, set_default_settings


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "embedded: loads the real SmolLM2 model with xllamacpp (skipped when not installed); "
        "deselect with -m 'not embedded'",
    )


@pytest.fixture(autouse=True)
def _keep_llm_defaults() -> Iterator[None]:
    """A test that sets the process-wide LLM settings (or builds a Hub) leaves them as found."""
    saved = default_settings()
    yield
    set_default_settings(saved)
