"""Child runs share their parent's workspace (item 7); faults leave the checkpoints sound."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.runkit import (
    finish,
    invoke,
    kill_all,
    only_run_dir,
    pids_with,
    read_json,
    sleep_mark,
    spawn,
    wait_for,
    write,
)
from tests.workspace.gitkit import git, make_repo

CHILD = """digraph child {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    first  [shape=parallelogram, tool_command="cat parent.txt > seen-by-child.txt"]
    second [shape=parallelogram, tool_command="echo child >> log.txt"]
    start -> first -> second -> exit
}
"""
PARENT = """digraph parent {
    start  [shape=Mdiamond]
    exit   [shape=Msquare]
    before [shape=parallelogram, tool_command="echo from-parent > parent.txt"]
    manage [shape=house, stack.child_dotfile="child.dot", manager.poll_interval="50ms"]
    after  [shape=parallelogram, tool_command="echo parent >> log.txt"]
    start -> before -> manage -> after -> exit
}
"""


def _run(tmp_path: Path, repo: Path, pipeline: str, *extra: str):  # type: ignore[no-untyped-def]
    dot = write(tmp_path / "p.dot", pipeline)
    logs = tmp_path / "logs"
    args = ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r"), *extra]
    return invoke(args), logs


def test_a_child_run_works_from_the_parents_commit_and_commits_on_its_branch(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    write(tmp_path / "child.dot", CHILD)
    result, logs = _run(tmp_path, repo, PARENT)

    assert result.exit_code == 0, result.output + result.stderr
    run_dir = only_run_dir(logs)
    record = read_json(run_dir / "manifest.json")["workspace"]
    work_tree = Path(record["work_tree"])
    # The child saw the parent's file: it started from the parent's current commit.
    assert (work_tree / "seen-by-child.txt").read_text() == "from-parent\n"
    assert (work_tree / "log.txt").read_text() == "child\nparent\n"
    nodes = git(repo, "log", "--format=%(trailers:key=Attractor-Node,valueonly)", record["branch"])
    assert [n for n in nodes.split() if n][:4] == ["after", "second", "first", "before"]
    child = read_json(run_dir / "children" / "manage" / "manifest.json")["workspace"]
    assert child["branch"] == record["branch"] and child["shared"] is True
    assert git(repo, "branch", "--list", "attractor/*").count("attractor/") == 1


def test_a_lock_file_left_by_another_git_fails_the_run_clearly_and_resume_works_after(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a > a.txt"]
      b [shape=parallelogram, tool_command="echo b > b.txt"]
      start -> a -> b -> done
    }
    """
    # Another process holds the run's branch ref lock while b's checkpoint wants it.
    # (once: the lock stays until the test removes it, as a user would).
    once = tmp_path / "locked-once"
    holder = pipeline.replace(
        'b [shape=parallelogram, tool_command="echo b > b.txt"]',
        f'b [shape=parallelogram, sandbox=none, tool_command="echo b > b.txt && '
        f"([ -f {once} ] || (touch {once} && "
        f'touch $(git rev-parse --git-common-dir)/refs/heads/attractor/r.lock))"]',
    )
    result, logs = _run(tmp_path, repo, holder)

    assert result.exit_code == 1, result.output + result.stderr
    line = result.output.strip().splitlines()[-1]
    assert "another git process holds the lock" in line and "resume the run" in line
    run_dir = only_run_dir(logs)
    branch = read_json(run_dir / "manifest.json")["workspace"]["branch"]
    assert git(repo, "show", f"{branch}:a.txt") == "a\n"  # a's checkpoint survived
    git(repo, "fsck", "--no-dangling")
    lock = Path(git(repo, "rev-parse", "--git-common-dir").strip())
    (repo / lock / "refs" / "heads" / "attractor" / "r.lock").unlink()  # the cause is gone

    again = invoke(["resume", str(run_dir), "--retry-failed"])

    assert again.exit_code == 0, again.output + again.stderr
    assert git(repo, "show", f"{branch}:b.txt") == "b\n"


def test_a_stage_that_deletes_dot_git_or_rewrites_history_keeps_the_checkpoints(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a > a.txt"]
      wreck [shape=parallelogram, sandbox=none,
             tool_command="git reset -q --hard HEAD~1 && rm -f .git && echo w > w.txt"]
      c [shape=parallelogram, tool_command="git status --short > status.txt; echo c > c.txt"]
      start -> a -> wreck -> c -> done
    }
    """
    result, logs = _run(tmp_path, repo, pipeline)

    assert result.exit_code == 0, result.output + result.stderr
    run_dir = only_run_dir(logs)
    record = read_json(run_dir / "manifest.json")["workspace"]
    work_tree = Path(record["work_tree"])
    assert (work_tree / ".git").is_file()  # written again for the next stages
    branch = record["branch"]
    names = git(repo, "ls-tree", "--name-only", branch).split()
    assert {"c.txt", "w.txt"} <= set(names)
    # a's checkpoint, which wreck reset away, is kept (on the branch's history or a lost ref).
    rows = [r for r in (run_dir / "results.jsonl").read_text().splitlines() if '"a"' in r]
    a_commit = read_json_line(rows[0])["commit"]
    assert git(repo, "cat-file", "-t", a_commit).strip() == "commit"
    kept = git(repo, "for-each-ref", "--format=%(objectname)", f"refs/attractor/{run_dir.name}/")
    assert a_commit in kept.split() or a_commit in git(repo, "rev-list", branch).split()
    assert "a stage moved the run's branch" in result.stderr or "deleted" in result.stderr
    git(repo, "fsck", "--no-dangling")
    assert os.path.isdir(repo / ".git")  # the user's repository is whole


def read_json_line(line: str) -> dict[str, object]:
    import json

    data: dict[str, object] = json.loads(line)
    return data


#: The parent's node that runs ``child.dot``: a sub-pipeline, or a manager's child run.
RUNS_THE_CHILD = {
    "sub-pipeline": 'inner [shape=folder, dot_file="child.dot"]',
    "manager": 'inner [shape=house, stack.child_dotfile="child.dot", manager.poll_interval="50ms"]',
}


@pytest.mark.parametrize("kind", sorted(RUNS_THE_CHILD))
def test_a_child_stage_killed_half_way_starts_again_from_its_files_as_they_were(
    tmp_path: Path, kind: str
) -> None:
    """SIGKILL while a child run's stage is half done: the resume puts that stage's
    files back (they are not edits made by hand) and runs it once more from there."""
    repo = make_repo(tmp_path / "repo")
    go = tmp_path / "go"  # outside the workdir (and the sandbox): not one of the step's files
    with sleep_mark(29) as mark:
        hold = f"echo c1 >> child.txt; [ -f {go} ] || sleep {mark}"
        write(tmp_path / "child.dot", f"""digraph child {{
            start [shape=Mdiamond]; exit [shape=Msquare]
            c1 [shape=parallelogram, tool_command="{hold}"]
            start -> c1 -> exit
        }}""")  # fmt: skip
        write(tmp_path / "p.dot", f"""digraph parent {{
            start [shape=Mdiamond]; exit [shape=Msquare]
            {RUNS_THE_CHILD[kind]}
            start -> inner -> exit
        }}""")  # fmt: skip
        run_dir = tmp_path / "logs" / "r"
        args = ["run", str(tmp_path / "p.dot"), "--workdir", str(repo), "--logs-dir", str(run_dir)]
        args += ["--sandbox", "none"]  # the step reads the go file under the host's /tmp
        proc = spawn(args, tmp_path)
        try:
            half = repo / ".git" / "attractor" / "worktrees" / "r" / "child.txt"
            wait_for(lambda: half.exists() and bool(pids_with(mark)), "the stage half done")
        finally:
            proc.kill()
            kill_all(mark)  # the orphaned command (it holds the process's output open)
            finish(proc)
        go.touch()
        code, out, err = finish(spawn(["resume", str(run_dir)], tmp_path))
    assert code == 0, out + err
    assert "saved the edits made by hand" not in err
    assert "the interrupted stage inner/c1 starts again from the files" in err, err
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "child.txt").read_text() == "c1\n"  # once: not on top of its half
