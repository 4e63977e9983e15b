"""Fixtures of the agent-CLI tests: a clean current directory and the fake CLIs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.handlers.external.agentkit import install_fakes


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current directory, so no attractor.toml or run directory leaks in or out."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def fakes(tmp_path: Path) -> Path:
    """A directory holding fake ``claude``, ``codex`` and ``gemini`` executables."""
    return install_fakes(tmp_path / "bin")
