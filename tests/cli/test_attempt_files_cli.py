"""Every visit and attempt of a node keeps its own files."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.runkit import invoke, write

LOOP = """\
digraph loop {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    tests [shape=parallelogram, tool_command="cat state.txt; test $(cat state.txt) = fixed"]
    fix   [shape=parallelogram, tool_command="echo fixed > state.txt"]
    start -> tests
    tests -> exit [condition="outcome=success"]
    tests -> fix  [condition="outcome=fail"]
    fix -> tests
}
"""

RETRY = """\
digraph retry {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    flaky [shape=parallelogram, max_retries=1,
           tool_command="echo try >> tries.txt; test $(wc -l < tries.txt) -ge 2"]
    start -> flaky -> exit
}
"""


def test_a_fail_fix_pass_loop_keeps_both_visits_output(workspace: Path) -> None:
    write(workspace / "p.dot", LOOP)
    write(workspace / "state.txt", "broken\n")
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 0, result.output
    tests = workspace / "runs" / "r" / "tests"
    assert (tests / "stdout.txt").read_text() == "fixed\n"  # the latest, plainly
    assert (tests / "v1-a1" / "stdout.txt").read_text() == "broken\n"  # the first visit
    assert json.loads((tests / "v1-a1" / "status.json").read_text())["outcome"] == "fail"
    assert json.loads((tests / "status.json").read_text())["outcome"] == "success"

    timeline = json.loads(invoke(["status", "runs/r", "--json"]).stdout)["timeline"]
    rows = [(r["node"], r["visit"], r["status"], r["files"]) for r in timeline]
    assert ("tests", 1, "fail", "tests/v1-a1") in rows
    assert ("tests", 2, "success", "tests") in rows


def test_each_retry_attempt_keeps_its_files(workspace: Path) -> None:
    write(workspace / "p.dot", RETRY)
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 0, result.output
    flaky = workspace / "runs" / "r" / "flaky"
    assert (flaky / "v1-a1" / "stdout.txt").exists()
    assert sorted(p.name for p in flaky.iterdir() if p.is_dir()) == ["v1-a1"]
    assert json.loads((flaky / "status.json").read_text())["outcome"] == "success"
