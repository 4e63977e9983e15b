"""Honest terminals: a node without outgoing edges ends the run as lint says it does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.runkit import invoke, only_run_dir, started_stages, write

FAIL_LOUD = """digraph T {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    work  [shape=parallelogram, tool_command="exit 1"]
    stop  [shape=parallelogram, tool_command="STOP"]
    start -> work
    work -> exit [condition="outcome=success"]
    work -> stop [condition="outcome=fail"]
}
"""


@pytest.mark.parametrize(("command", "code"), [("exit 1", 1), ("echo noted", 0)])
def test_the_run_ends_at_a_dead_end_as_its_outcome_says(
    workspace: Path, command: str, code: int
) -> None:
    write(workspace / "p.dot", FAIL_LOUD.replace("STOP", command))
    lint = invoke(["lint", "p.dot"])
    assert lint.exit_code == 0, lint.output
    assert (
        "warning dead_end: node 'stop' has no outgoing edge, so the run ends here: "
        "the run succeeds if stop succeeds and fails if it fails"
    ) in lint.output
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == code, result.output
    assert started_stages(only_run_dir(workspace / "runs"))[-1] == "stop"
    if code:
        assert "stop failed" in result.output


def test_two_exits_lint_clean_and_the_run_ends_at_the_one_it_reaches(workspace: Path) -> None:
    text = FAIL_LOUD.replace(
        'stop  [shape=parallelogram, tool_command="STOP"]', "stop [shape=Msquare]"
    )
    write(workspace / "p.dot", text)
    lint = invoke(["lint", "--strict", "p.dot"])
    assert lint.exit_code == 0, lint.output
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 0, result.output
    assert started_stages(only_run_dir(workspace / "runs"))[-1] == "stop"


def test_goal_gates_are_not_checked_at_a_dead_end(workspace: Path) -> None:
    text = FAIL_LOUD.replace("STOP", "echo noted").replace(
        'tool_command="exit 1"]', 'tool_command="exit 1", goal_gate=true, max_retries=0]'
    )
    write(workspace / "p.dot", text)
    lint = invoke(["lint", "p.dot"])
    assert "goal gates are checked only at an exit node, not here" in lint.output
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 0, result.output


def test_a_closed_loop_is_still_an_error(workspace: Path) -> None:
    text = FAIL_LOUD.replace('"STOP"]', '"true"]') + "\n"
    text = text.replace("}\n\n", "    again [prompt=p]\n    stop -> again\n    again -> stop\n}\n")
    write(workspace / "p.dot", text)
    lint = invoke(["lint", "p.dot"])
    assert lint.exit_code == 1
    assert "error exit_reachable: nodes stop, again loop with no way out" in lint.output
