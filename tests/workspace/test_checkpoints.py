"""A checkpoint commit after every stage that changed files (item 2), on real repositories."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import attractor
from attractor.events import Event, StageRetrying, StageStarted
from tests.cli.runkit import invoke, only_run_dir, read_json, write
from tests.workspace.gitkit import git, git_commands, make_repo, trailers

STAGES = """digraph p {
  start [shape=Mdiamond]; done [shape=Msquare]
  impl [shape=parallelogram, tool_command="echo one > a.txt && mkdir -p build && echo x > build/o"]
  look [shape=parallelogram, tool_command="cat a.txt"]
  fix [shape=parallelogram, tool_command="echo two >> a.txt && rm README.md"]
  start -> impl -> look -> fix -> done
}
"""


def _run(repo: Path, tmp_path: Path, pipeline: str = STAGES, *extra: str) -> Path:
    dot = write(tmp_path / "p.dot", pipeline)
    logs = tmp_path / "logs"
    result = invoke(
        ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r"), *extra]
    )
    assert result.exit_code == 0, result.output + result.stderr
    return only_run_dir(logs)


def _rows(run_dir: Path) -> dict[str, dict[str, object]]:
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    return {row["node"]: row for row in map(json.loads, lines)}


def test_each_stage_that_changed_files_is_one_commit_with_trailers(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n", ".gitignore": "build/\n"})
    run_dir = _run(repo, tmp_path)
    branch = f"attractor/{run_dir.name}"

    subjects = git(repo, "log", "--format=%s", branch).splitlines()
    assert subjects[:2] == [
        "attractor: fix (visit 1, attempt 1) success",
        "attractor: impl (visit 1, attempt 1) success",
    ]  # look changed nothing: no commit of its own
    rows = _rows(run_dir)
    impl, look, fix = (str(rows[n]["commit"]) for n in ("impl", "look", "fix"))
    assert look == impl and fix != impl  # an unchanged stage records the same SHA
    assert trailers(repo, fix) == {
        "Attractor-Run": run_dir.name,
        "Attractor-Node": "fix",
        "Attractor-Visit": "1",
        "Attractor-Attempt": "1",
        "Attractor-Status": "success",
    }
    assert git(repo, "log", "--format=%H", "--grep", "Attractor-Node: impl", branch).split() == [
        impl
    ]
    assert rows["fix"]["files"] == 2 and rows["look"]["files"] == 0
    # The same SHA in the stage's status.json and in its journal line.
    status = read_json(run_dir / "fix" / "status.json")
    assert status["commit"] == fix and sorted(status["files_changed"]) == ["README.md", "a.txt"]
    journal = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    fix_line = next(r for r in journal if ["fix", 1] in r.get("done", []))
    assert fix_line["commit"] == fix
    # Ignored files stay out of the checkpoints.
    assert "build" not in git(repo, "ls-tree", "--name-only", fix).split()
    assert git(repo, "show", f"{fix}:a.txt") == "one\ntwo\n"


def test_a_very_large_file_is_refused_with_a_warning_not_committed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n", "data.bin": "tiny\n"})
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      big [shape=parallelogram,
           tool_command="truncate -s 60M huge.bin data.bin && echo small > small.txt"]
      start -> big -> done
    }
    """
    dot = write(tmp_path / "p.dot", pipeline)
    logs = tmp_path / "logs"
    result = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r")])
    assert result.exit_code == 0, result.stderr
    run_dir = only_run_dir(logs)
    commit = str(_rows(run_dir)["big"]["commit"])
    names = git(repo, "ls-tree", "--name-only", commit).split()
    assert "small.txt" in names and "huge.bin" not in names
    assert git(repo, "show", f"{commit}:data.bin") == "tiny\n"  # kept as the parent had it
    warning = [line for line in result.stderr.splitlines() if "huge.bin" in line]
    assert warning and "larger than 50 MB" in warning[0] and "data.bin" in warning[0]
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert os.path.getsize(work_tree / "huge.bin") == 60 * 1024 * 1024  # left in place
    # Never read into the repository: git would hash and store each whole (minutes for
    # a sparse file of gigabytes, past the node's time limit, and its bytes on disk).
    for name in ("huge.bin", "data.bin"):
        blob = git(work_tree, "hash-object", "--", name).strip()
        assert git(repo, "cat-file", "-t", blob, check=False) == "", name


def test_workspace_none_writes_no_commit_and_says_so(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    dot = write(tmp_path / "p.dot", STAGES)
    logs = tmp_path / "logs"
    result = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r"),
                     "--workspace", "none"])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "workspace: none" in result.output
    assert git(repo, "branch", "--list", "attractor/*") == ""
    assert "commit" not in _rows(only_run_dir(logs))["impl"]
    assert (repo / "a.txt").read_text() == "one\ntwo\n"  # today's behaviour: in place


async def _written_outside(
    tmp_path: Path, pipeline: str, when: Callable[[Event], bool]
) -> tuple[Path, Path]:
    """Run ``pipeline`` in a new repository; at the first event ``when`` picks someone
    else writes ``outside.txt`` into the run's worktree. The repository and the run dir."""
    repo = make_repo(tmp_path / "repo")
    dot = write(tmp_path / "p.dot", pipeline)
    run_dir = tmp_path / "logs" / "r"

    def outside(event: Event) -> None:
        work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
        if when(event) and not (work_tree / "outside.txt").exists():
            (work_tree / "outside.txt").write_text("not a stage's\n")

    flags = {"workdir": str(repo), "logs_dir": str(run_dir), "sandbox": "none"}
    result = await attractor.run(dot, flags=flags, observers=[outside])
    assert result.status == "success", result.failure_reason
    return repo, run_dir


def _outside_commit(repo: Path, run_dir: Path, subjects: list[str]) -> str:
    """The run's branch begins with ``subjects`` (newest first), the second an
    ``outside`` commit holding only ``outside.txt``: that commit."""
    branch = f"attractor/{run_dir.name}"
    assert git(repo, "log", "--format=%s", branch).splitlines()[:3] == subjects
    commit = git(repo, "rev-parse", f"{branch}~1").strip()
    assert trailers(repo, commit)["Attractor-Kind"] == "outside"
    assert git(repo, "show", "--name-only", "--format=", commit).split() == ["outside.txt"]
    return commit


@pytest.mark.anyio
async def test_files_changed_between_stages_get_a_checkpoint_of_their_own(
    tmp_path: Path,
) -> None:
    # While the simulated LLM stage runs (it checkpoints nothing), someone else
    # writes into the run's worktree: neither a's nor b's change.
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a > a.txt"]
      think [shape=box, prompt="think"]
      b [shape=parallelogram, tool_command="echo b > b.txt"]
      start -> a -> think -> b -> done
    }"""

    def think(event: Event) -> bool:
        return isinstance(event, StageStarted) and event.name == "think"

    repo, run_dir = await _written_outside(tmp_path, pipeline, think)
    outside = _outside_commit(
        repo,
        run_dir,
        [
            "attractor: b (visit 1, attempt 1) success",
            "attractor: changes made outside a stage, before b",
            "attractor: a (visit 1, attempt 1) success",
        ],
    )
    assert trailers(repo, outside)["Attractor-Node"] == "b"
    status = read_json(run_dir / "b" / "status.json")
    assert status["files_changed"] == ["b.txt"]  # b's own change only
    assert status["start_commit"] == outside


def test_a_stage_right_after_a_checkpointed_one_does_not_look_for_outside_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Between two command stages only the engine runs: the second one's look for
    # changes made outside a stage (git add, write-tree) would find nothing.
    repo = make_repo(tmp_path / "repo")
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a > a.txt"]
      b [shape=parallelogram, tool_command="echo b > b.txt"]
      c [shape=parallelogram, tool_command="echo c > c.txt"]
      start -> a -> b -> c -> done
    }
    """
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    run_dir = _run(repo, tmp_path, pipeline)

    trees = [argv for argv in git_commands(trace) if argv[:1] == ["write-tree"]]
    assert len(trees) == 4  # the run's first commit, then one per stage (it was 7)
    branch = f"attractor/{run_dir.name}"
    assert git(repo, "log", "--format=%s", branch).splitlines()[:3] == [
        "attractor: c (visit 1, attempt 1) success",
        "attractor: b (visit 1, attempt 1) success",
        "attractor: a (visit 1, attempt 1) success",
    ]
    rows = _rows(run_dir)
    for node, before in (("b", "a"), ("c", "b")):
        status = read_json(run_dir / node / "status.json")
        assert status["start_commit"] == rows[before]["commit"]
        assert status["files_changed"] == [f"{node}.txt"]


@pytest.mark.anyio
async def test_files_changed_while_a_retry_waits_get_a_checkpoint_of_their_own(
    tmp_path: Path,
) -> None:
    # The first attempt failed and was checkpointed; before the second one starts,
    # someone else writes into the run's worktree.
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      flaky [shape=parallelogram, max_retries=1,
             tool_command="echo try >> tries.txt && test $(wc -l < tries.txt) -gt 1"]
      start -> flaky -> done
    }"""

    def waits(event: Event) -> bool:
        return isinstance(event, StageRetrying)

    repo, run_dir = await _written_outside(tmp_path, pipeline, waits)
    _outside_commit(
        repo,
        run_dir,
        [
            "attractor: flaky (visit 1, attempt 2) success",
            "attractor: changes made outside a stage, before flaky",
            "attractor: flaky (visit 1, attempt 1) fail",
        ],
    )
    assert read_json(run_dir / "flaky" / "status.json")["files_changed"] == ["tries.txt"]


#: git, but its message about ignored paths worded otherwise (a git of another version).
REWORDING_GIT = """#!/bin/sh
case " $* " in
  *" add "*)
    err=$(mktemp)
    "{real}" "$@" 2>"$err"; code=$?
    sed 's/^The following paths are ignored by one of your .gitignore files:$/Ignored:/' "$err" >&2
    rm -f "$err"
    exit $code;;
esac
exec "{real}" "$@"
"""


@pytest.mark.parametrize("wording", ["known", "other"])
def test_a_stage_that_makes_git_ignore_the_run_folder_still_gets_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wording: str
) -> None:
    """The run folder (inside the workdir) is kept out of every commit by name; once a
    stage's .gitignore ignores it, git says so when asked to exclude it (exit 1):
    the checkpoint is made all the same, without the folder. A git that words it
    otherwise is asked which paths it ignores."""
    if wording == "other":
        import shutil
        import stat

        wrapper = tmp_path / "bin" / "git"
        wrapper.parent.mkdir()
        wrapper.write_text(REWORDING_GIT.format(real=shutil.which("git")))
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    plain = tmp_path / "plain"  # no repository: a snapshot workspace, its git directory
    plain.mkdir()  # in the run directory, the run directory in the workdir
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      before [shape=parallelogram, tool_command="echo one > a.txt"]
      ignore [shape=parallelogram,
              tool_command="printf 'runs/\\n' > .gitignore && echo two > a.txt"]
      after [shape=parallelogram, tool_command="echo three > b.txt"]
      start -> before -> ignore -> after -> done
    }
    """
    dot = write(tmp_path / "p.dot", pipeline)
    run_dir = plain / "runs" / "r"
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    result = invoke(["run", str(dot), "--workdir", str(plain), "--logs-dir", str(run_dir)])
    assert result.exit_code == 0, result.output + result.stderr
    asked = any("check-ignore" in argv for argv in git_commands(trace))
    assert asked is (wording == "other")  # git is asked only when its words are unknown

    rows = _rows(run_dir)
    assert [rows[n]["status"] for n in ("before", "ignore", "after")] == ["success"] * 3
    git_dir = run_dir / "workspace.git"
    branch = read_json(run_dir / "manifest.json")["workspace"]["branch"]
    tree = subprocess_git(git_dir, "ls-tree", "-r", "--name-only", branch).split()
    assert tree == [".gitignore", "a.txt", "b.txt"]
    assert subprocess_git(git_dir, "show", f"{branch}:a.txt") == "two\n"


def subprocess_git(git_dir: Path, *args: str) -> str:
    return git(git_dir, "--git-dir", str(git_dir), *args)
