"""``attractor runs --prune`` removes the worktrees and branches of deleted runs (item 5)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.runkit import invoke, read_json, write
from tests.workspace.gitkit import git, make_repo

FAN = """digraph fan {
  start [shape=Mdiamond]; done [shape=Msquare]
  split [shape=component]
  l [shape=parallelogram, tool_command="echo l > l.txt"]
  r [shape=parallelogram, tool_command="echo r > r.txt"]
  join [shape=tripleoctagon]
  a [shape=parallelogram, tool_command="echo a > a.txt && false"]
  start -> split
  split -> l
  split -> r
  l -> join
  r -> join
  join -> a -> done
}
"""


def test_prune_removes_only_what_deleted_runs_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    dot = write(tmp_path / "p.dot", FAN)
    for name in ("gone", "kept"):
        args = ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(tmp_path / name)]
        assert invoke(args).exit_code == 1  # a fails: the run keeps its worktree
    gone_tree = Path(read_json(tmp_path / "gone" / "manifest.json")["workspace"]["work_tree"])
    assert invoke(["resume", str(tmp_path / "gone"), "--retry-failed"]).exit_code == 1  # lost ref
    shutil.rmtree(tmp_path / "gone")
    monkeypatch.chdir(repo)

    result = invoke(["runs", "--prune"])

    assert result.exit_code == 0, result.stderr
    assert "removed the worktree and branches of gone" in result.output
    assert "pruned 1 run(s); 1 kept" in result.output
    refs = git(repo, "for-each-ref", "--format=%(refname)")
    assert "attractor/gone" not in refs and "refs/attractor/gone/" not in refs
    assert "refs/heads/attractor/kept" in refs and "refs/heads/attractor/kept--l" in refs
    assert not gone_tree.exists()
    worktrees = git(repo, "worktree", "list")
    assert "worktrees/gone" not in worktrees and "worktrees/kept" in worktrees
    assert (
        invoke(["runs", "--prune"]).output.strip()
        == "pruned 0 run(s); 1 kept (run directory exists)"
    )


def test_prune_refuses_the_listing_filters_it_would_not_honour(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    for extra in (["--status", "fail"], ["--pipeline", "fan"], ["--json"]):
        result = invoke(["runs", "--root", str(tmp_path / "repo"), "--prune", *extra])
        assert result.exit_code == 2, extra
        assert result.stderr.startswith("error: --prune takes no --status, --pipeline or --json")
        assert result.stdout == ""
