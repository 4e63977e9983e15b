"""The manager loop (shape=house) over a real child pipeline, through the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import (
    finish,
    invoke,
    lines_of,
    only_run_dir,
    pids_with,
    read_json,
    sleep_mark,
    spawn,
    wait_for,
    write,
)

CHILD_OK = """\
digraph child {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    first  [shape=parallelogram, tool_command="echo first >> side.txt"]
    second [shape=parallelogram, tool_command="echo second >> side.txt"]
    start -> first -> second -> exit
}
"""

CHILD_FAILS = CHILD_OK.replace('"echo second >> side.txt"', '"echo broken >&2; exit 4"')

PARENT = """\
digraph parent {{
    start  [shape=Mdiamond]
    exit   [shape=Msquare]
    manage [shape=house, stack.child_dotfile="child.dot", manager.poll_interval="{poll}"{extra}]
    start -> manage -> exit
}}
"""

LOGS = ["--logs-dir", "runs/{timestamp}-{graph}"]


@pytest.fixture
def mark() -> Iterator[str]:
    with sleep_mark(37) as word:
        yield word


def _parent(workspace: Path, child: str, *, poll: str = "1s", extra: str = "") -> None:
    write(workspace / "child.dot", child)
    write(workspace / "parent.dot", PARENT.format(poll=poll, extra=extra))


def test_a_manager_succeeds_with_its_child(workspace: Path) -> None:
    _parent(workspace, CHILD_OK)
    result = invoke(["run", "parent.dot", *LOGS])
    assert result.exit_code == 0, result.output
    assert lines_of(workspace / "side.txt") == ["first", "second"]
    run_dir = only_run_dir(workspace / "runs")
    child = run_dir / "children" / "manage"
    assert read_json(child / "checkpoint.json")["status"] == "success"
    status = read_json(run_dir / "manage" / "status.json")
    assert status["context_updates"]["stack.child.status"] == "completed"
    assert status["context_updates"]["stack.child.completed_nodes"] == 4


def test_a_failing_child_fails_the_manager_with_its_reason(workspace: Path) -> None:
    _parent(workspace, CHILD_FAILS)
    result = invoke(["run", "parent.dot", *LOGS])
    assert result.exit_code == 1
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("pipeline failed: manage failed: the child pipeline fail")
    assert "second failed" in last


def test_the_stop_condition_ends_the_manager_and_stops_the_child(
    workspace: Path, mark: str
) -> None:
    child = CHILD_OK.replace('"echo second >> side.txt"', f'"sleep {mark}"')
    stop = ', manager.stop_condition="stack.child.current_node=second"'
    _parent(workspace, child, poll="50ms", extra=stop)
    code, out, err = finish(spawn(["run", "parent.dot", *LOGS], workspace))
    assert code == 0, err
    assert not pids_with(mark), "the child's command must stop with it"
    run_dir = only_run_dir(workspace / "runs")
    status = read_json(run_dir / "manage" / "status.json")
    assert status["notes"] == "stop condition holds: stack.child.current_node=second"
    assert read_json(run_dir / "children" / "manage" / "checkpoint.json")["status"] == "interrupted"


@pytest.mark.slow
def test_timeout_reaches_the_child_and_resume_continues_it(workspace: Path, mark: str) -> None:
    child = CHILD_OK.replace(
        '"echo second >> side.txt"', f'"test -f go || (touch holding; sleep {mark})"'
    )
    _parent(workspace, child)
    proc = spawn(["run", "parent.dot", *LOGS, "--timeout", "3s"], workspace)
    wait_for(lambda: (workspace / "holding").exists(), "the child to reach its slow step")
    code, out, err = finish(proc)
    assert code == 124, err
    assert not pids_with(mark), "no process of the child outlives the timeout"
    run_dir = only_run_dir(workspace / "runs")
    assert read_json(run_dir / "checkpoint.json")["status"] == "timed_out"

    write(workspace / "go", "")
    code, out, err = finish(spawn(["resume", str(run_dir)], workspace))
    assert code == 0, err
    # The child went on from its checkpoint: first ran once, before the timeout.
    assert lines_of(workspace / "side.txt") == ["first"]
    events = (run_dir / "children" / "manage" / "events.jsonl").read_text().splitlines()
    started = [json.loads(e)["name"] for e in events if '"stage_started"' in e]
    assert started.count("first") == 1 and started.count("second") == 2


def test_a_child_that_cannot_start_fails_the_manager_in_one_line(workspace: Path) -> None:
    _parent(workspace, "digraph child { start [shape=Mdiamond]; start -> nowhere }")
    result = invoke(["run", "parent.dot", *LOGS])
    assert result.exit_code == 1
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("pipeline failed: manage failed: the child pipeline fail")
    assert "it could not start:" in last and "child.dot" in last


def test_a_zero_poll_interval_lints_clean_and_cycles_with_the_child(workspace: Path) -> None:
    # 0s means no wait between cycles: the manager looks at the child after each
    # of its steps (and does not spin through its cycles while the child works).
    _parent(workspace, CHILD_OK, poll="0s", extra=", manager.max_cycles=50")
    lint = invoke(["lint", "--strict", "parent.dot"])
    assert lint.exit_code == 0, lint.output
    result = invoke(["run", "parent.dot", *LOGS])
    assert result.exit_code == 0, result.output
    assert lines_of(workspace / "side.txt") == ["first", "second"]
