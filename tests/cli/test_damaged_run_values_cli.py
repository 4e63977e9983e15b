"""Run files holding values of the wrong type: one clear line or a tolerant read, never a
traceback (a results row whose ``usage`` is text or a number, an event whose ``attempt``
is not a number)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.runkit import invoke, only_run_dir

LINEAR = Path(__file__).resolve().parents[2] / "examples" / "linear.dot"


def _stopped_run(workspace: Path) -> Path:
    """A real simulate run whose checkpoint says it stopped before ``test``."""
    result = invoke(["run", str(LINEAR), "--logs-dir", "runs/{timestamp}", "-q"])
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    path = run_dir / "checkpoint.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    done = data["completed_nodes"].index("test")
    data.update(
        status="interrupted",
        current_node="test",
        next_node="test",
        completed_nodes=data["completed_nodes"][:done],
        node_results_count=done,
    )
    path.write_text(json.dumps(data), encoding="utf-8")
    return run_dir


def _rewrite_rows(path: Path, **fields: Any) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**row, **fields}) + "\n" for row in rows))


@pytest.mark.parametrize("usage", ["lots", 12, [1, 2]])
def test_a_results_row_whose_usage_is_not_an_object_is_one_line(
    workspace: Path, usage: object
) -> None:
    run_dir = _stopped_run(workspace)
    _rewrite_rows(run_dir / "results.jsonl", usage=usage)
    result = invoke(["resume", str(run_dir)])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line == (
        f"error: {run_dir / 'results.jsonl'}: line 1 is not a node result; "
        "the run directory is damaged, start a new run"
    )


def test_an_event_whose_attempt_is_not_a_number_still_shows_the_timeline(
    workspace: Path,
) -> None:
    run_dir = _stopped_run(workspace)
    _rewrite_rows(run_dir / "events.jsonl", attempt="second")
    rows = run_dir / "events.jsonl"
    with rows.open("a") as fh:  # a model turn whose token counts are text
        turn = {"type": "agent_turn_completed", "node": "plan", "input_tokens": "many"}
        fh.write(json.dumps(turn) + "\n")
    result = invoke(["status", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    timeline = json.loads(result.stdout)["timeline"]
    assert [r["node"] for r in timeline] == ["start", "plan", "implement", "test", "exit"]
    assert {r["attempt"] for r in timeline} == {1}
    assert {r["tokens"] for r in timeline} == {0}
