"""Fixtures of the boundary tests: a workspace, and a sandbox that must be there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from attractor.proc.sandbox_env import sandbox_problem


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current directory, so no attractor.toml or run directory leaks in or out.

    Its runs keep no workspace: these tests watch what steps write in the workdir
    around stops and run with a PATH that may lack git (tests/workspace covers
    the workspace). A test that writes its own attractor.toml replaces this one.
    """
    monkeypatch.chdir(tmp_path)
    (tmp_path / "attractor.toml").write_text('workspace = "none"\n')
    return tmp_path


needs_bwrap = pytest.mark.skipif(
    sandbox_problem() is not None,
    reason=f"no bubblewrap sandbox here ({sandbox_problem()}): apt-get install bubblewrap",
)


needs_socat = pytest.mark.skipif(
    shutil.which("socat") is None,
    reason="the network allow-list bridges the sandbox to its proxy with socat: "
    "apt-get install socat",
)
