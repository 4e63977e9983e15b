"""Worktrees made without ``git worktree add`` (workspace/worktrees.py), on real git."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from attractor.errors import WorkspaceError
from attractor.workspace.worktrees import add_worktree
from tests.workspace.gitkit import git, make_repo


def test_a_worktree_that_cannot_be_finished_leaves_nothing_locked_behind(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    common = repo / ".git"
    path = common / "attractor" / "worktrees" / "run"
    missing = "0" * 40  # no such commit: the reset that makes the worktree fails

    with pytest.raises(WorkspaceError):
        anyio.run(add_worktree, common, path, "attractor/run", missing, -1)

    assert not path.exists()
    assert not (common / "worktrees" / "run").exists()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert "attractor/run" not in git(repo, "branch", "--list")
    # The same worktree can be made afterwards, and git knows it as its own.
    head = git(repo, "rev-parse", "HEAD").strip()
    admin = anyio.run(add_worktree, common, path, "attractor/run", head, -1)
    assert admin == common / "worktrees" / "run" and not (admin / "locked").exists()
    listed = git(repo, "worktree", "list", "--porcelain")
    assert f"worktree {path}" in listed and "locked" not in listed
