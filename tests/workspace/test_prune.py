"""``attractor runs --prune`` removes the worktrees and branches of deleted runs (item 5)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from attractor.dot.schema import DURATION_FORM
from tests.cli.runkit import finish, invoke, read_json, spawn, started_stages, wait_for, write
from tests.workspace.gitkit import age_run, git, make_repo

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


WRITES = """digraph writes {
  start [shape=Mdiamond]; done [shape=Msquare]
  edit [shape=parallelogram, tool_command="echo edited > notes.txt"]
  start -> edit -> done
}
"""
WAITS = """digraph waits {
  start [shape=Mdiamond]; done [shape=Msquare]
  work [shape=parallelogram, tool_command="while [ ! -f go ]; do sleep 0.05; done"]
  start -> work -> done
}
"""


def test_prune_older_than_deletes_old_ended_runs_with_their_workspaces_and_keeps_running_ones(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n", ".gitignore": ".attractor/\n"})
    runs = repo / ".attractor" / "runs"
    writes, waits = write(tmp_path / "w.dot", WRITES), write(tmp_path / "k.dot", WAITS)
    for name in ("old", "recent"):
        args = ["run", str(writes), "--workdir", str(repo), "--logs-dir", str(runs / name)]
        assert invoke(args).exit_code == 0
    going = spawn(["run", str(waits), "--workdir", str(repo), "--logs-dir", str(runs / "going")],
                  cwd=repo)  # fmt: skip
    try:
        log = runs / "going" / "events.jsonl"
        wait_for(lambda: log.exists() and "work" in started_stages(runs / "going"), "the step")
        age_run(runs / "old", 10)
        age_run(runs / "going", 10)

        result = invoke(["runs", "--root", str(repo), "--prune", "--older-than", "7d"])

        assert result.exit_code == 0, result.stderr
        assert "deleted run old (writes, success, ended " in result.output
        assert "kept run going: the run is still going; cancel it first" in result.output
        assert "removed the worktree and branches of old" in result.output
        assert "deleted 1 run(s) that ended more than 7d ago; 1 kept" in result.output
        assert not (runs / "old").exists() and (runs / "recent").is_dir()
        refs = set(git(repo, "for-each-ref", "--format=%(refname)").splitlines())
        assert "refs/heads/attractor/old" not in refs and "refs/heads/attractor/recent" in refs
        assert "worktrees/old" not in git(repo, "worktree", "list")
    finally:  # the step waits in the run's worktree
        tree = read_json(runs / "going" / "manifest.json")["workspace"]["work_tree"]
        (Path(tree) / "go").touch()
        assert finish(going)[0] == 0
    assert (runs / "going").is_dir()


def test_older_than_needs_prune_and_a_duration(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    alone = invoke(["runs", "--root", str(repo), "--older-than", "7d"])
    wrong = invoke(["runs", "--root", str(repo), "--prune", "--older-than", "soon"])
    assert alone.exit_code == 2 and "--older-than goes with --prune" in alone.stderr
    assert wrong.exit_code == 2
    assert wrong.stderr.strip() == "error: --older-than soon: expected " + DURATION_FORM
