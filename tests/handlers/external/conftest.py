"""Fixtures of the agent-CLI tests: the fake CLIs (the clean current directory is
tests/handlers/conftest.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.handlers.external.agentkit import install_fakes


@pytest.fixture
def fakes(tmp_path: Path) -> Path:
    """A directory holding fake ``claude``, ``codex`` and ``gemini`` executables."""
    return install_fakes(tmp_path / "bin")
