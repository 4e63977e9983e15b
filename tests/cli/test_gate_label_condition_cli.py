"""A human-gate choice conditioned on its own label is a choice like the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.runkit import invoke, write

GATE = """digraph G {{
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    gate  [shape=hexagon, label="Ship?", human.default_choice="{choice}", human.timeout="50ms"]
    redo  [shape=parallelogram, tool_command="echo redo > redo.txt"]
    start -> gate
    gate -> redo [label="reject", condition="{condition}"]
    gate -> exit [label="continue"]
    redo -> exit
}}
"""


@pytest.mark.parametrize(("choice", "redone"), [("reject", True), ("continue", False)])
def test_the_choice_is_taken_when_picked_and_only_then(
    workspace: Path, choice: str, redone: bool
) -> None:
    write(workspace / "g.dot", GATE.format(choice=choice, condition="preferred_label=reject"))
    lint = invoke(["lint", "--strict", "g.dot"])
    assert lint.exit_code == 0, lint.output
    result = invoke(["run", "g.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 0, result.output
    assert (workspace / "redo.txt").exists() == redone


@pytest.mark.parametrize("condition", ["preferred_label=Reject", "outcome=success"])
def test_any_other_condition_on_a_choice_stays_an_error(workspace: Path, condition: str) -> None:
    write(workspace / "g.dot", GATE.format(choice="reject", condition=condition))
    lint = invoke(["lint", "g.dot"])
    assert lint.exit_code == 1
    assert "error gate_choice_condition" in lint.output
