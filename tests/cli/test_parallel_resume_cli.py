"""Resuming a run stopped inside a parallel node runs only the unfinished branches."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import (
    finish,
    kill_all,
    lines_of,
    only_run_dir,
    sleep_mark,
    spawn,
    wait_for,
    write,
)


@pytest.fixture(autouse=True)
def no_workspace(workspace: Path) -> None:
    """These tests steer their runs with files written in the workdir between sessions
    (``go``) and count what the stages did in it; with a workspace a resume would put
    such files back. What a workspace does across kills and resumes is in
    tests/workspace and the SIGKILL soak (test_crash_kill.py)."""
    write(workspace / "attractor.toml", 'workspace = "none"\n')


@pytest.fixture
def mark() -> Iterator[str]:
    with sleep_mark(47) as word:
        yield word


def test_a_finished_branch_is_not_run_again_on_resume(workspace: Path, mark: str) -> None:
    slow = f"echo slow >> side.txt; test -f go || (touch holding; sleep {mark})"
    write(
        workspace / "p.dot",
        f"""digraph fan {{
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    fan   [shape=component]
    join  [shape=tripleoctagon]
    fast  [shape=parallelogram, tool_command="echo fast >> side.txt"]
    slow  [shape=parallelogram, tool_command="{slow}"]
    start -> fan
    fan -> fast -> join
    fan -> slow -> join
    join -> exit
}}
""",
    )
    proc = spawn(["run", "p.dot", "--logs-dir", "runs/r"], workspace)
    wait_for(lambda: (workspace / "holding").exists(), "the slow branch to hold")
    kept = workspace / "runs" / "r" / "fan" / "branches" / "0.json"
    wait_for(kept.exists, "the fast branch's result to be kept")
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc)
    assert code == 130, err
    write(workspace / "go", "")
    code, out, err = finish(spawn(["resume", str(only_run_dir(workspace / "runs"))], workspace))
    assert code == 0, err
    assert sorted(lines_of(workspace / "side.txt")) == ["fast", "slow", "slow"]
    assert "2 of 2 branches succeeded" in out


def test_a_branch_killed_mid_way_continues_after_its_completed_nodes(
    workspace: Path, mark: str
) -> None:
    slow = f"echo slow >> side.txt; test -f go || (touch holding; sleep {mark})"
    write(
        workspace / "p.dot",
        f"""digraph fan {{
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    fan   [shape=component]
    join  [shape=tripleoctagon]
    fast  [shape=parallelogram, tool_command="echo fast >> side.txt"]
    first [shape=parallelogram, tool_command="echo first >> side.txt"]
    slow  [shape=parallelogram, tool_command="{slow}"]
    last  [shape=parallelogram, tool_command="echo last >> side.txt"]
    start -> fan
    fan -> fast -> join
    fan -> first -> slow -> last -> join
    join -> exit
}}
""",
    )
    proc = spawn(["run", "p.dot", "--logs-dir", "runs/r"], workspace)
    wait_for(lambda: (workspace / "holding").exists(), "the slow node to hold")
    branches = workspace / "runs" / "r" / "fan" / "branches"
    wait_for((branches / "0.json").exists, "the fast branch's result to be kept")
    assert (branches / "1.progress.json").exists()  # saved after `first`
    proc.kill()  # no chance to save anything more
    finish(proc)
    write(workspace / "go", "")
    code, out, err = finish(spawn(["resume", str(only_run_dir(workspace / "runs"))], workspace))
    assert code == 0, err
    # `first` completed before the kill and does not run again; `slow` runs again once.
    assert sorted(lines_of(workspace / "side.txt")) == ["fast", "first", "last", "slow", "slow"]
    assert "2 of 2 branches succeeded" in out


def test_a_branch_killed_twice_goes_on_from_its_latest_progress(workspace: Path, mark: str) -> None:
    # Each kill lands in a later node of the branch; the second resume must go on from
    # where the first resume got to, not from what the first kill left.
    def hold(name: str) -> str:
        return f"echo {name} >> side.txt; test -f go-{name} || (touch holding-{name}; sleep {mark})"

    write(
        workspace / "p.dot",
        f"""digraph fan {{
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    fan   [shape=component]
    join  [shape=tripleoctagon]
    one   [shape=parallelogram, tool_command="echo one >> side.txt"]
    two   [shape=parallelogram, tool_command="{hold("two")}"]
    three [shape=parallelogram, tool_command="{hold("three")}"]
    start -> fan
    fan -> one -> two -> three -> join
    join -> exit
}}
""",
    )
    runs = workspace / "runs"
    starts = [("two", ["run", "p.dot", "--logs-dir", "runs/r"]), ("three", ["resume", "runs/r"])]
    for node, args in starts:
        proc = spawn(args, workspace)
        wait_for(lambda n=node: (workspace / f"holding-{n}").exists(), f"{node} to hold")
        proc.kill()
        finish(proc)
        kill_all(mark)
        write(workspace / f"go-{node}", "")
    code, _, err = finish(spawn(["resume", str(only_run_dir(runs))], workspace))
    assert code == 0, err
    # two and three each ran again once after the kill that caught them; two never ran a
    # third time from the first kill's stale progress.
    assert lines_of(workspace / "side.txt") == ["one", "two", "two", "three", "three"]
