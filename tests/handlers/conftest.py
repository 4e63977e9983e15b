"""Fixtures of the handler tests: a clean current directory."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current directory, so no attractor.toml or run directory leaks in or out."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work
