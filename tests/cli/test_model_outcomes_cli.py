"""Stages that steer the flow: the model's own outcome report and the status-file contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.runkit import events, invoke, only_run_dir, read_json, write

REVIEW = """\
digraph review {
    start  [shape=Mdiamond]
    exit   [shape=Msquare]
    build  [shape=parallelogram, tool_command="echo build >> visits.txt"]
    review [prompt="Review the change", max_turns=5]
    start -> build -> review
    review -> exit  [label="[A] Approve"]
    review -> build [label="[R] Rework"]
}
"""


ONE_WAY = """\
digraph one {
    start  [shape=Mdiamond]
    exit   [shape=Msquare]
    review [prompt="Review the change", max_turns=5]
    start -> review -> exit
}
"""


def _report(**fields: Any) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": "report_outcome", "arguments": fields}]}


def _run(workspace: Path, dot: str, responses: list[dict[str, Any]]) -> Any:
    write(workspace / "p.dot", dot)
    write(workspace / "model.json", json.dumps({"responses": responses, "then": "stop"}))
    logs = "runs/{timestamp}-{graph}"
    return invoke(["run", "p.dot", "--logs-dir", logs, "--backend", "scripted:model.json"])


def test_the_model_routes_rework_then_approve_by_its_own_choice(workspace: Path) -> None:
    result = _run(
        workspace,
        REVIEW,
        [
            _report(outcome="success", preferred_label="[R] Rework", notes="tests are missing"),
            _report(outcome="success", preferred_label="Approve", notes="looks good now"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (workspace / "visits.txt").read_text().split() == ["build", "build"]
    run_dir = only_run_dir(workspace / "runs")
    status = read_json(run_dir / "review" / "status.json")
    assert status["preferred_label"] == "Approve"
    assert status["notes"] == "looks good now"
    assert status["reported_by_model"] == "tool"
    completed = [e for e in events(run_dir) if e["type"] == "stage_completed"]
    assert [(e["preferred_label"], e["notes"]) for e in completed if e["name"] == "review"] == [
        ("[R] Rework", "tests are missing"),
        ("Approve", "looks good now"),
    ]


def test_the_display_shows_the_chosen_label_and_the_reason(workspace: Path) -> None:
    result = _run(
        workspace, REVIEW, [_report(outcome="success", preferred_label="[A] Approve", notes="ok")]
    )
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "review" in x and "success" in x)
    assert "-> [A] Approve" in line and "- ok" in line


def test_the_labels_are_offered_to_the_model(workspace: Path) -> None:
    _run(workspace, REVIEW, [_report(outcome="success", preferred_label="[A] Approve")])
    run_dir = only_run_dir(workspace / "runs")
    first = json.loads((run_dir / "review" / "transcript.jsonl").read_text().splitlines()[0])
    assert "report_outcome" in first["tools_offered"]
    prompt = (run_dir / "review" / "prompt.md").read_text()
    assert prompt.endswith("\n---\n\nReview the change")  # after the run-so-far preamble


def test_a_text_report_at_the_end_of_the_answer_counts(workspace: Path) -> None:
    text = 'Done.\n```json\n{"outcome": "fail", "notes": "the build is broken"}\n```'
    result = _run(
        workspace,
        ONE_WAY,
        [{"text": text}],
    )
    assert result.exit_code == 1, result.output
    run_dir = only_run_dir(workspace / "runs")
    status = read_json(run_dir / "review" / "status.json")
    assert status["outcome"] == "fail"
    assert status["failure_reason"] == "the build is broken"
    assert status["reported_by_model"] == "text"


def test_no_report_means_success(workspace: Path) -> None:
    result = _run(workspace, ONE_WAY, [{"text": "All fine."}])
    assert result.exit_code == 0, result.output
    status = read_json(only_run_dir(workspace / "runs") / "review" / "status.json")
    assert status["outcome"] == "success"
    assert "reported_by_model" not in status


def test_an_invalid_report_is_refused_and_the_model_can_correct_it(workspace: Path) -> None:
    result = _run(
        workspace,
        REVIEW,
        [
            _report(outcome="great"),
            _report(outcome="success", preferred_label="[A] Approve"),
        ],
    )
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    log = (run_dir / "review" / "tools.log").read_text()
    assert "report not recorded: outcome must be one of" in log
    assert "outcome recorded: success, label '[A] Approve'" in log


STATUS_TOOL = """\
digraph partial {
    graph [goal="ship"]
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    check [shape=parallelogram, goal_gate=true, tool_command="%s"]
    good  [shape=parallelogram, tool_command="echo good > route.txt"]
    other [shape=parallelogram, tool_command="echo other > route.txt"]
    start -> check
    check -> good  [label="Good"]
    check -> other [label="Other"]
    good -> exit
    other -> exit
}
"""


def _status_tool(workspace: Path, payload: str) -> None:
    """A pipeline whose check node copies ``payload`` into its stage's status.json."""
    write(workspace / "payload.json", payload)
    write(workspace / "p.dot", STATUS_TOOL % "cp payload.json $ATTRACTOR_STAGE_DIR/status.json")


def test_a_tool_status_file_drives_outcome_route_and_context(workspace: Path) -> None:
    payload = (
        '{"outcome": "partial_success", "preferred_label": "Good", '
        '"context_updates": {"coverage": "81"}, "notes": "2 flaky tests skipped"}'
    )
    _status_tool(workspace, payload)
    result = invoke(["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}"])
    assert result.exit_code == 0, result.output  # the goal gate accepts partial_success
    assert (workspace / "route.txt").read_text().strip() == "good"
    run_dir = only_run_dir(workspace / "runs")
    # The node's own file stays as written; the engine's record sits beside it.
    assert json.loads((run_dir / "check" / "status.json").read_text()) == json.loads(payload)
    record = read_json(run_dir / "check" / "status.engine.json")
    assert record["outcome"] == "partial_success"
    assert record["context_updates"]["coverage"] == "81"
    assert record["status_file"] == "written by the node"
    checkpoint = read_json(run_dir / "checkpoint.json")
    assert checkpoint["context"]["coverage"] == "81"


def test_an_invalid_status_file_fails_the_node_quoting_the_file(workspace: Path) -> None:
    _status_tool(workspace, '{"outcome": "maybe"}')
    result = invoke(["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}"])
    assert result.exit_code == 1, result.output
    run_dir = only_run_dir(workspace / "runs")
    record = read_json(run_dir / "check" / "status.engine.json")
    assert "check/status.json" in record["failure_reason"]
    assert "outcome must be one of" in record["failure_reason"]
    assert (run_dir / "check" / "status.json").read_text() == '{"outcome": "maybe"}'
