"""Every way of continuing a run restores its files first (item 3), with real git and kill -9."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import (
    events,
    finish,
    invoke,
    kill_all,
    only_run_dir,
    read_json,
    spawn,
    wait_for,
    write,
)
from tests.workspace.gitkit import git, make_repo

#: The flag files live in the test's tmp folder, which a sandbox hides (its own /tmp).
NO_SANDBOX = ("--sandbox", "none")


@pytest.fixture
def mark() -> Iterator[str]:
    word = f"31.{uuid.uuid4().int % 10**9:09d}"
    yield word
    kill_all(word)


def _pipeline(flags: Path, mark: str) -> str:
    """a writes a.txt; b fails if it finds its own earlier half-done file, then half-writes,
    waits (until ``flags/go`` exists) and finishes; c appends."""
    b = (
        f"[ ! -f half.txt ] || exit 7; echo half > half.txt; "
        f"if [ ! -f {flags}/go ]; then touch {flags}/started; sleep {mark}; fi; "
        "echo full > b.txt"
    )
    return f"""digraph p {{
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a >> a.txt"]
      b [shape=parallelogram, tool_command="{b}"]
      c [shape=parallelogram, tool_command="echo c >> a.txt"]
      start -> a -> b -> c -> done
    }}
    """


def _stages(run_dir: Path) -> list[str]:
    return [e["name"] for e in events(run_dir) if e["type"] == "stage_started"]


def test_resume_after_kill_9_starts_the_stage_again_from_where_it_began(
    tmp_path: Path, mark: str
) -> None:
    repo = make_repo(tmp_path / "repo")
    flags = tmp_path / "flags"
    flags.mkdir()
    dot = write(tmp_path / "p.dot", _pipeline(flags, mark))
    logs = tmp_path / "logs"
    args = ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r"), *NO_SANDBOX]
    proc = spawn(args, tmp_path)
    try:
        wait_for(lambda: (flags / "started").exists(), "b to start", timeout=60)
        os.kill(proc.pid, signal.SIGKILL)
        finish(proc)
    finally:
        kill_all(mark)
    (flags / "go").touch()
    run_dir = only_run_dir(logs)
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    (work_tree / "notes.md").write_text("by hand, after the kill\n")

    result = invoke(["resume", str(run_dir)])

    assert result.exit_code == 0, result.output + result.stderr
    run_id = run_dir.name
    lost = f"attractor/{run_id}/lost/1"
    said = [line for line in result.stderr.splitlines() if f"git show {lost}" in line]
    assert said, result.stderr  # named in the output, with what it holds
    assert "the interrupted stage b" in said[0] and "(half.txt, notes.md)" in said[0]
    assert "edits made by hand since the run was killed" in said[0]
    assert git(repo, "show", f"{lost}:half.txt") == "half\n"  # never thrown away
    assert git(repo, "show", f"{lost}:notes.md") == "by hand, after the kill\n"
    assert not (work_tree / "notes.md").exists()  # b started again from where it began
    assert _stages(run_dir).count("a") == 1  # the completed stage did not run again
    assert (work_tree / "a.txt").read_text() == "a\nc\n"
    assert (work_tree / "b.txt").read_text() == "full\n"
    assert git(repo, "status", "--porcelain") == ""  # the user's checkout was never written


def test_a_timed_out_stage_is_put_back_and_hand_edits_before_resume_are_kept(
    tmp_path: Path, mark: str
) -> None:
    repo = make_repo(tmp_path / "repo")
    flags = tmp_path / "flags"
    flags.mkdir()
    dot = write(tmp_path / "p.dot", _pipeline(flags, mark))
    logs = tmp_path / "logs"
    stopped = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r"),
                      "--timeout", "3s", *NO_SANDBOX])  # fmt: skip
    kill_all(mark)
    assert stopped.exit_code == 124, stopped.stderr
    run_dir = only_run_dir(logs)
    assert "the stopped stage's files went back to" in stopped.stderr
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert not (work_tree / "half.txt").exists()
    (work_tree / "notes.md").write_text("written by hand while the run was stopped\n")
    (flags / "go").touch()

    result = invoke(["resume", str(run_dir)])

    assert result.exit_code == 0, result.output + result.stderr
    assert "saved the edits made by hand" in result.stderr
    assert (work_tree / "notes.md").exists()  # the run went on with them
    branch = f"attractor/{run_dir.name}"
    kinds = git(repo, "log", "--format=%(trailers:key=Attractor-Kind,valueonly)", branch)
    assert "hand-edits" in kinds.split()
    assert git(repo, "show", f"{branch}:notes.md").startswith("written by hand")


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "killed-after-its-set-up"])
def test_retry_failed_goes_back_to_the_start_of_the_failed_stage(tmp_path: Path, cut: bool) -> None:
    """``cut``: the continuation is set up (and saved), then the process dies before the
    files move; a plain ``resume`` finishes it, from where the failed stage began."""
    repo = make_repo(tmp_path / "repo")
    flags = tmp_path / "flags"
    flags.mkdir()
    pipeline = f"""digraph p {{
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a > a.txt"]
      b [shape=parallelogram, tool_command="echo try >> b.txt; [ -f {flags}/ok ]"]
      start -> a -> b -> done
    }}
    """
    dot = write(tmp_path / "p.dot", pipeline)
    logs = tmp_path / "logs"
    failed = invoke(
        ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r"), *NO_SANDBOX]
    )
    assert failed.exit_code == 1
    run_dir = only_run_dir(logs)
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "b.txt").read_text() == "try\n"
    (flags / "ok").touch()

    if cut:
        from attractor.engine.continuation import Continuation
        from attractor.engine.run import prepare_run_graph
        from attractor.engine.setup import resume_setup
        from attractor.settings import Settings
        from attractor.store.rundir import RunDir

        how = Continuation(retry_failed=True)
        setup = resume_setup(run_dir, Settings(), prepare_run_graph, {}, how, store=RunDir)
        setup.run_dir.unlock()  # the process died here: its lock went with it
        result = invoke(["resume", str(run_dir)])
    else:
        result = invoke(["resume", str(run_dir), "--retry-failed"])

    assert result.exit_code == 0, result.stderr
    assert (work_tree / "b.txt").read_text() == "try\n"  # not try twice: b began again
    lost = f"attractor/{run_dir.name}/lost/1"
    assert git(repo, "show", f"{lost}:b.txt") == "try\n"  # the failed attempt is kept


def test_from_node_restores_the_files_as_they_were_at_its_first_entry(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a >> log.txt"]
      b [shape=parallelogram, tool_command="echo b >> log.txt"]
      c [shape=parallelogram, tool_command="echo c >> log.txt"]
      start -> a -> b -> c -> done
    }
    """
    dot = write(tmp_path / "p.dot", pipeline)
    logs = tmp_path / "logs"
    assert (
        invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r")]).exit_code
        == 0
    )
    run_dir = only_run_dir(logs)
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "log.txt").read_text() == "a\nb\nc\n"
    before = git(repo, "rev-parse", f"attractor/{run_dir.name}").strip()

    result = invoke(["resume", str(run_dir), "--from", "b"])

    assert result.exit_code == 0, result.stderr
    assert (work_tree / "log.txt").read_text() == "a\nb\nc\n"  # not a b c b c
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert [r["node"] for r in rows].count("b") == 2
    # The checkpoints the rewind dropped from the branch are kept.
    assert git(repo, "show", f"attractor/{run_dir.name}/lost/1:log.txt") == "a\nb\nc\n"
    assert git(repo, "rev-parse", f"attractor/{run_dir.name}/lost/1").strip() == before


def test_resume_inside_a_sub_pipeline_keeps_the_files_of_its_completed_steps(
    tmp_path: Path, mark: str
) -> None:
    repo = make_repo(tmp_path / "repo")
    flags = tmp_path / "flags"
    flags.mkdir()
    wait = f"touch {flags}/waiting; while [ ! -f {flags}/go ]; do sleep {mark}; done"
    write(
        tmp_path / "child.dot",
        f"""digraph c {{
  start [shape=Mdiamond]; done [shape=Msquare]
  a [shape=parallelogram, tool_command="echo child > c.txt"]
  s [shape=parallelogram, tool_command="{wait}"]
  start -> a -> s -> done
}}""",
    )
    dot = write(
        tmp_path / "p.dot",
        """digraph p {
  start [shape=Mdiamond]; done [shape=Msquare]
  checks [shape=folder, dot_file="child.dot"]
  after [shape=parallelogram, tool_command="cat c.txt > after.txt"]
  start -> checks -> after -> done
}""",
    )
    args = ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(tmp_path / "r")]
    proc = spawn([*args, *NO_SANDBOX], tmp_path)
    wait_for(lambda: (flags / "waiting").exists(), what="the child's step s to start")
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc)
    kill_all(mark)
    assert code == 130, err
    (flags / "go").touch()

    result = invoke(["resume", str(tmp_path / "r")])

    assert result.exit_code == 0, result.output + result.stderr
    work_tree = Path(read_json(tmp_path / "r" / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "after.txt").read_text() == "child\n"  # a's file survived the stop


def _fan_out_killed_in_left(tmp_path: Path, mark: str, first: str) -> tuple[Path, Path]:
    """A fan-out run killed while its branch ``left`` waits half way (after writing
    ``half.txt``, having run ``first``), then let go: the repository and the run."""
    repo = make_repo(tmp_path / "repo")
    flags = tmp_path / "flags"
    flags.mkdir()
    left = (
        f"{first}; echo half > half.txt; "
        f"if [ ! -f {flags}/go ]; then touch {flags}/started; sleep {mark}; fi; "
        "echo full > left.txt; rm half.txt"
    )
    dot = write(
        tmp_path / "p.dot",
        f"""digraph fan {{
      start [shape=Mdiamond]; done [shape=Msquare]
      split [shape=component]
      left  [shape=parallelogram, tool_command="{left}"]
      right [shape=parallelogram, tool_command="echo right > right.txt"]
      join  [shape=tripleoctagon]
      start -> split; split -> left; split -> right; left -> join; right -> join
      join -> done
    }}""",
    )
    logs = tmp_path / "logs"
    args = ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r"), *NO_SANDBOX]
    proc = spawn(args, tmp_path)
    try:
        wait_for(lambda: (flags / "started").exists(), "left to start", timeout=60)
        os.kill(proc.pid, signal.SIGKILL)
        finish(proc)
    finally:
        kill_all(mark)
    (flags / "go").touch()
    return repo, only_run_dir(logs)


def test_a_parallel_branch_killed_mid_stage_starts_again_without_its_half_done_files(
    tmp_path: Path, mark: str
) -> None:
    # Run again on its own half-written file, left would stop at once (exit 7).
    repo, run_dir = _fan_out_killed_in_left(tmp_path, mark, "[ ! -f half.txt ] || exit 7")

    result = invoke(["resume", str(run_dir)])

    assert result.exit_code == 0, result.output + result.stderr  # left did not find half.txt
    assert _stages(run_dir).count("left") == 2
    lost = f"attractor/{run_dir.name}--left/lost/1"
    said = [line for line in result.stderr.splitlines() if "branch left:" in line]
    assert said and f"git show {lost}" in said[0]  # named in the output
    assert git(repo, "show", f"{lost}:half.txt") == "half\n"  # never thrown away
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "left.txt").read_text() == "full\n"
    assert (work_tree / "right.txt").read_text() == "right\n"
    assert not (work_tree / "half.txt").exists()  # the half-done file was not merged
    branch = f"attractor/{run_dir.name}"
    assert "half.txt" not in git(repo, "log", "--name-only", "--format=", branch).split()


def test_a_branch_whose_stage_deleted_its_dot_git_and_was_killed_resumes_in_its_worktree(
    tmp_path: Path, mark: str
) -> None:
    repo, run_dir = _fan_out_killed_in_left(tmp_path, mark, "rm .git")

    result = invoke(["resume", str(run_dir)])

    assert result.exit_code == 0, result.output + result.stderr
    assert "its worktree's .git file was gone" in result.stderr
    # The same worktree, put back to where the stage began: its half-done file kept aside.
    assert git(repo, "show", f"attractor/{run_dir.name}--left/lost/1:half.txt") == "half\n"
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "left.txt").read_text() == "full\n"
    assert (work_tree / "right.txt").read_text() == "right\n"


def test_from_the_first_stage_puts_back_the_files_of_the_run_s_first_commit(
    tmp_path: Path,
) -> None:
    """The first stage is entered before any checkpoint: ``--from`` it goes back to the
    run's first commit, not on top of what the run did."""
    repo = make_repo(tmp_path / "repo")
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a >> a.txt"]
      b [shape=parallelogram, tool_command="echo b >> b.txt"]
      start -> a -> b -> done
    }
    """
    dot = write(tmp_path / "p.dot", pipeline)
    logs = tmp_path / "logs"
    first = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r")])
    assert first.exit_code == 0, first.stderr
    run_dir = only_run_dir(logs)

    again = invoke(["resume", str(run_dir), "--from", "a"])

    assert again.exit_code == 0, again.stderr
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "a.txt").read_text() == "a\n"
    assert (work_tree / "b.txt").read_text() == "b\n"


def test_a_run_a_loop_restart_went_on_with_resumes_in_a_plain_folder(tmp_path: Path) -> None:
    """A snapshot keeps its git directory in the first run directory: the directory a
    ``loop_restart`` went on in resumes with it."""
    work = tmp_path / "work"
    work.mkdir()
    ok = tmp_path / "ok"  # outside the workdir: not one of the run's files
    pipeline = f"""digraph p {{
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, max_visits=3,
         tool_command="echo x >> count; test $(wc -l < count) -ge 2"]
      b [shape=parallelogram, tool_command="test -f {ok}"]
      start -> a
      a -> a [condition="outcome=fail", loop_restart=true]
      a -> b [condition="outcome=success"]
      b -> done
    }}
    """
    dot = write(tmp_path / "p.dot", pipeline)
    logs = tmp_path / "logs"
    args = ["run", str(dot), "--workdir", str(work), "--logs-dir", str(logs / "r"), *NO_SANDBOX]
    failed = invoke(args)
    assert failed.exit_code == 1, failed.stderr
    restarted = logs / "r-restart1"
    assert not (restarted / "workspace.git").exists()  # it is the first directory's
    ok.touch()

    resumed = invoke(["resume", str(restarted), "--retry-failed"])

    assert resumed.exit_code == 0, resumed.stderr
    assert (work / "count").read_text() == "x\nx\n"
