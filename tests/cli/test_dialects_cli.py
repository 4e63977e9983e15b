"""Aliases from the command line: lint --strict, the dry-run plan and a real run."""

from __future__ import annotations

from pathlib import Path

from tests.cli.runkit import completed_stages, invoke, only_run_dir, write
from tests.linter.test_lint_dialects import ALIASED


def test_strict_counts_style_notes(workspace: Path) -> None:
    write(workspace / "p.dot", ALIASED)
    plain = invoke(["lint", "p.dot"])
    assert plain.exit_code == 0, plain.output
    assert "style alias: 'model' is read as llm_model" in plain.output
    assert invoke(["lint", "--strict", "p.dot"]).exit_code == 1


def test_a_run_routes_on_outcome_aliases_and_runs_aliased_commands(workspace: Path) -> None:
    write(
        workspace / "p.dot",
        """digraph T {
        start [shape=Mdiamond]
        done [shape=Msquare]
        check [shape=parallelogram, command="exit 3"]
        report [shape=parallelogram, "tool.command"="echo failed > report.txt"]
        start -> check
        check -> done [condition="outcome=SUCCEEDED"]
        check -> report [condition="outcome=failed"]
        report -> done
    }
    """,
    )
    plan = invoke(["run", "p.dot", "--dry-run"])
    assert plan.exit_code == 0, plan.output
    assert "aliases: command -> tool_command" in plan.output
    assert "when outcome=fail (outcome written failed)" in plan.output
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 0, result.output
    assert completed_stages(only_run_dir(workspace / "runs"))[-2:] == ["report", "done"]
    assert (workspace / "report.txt").read_text().strip() == "failed"
