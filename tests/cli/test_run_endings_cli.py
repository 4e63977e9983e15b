"""How a run ends, as the CLI reports it: a stop where no edge matched is a failure."""

from __future__ import annotations

from pathlib import Path

from tests.cli.runkit import invoke, only_run_dir, read_json, write

UNEXPECTED = """digraph p {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    check [shape=parallelogram, tool_command="echo surprise"]
    after [shape=parallelogram, tool_command="touch after.txt"]
    start -> check
    check -> after [condition="context.tool.stdout=ok"]
    after -> exit
}
"""


def test_a_tool_printing_something_unexpected_fails_the_run(workspace: Path) -> None:
    write(workspace / "p.dot", UNEXPECTED)
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 1, result.output
    reason = (
        "stopped at check: no outgoing edge matched "
        "(conditions: context.tool.stdout=ok); its outcome was success"
    )
    assert f"pipeline failed: {reason}" in result.stdout
    assert "succeeded" not in result.stdout
    assert not (workspace / "after.txt").exists()
    manifest = read_json(only_run_dir(workspace / "runs") / "manifest.json")
    assert (manifest["status"], manifest["failure_reason"]) == ("fail", reason)
    # lint said so beforehand.
    linted = invoke(["lint", "p.dot"])
    assert "warning no_default_edge: every edge out of check has a condition" in linted.stdout
