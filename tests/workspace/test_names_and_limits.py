"""Branch names that never collide, files too large and nested repositories left out with a
word, and a restore that fails without leaving the files and branch out of step (real git)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from attractor.errors import WorkspaceError
from attractor.proc.environment import LocalEnvironment
from attractor.workspace.create import create
from attractor.workspace.git import failure
from attractor.workspace.preflight import preflight
from tests.cli.runkit import invoke, only_run_dir, read_json, write
from tests.workspace.gitkit import git, make_repo

ONE = """digraph p {
  start [shape=Mdiamond]; done [shape=Msquare]
  a [shape=parallelogram, tool_command="echo a > a.txt"]
  start -> a -> done
}
"""


def _branch(run_dir: Path) -> str:
    return str(read_json(run_dir / "manifest.json")["workspace"]["branch"])


def test_two_run_folders_of_one_name_get_branches_of_their_own(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    dot = write(tmp_path / "p.dot", ONE)
    first_dir, second_dir = tmp_path / "A" / "run", tmp_path / "B" / "run"

    first = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(first_dir)])
    second = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(second_dir)])

    assert first.exit_code == 0, first.stderr
    assert second.exit_code == 0, second.output + second.stderr
    assert _branch(first_dir) == "attractor/run"
    assert _branch(second_dir) == "attractor/run-2"
    assert "this run's branch is attractor/run-2" in second.stderr
    assert "branch attractor/run-2:" in second.output  # the summary names the real one
    assert git(repo, "show", "attractor/run-2:a.txt") == "a\n"
    # Each resumes and forks on its own branch.
    fork = invoke(["fork", str(second_dir), "--from", "a", "--logs-dir", str(tmp_path / "C/run")])
    assert fork.exit_code == 0, fork.output + fork.stderr
    assert _branch(tmp_path / "C" / "run") == "attractor/run-3"


def test_a_git_failure_names_the_command_not_its_options() -> None:
    error = failure(("-c", "core.hooksPath=/dev/null", "worktree", "add", "x"), "fatal: no")
    assert str(error).startswith("git worktree add failed: fatal: no")


def test_a_large_untracked_file_stays_out_of_the_start_commit_with_a_warning(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": ".attractor/\n"})
    with open(repo / "huge.bin", "wb") as big:
        big.truncate(60 * 1024 * 1024)
    (repo / "small.txt").write_text("small\n")
    dot = write(tmp_path / "p.dot", ONE)
    logs = tmp_path / "logs"

    result = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r")])

    assert result.exit_code == 0, result.output + result.stderr
    run_dir = only_run_dir(logs)
    base = read_json(run_dir / "manifest.json")["workspace"]["base"]
    names = git(repo, "ls-tree", "--name-only", base).split()
    assert "small.txt" in names and "huge.bin" not in names
    warning = [line for line in result.stderr.splitlines() if "huge.bin" in line]
    assert warning and "larger than 50 MB" in warning[0] and "first commit" in warning[0]
    assert os.path.getsize(repo / "huge.bin") == 60 * 1024 * 1024  # the user's file untouched


def test_a_nested_repository_is_left_out_of_the_checkpoints_with_a_warning(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      nest [shape=parallelogram, sandbox=none, tool_command="git init -q empty && echo e > empty/e.txt && git init -q sub && echo s > sub/s.txt && git -C sub add s.txt && git -C sub -c user.name=t -c user.email=t@t commit -qm s && echo top > top.txt"]
      after [shape=parallelogram, tool_command="echo more > sub/more.txt && echo after > after.txt"]
      start -> nest -> after -> done
    }
    """  # noqa: E501
    dot = write(tmp_path / "p.dot", pipeline)
    logs = tmp_path / "logs"

    result = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r")])

    assert result.exit_code == 0, result.output + result.stderr  # no commit refused the run
    run_dir = only_run_dir(logs)
    branch = _branch(run_dir)
    tree = git(repo, "ls-tree", "-r", branch)
    assert "top.txt" in tree and "after.txt" in tree
    assert "160000" not in tree and "sub" not in tree and "empty" not in tree
    for name in ("sub", "empty"):
        said = [line for line in result.stderr.splitlines() if line.startswith(f"warning: {name} ")]
        assert len(said) == 1, result.stderr  # once, not at every checkpoint
        assert "git repository of its own" in said[0] and "files are not in" in said[0]


def test_a_snapshot_run_beside_a_nested_repository_runs(tmp_path: Path) -> None:
    """A folder that is no repository but holds one (a clone among other files):
    the snapshot's first commit has no parent, and the nested repository is left
    out of it as from any other checkpoint, with the same warning."""
    work = tmp_path / "work"
    make_repo(work / "clone", {"f.txt": "f\n"})
    (work / "notes.txt").write_text("notes\n")
    dot = write(work / "p.dot", ONE)
    logs = tmp_path / "logs"

    result = invoke(["run", str(dot), "--workdir", str(work), "--logs-dir", str(logs / "r")])

    assert result.exit_code == 0, result.output + result.stderr
    run_dir = only_run_dir(logs)
    assert read_json(run_dir / "manifest.json")["workspace"]["mode"] == "snapshot"
    gitdir = ["--git-dir", str(run_dir / "workspace.git")]
    tree = git(work, *gitdir, "ls-tree", "-r", "HEAD")
    assert "notes.txt" in tree and "a.txt" in tree
    assert "160000" not in tree and "clone" not in tree
    said = [line for line in result.stderr.splitlines() if line.startswith("warning: clone ")]
    assert len(said) == 1, result.stderr
    assert not (work / ".git").exists()


async def _workspace(tmp_path: Path, repo: Path):  # type: ignore[no-untyped-def]
    plan = await preflight(None, "test", repo)
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    # No workspace_setup here: the boundary it would run in is the plain local one.
    return await create(plan, run_dir, "r", lambda workdir, *_: LocalEnvironment(workdir))


@pytest.mark.anyio
async def test_a_restore_that_fails_leaves_files_and_branch_as_they_were(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"f.txt": "one\n"})
    workspace = await _workspace(tmp_path, repo)
    start = workspace.head
    (workspace.work_tree / "f.txt").write_text("two\n")
    second = (await workspace.checkpoint("second", {})).commit
    common = Path(git(repo, "rev-parse", "--git-common-dir").strip())
    lock = repo / common / "refs" / "heads" / "attractor" / "r.lock"
    lock.write_text("")  # left by a git that was killed

    with pytest.raises(WorkspaceError) as failed:
        await workspace.restore(start, "test")

    assert "another git process holds the lock" in str(failed.value)
    assert "\n" not in str(failed.value)
    assert (workspace.work_tree / "f.txt").read_text() == "two\n"  # files not moved
    assert git(repo, "rev-parse", workspace.branch).strip() == second  # nor the branch
    assert not workspace.was_moving()
    assert workspace.clear_stale_locks() == ["r.lock"]

    await workspace.restore(start, "test")

    assert (workspace.work_tree / "f.txt").read_text() == "one\n"
    assert git(repo, "rev-parse", workspace.branch).strip() == start


def _finished_a_then_b(tmp_path: Path, files: dict[str, str] | None = None) -> tuple[Path, Path]:
    """A finished run of stages a and b, each appending its name to f.txt, in a new
    repository (holding ``files``): the repository and the run directory."""
    repo = make_repo(tmp_path / "repo", files)
    dot = write(
        tmp_path / "p.dot",
        """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a >> f.txt"]
      b [shape=parallelogram, tool_command="echo b >> f.txt"]
      start -> a -> b -> done
    }""",
    )
    run_dir = tmp_path / "logs" / "r"
    ran = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(run_dir)])
    assert ran.exit_code == 0, ran.stderr
    return repo, run_dir


def test_a_restore_cut_short_is_not_taken_for_edits_made_by_hand(tmp_path: Path) -> None:
    repo, run_dir = _finished_a_then_b(tmp_path, {"f.txt": "one\n"})
    record = read_json(run_dir / "manifest.json")["workspace"]
    work_tree = Path(record["work_tree"])
    # A rewind to b killed after the branch moved, before the files did: the files are
    # still the later ones, which are no edits made by hand.
    rows = map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())
    a_commit = next(str(row["commit"]) for row in rows if row["node"] == "a")
    git(repo, "update-ref", f"refs/heads/{record['branch']}", a_commit)
    moving = Path(record["git_dir"]) / "attractor-moving.json"
    moving.write_text(json.dumps({"to": a_commit}))

    result = invoke(["resume", str(run_dir), "--from", "b"])

    assert result.exit_code == 0, result.output + result.stderr
    assert "saved the edits made by hand" not in result.stderr
    assert "a restore or merge of the files was cut short" in result.stderr
    assert (work_tree / "f.txt").read_text() == "one\na\nb\n"  # not b twice
    assert not moving.exists()


def test_a_stale_ref_lock_left_by_a_kill_is_cleared_on_resume(tmp_path: Path) -> None:
    repo, run_dir = _finished_a_then_b(tmp_path)
    common = repo / git(repo, "rev-parse", "--git-common-dir").strip()
    (common / "refs" / "heads" / "attractor" / "r.lock").write_text("")

    result = invoke(["resume", str(run_dir), "--from", "b"])

    assert result.exit_code == 0, result.output + result.stderr
    assert "removed r.lock" in result.stderr
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "f.txt").read_text() == "a\nb\n"
