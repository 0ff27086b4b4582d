"""Registers the ``embedded`` marker used by the real-model tests."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "embedded: loads the real SmolLM2 model with xllamacpp (skipped when not installed); "
        "deselect with -m 'not embedded'",
    )
