"""Fixtures of the notification tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current directory, so no attractor.toml or run directory leaks in or out."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
