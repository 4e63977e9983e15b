"""Worktrees made without ``git worktree add`` (workspace/worktrees.py), on real git."""

from __future__ import annotations

import os
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


def test_a_run_stopped_while_git_stages_the_checkout_leaves_no_worktree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worktree's admin folder is written while ``git add`` runs; cancelled there
    (Ctrl-C, a timeout), the run takes it away again."""
    import shutil
    import stat

    from attractor.proc.environment import LocalEnvironment
    from attractor.workspace.create import create
    from attractor.workspace.preflight import preflight

    repo = make_repo(tmp_path / "repo")
    (repo / "new.txt").write_text("uncommitted\n")
    started = tmp_path / "add-started"  # a pipe the wrapper writes to: an event to wait on
    os.mkfifo(started)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"  # git, but `git add` says so and then waits
    wrapper.write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do [ "$a" = add ] && echo add > {started} && exec sleep 60; done\n'
        f'exec {shutil.which("git")} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)

    async def main() -> None:
        plan = await preflight("worktree", "test", repo)
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
        run_dir = tmp_path / "runs" / "r"
        run_dir.mkdir(parents=True)
        reader = os.open(started, os.O_RDONLY | os.O_NONBLOCK)
        try:
            async with anyio.create_task_group() as tasks:
                boundary = lambda workdir, *_: LocalEnvironment(workdir)  # noqa: E731 (unused)
                tasks.start_soon(create, plan, run_dir, "r", boundary)
                with anyio.fail_after(30):
                    await anyio.wait_readable(reader)  # git add has started
                tasks.cancel_scope.cancel()
        finally:
            os.close(reader)

    anyio.run(main)
    common = repo / ".git"
    assert not any((common / "attractor" / "worktrees").glob("*"))
    assert not (common / "worktrees").exists() or not any((common / "worktrees").iterdir())
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
