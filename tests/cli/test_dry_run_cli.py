"""``attractor run --dry-run`` plans without running; ``--backend simulate`` runs no command."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.runkit import (
    completed_stages,
    invoke,
    only_run_dir,
    read_json,
    started_stages,
    write,
)
from tests.llm.fake_http import FakeServer

# Branches (a gate, a conditional), a loop (test -> fix) and a parallel fan-out.
PIPELINE = """digraph shipit {
    graph [goal="Ship it", default_max_turns=12]
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    plan [prompt="Plan: $goal", llm_model="gpt-5", max_turns=7, timeout="5m"]
    fix  [prompt="Fix it", max_visits=3, max_retries=2]
    test [shape=parallelogram, tool_command="touch ran.txt && exit 1", timeout="2m"]
    reviews [shape=component]
    a [prompt="Review A"]
    b [prompt="Review B"]
    join [shape=tripleoctagon]
    gate [shape=hexagon, label="Ship?"]
    start -> plan -> fix -> test
    test -> reviews [condition="outcome=success"]
    test -> fix     [condition="outcome!=success", label="again"]
    reviews -> a -> join
    reviews -> b -> join
    join -> gate
    gate -> exit [label="[S] Ship"]
    gate -> plan [label="[R] Replan"]
}
"""


def test_dry_run_prints_each_node_once_with_its_plan_and_runs_nothing(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE)
    with FakeServer().running() as server:
        url = f"{server.url}/v1"
        result = invoke(["run", "p.dot", "--dry-run", "--base-url", url, "--max-turns", "10"])
        assert server.received == []  # no model call
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("dry run of p.dot: nothing runs")
    assert "\nbackend: llm (a model or provider is configured)\n" in out  # from --base-url
    # No run directory, no file from the tool command, nothing else written.
    assert sorted(p.name for p in workspace.iterdir()) == ["p.dot"]
    for node in ("start", "plan", "fix", "test", "reviews", "a", "b", "join", "gate", "exit"):
        assert out.count(f". {node} [") == 1, node
    assert f"model: gpt-5 (openai at {url}; from node llm_model or stylesheet)" in out
    assert "turns: 7 (node max_turns)" in out
    assert "turns: 10 (cap from --max-turns)" in out  # fix: graph default 12, capped
    assert "runs: touch ran.txt && exit 1" in out
    assert "timeout: 5m" in out and "timeout: 2m" in out and "retries: 2" in out
    assert '-> fix "again" when outcome!=success (loop, shown above)' in out
    assert '-> plan "[R] Replan" (loop, shown above)' in out
    assert "fan-out: join_policy=wait_all, max_parallel=16" in out
    assert out.count("-> join") == 2 and out.count(". join [parallel.fan_in]") == 1


def test_dry_run_refuses_a_pipeline_with_lint_errors(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE.replace("shape=hexagon", "shape=hexagn"))
    result = invoke(["run", "p.dot", "--dry-run"])
    assert result.exit_code == 2
    assert "shape_known" in result.stderr and result.stdout == ""


def test_simulate_reports_the_command_and_does_not_run_it(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE.replace(' llm_model="gpt-5",', ""))
    args = ["run", "p.dot", "--backend", "simulate", "--auto-approve", "--logs-dir", "runs/r"]
    result = invoke(args)
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert first == "simulated run: LLM stages get canned replies and tool commands are not run"
    assert not (workspace / "ran.txt").exists()
    run_dir = only_run_dir(workspace / "runs")
    assert read_json(run_dir / "manifest.json")["simulated"] == {"models": True, "tools": True}
    status = read_json(run_dir / "test" / "status.json")
    assert status["outcome"] == "success"
    assert "simulated: would run: touch ran.txt && exit 1" in json.dumps(status)


def test_simulate_plans_tool_failures_with_the_simulate_attribute(workspace: Path) -> None:
    text = PIPELINE.replace(' llm_model="gpt-5",', "").replace(
        'timeout="2m"]', 'timeout="2m", simulate="fail,success"]'
    )
    write(workspace / "p.dot", text)
    result = invoke(["run", "p.dot", "--backend", "simulate", "--auto-approve", "-q"])
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / ".attractor" / "runs")
    # The first (simulated) test run failed, so the loop back to fix was taken once.
    assert completed_stages(run_dir).count("fix") == 2
    assert started_stages(run_dir).count("test") == 2
    assert not (workspace / "ran.txt").exists()


def test_default_backend_still_runs_tool_commands_and_says_models_are_simulated(
    workspace: Path,
) -> None:
    write(
        workspace / "p.dot",
        'digraph t { start [shape=Mdiamond]; exit [shape=Msquare]; w [prompt="p"]\n'
        'make [shape=parallelogram, tool_command="touch ran.txt"]\n'
        "start -> w -> make -> exit }",
    )
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        "simulated run: no model configured, LLM stages get canned replies; "
        "tool commands run for real"
    )
    assert (workspace / "ran.txt").exists()
    manifest = read_json(only_run_dir(workspace / "runs") / "manifest.json")
    assert manifest["simulated"] == {"models": True, "tools": False}


def test_a_run_with_a_model_says_nothing_about_simulation(workspace: Path) -> None:
    write(
        workspace / "p.dot",
        "digraph t { start [shape=Mdiamond]; exit [shape=Msquare]\n"
        'make [shape=parallelogram, tool_command="true"]\nstart -> make -> exit }',
    )
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 0 and "simulated" not in result.output


def test_json_mode_keeps_stdout_for_events_and_says_simulated_on_stderr(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE.replace(' llm_model="gpt-5",', ""))
    result = invoke(["run", "p.dot", "--backend", "simulate", "--auto-approve", "--json"])
    assert result.exit_code == 0, result.output
    assert all(json.loads(line) for line in result.stdout.splitlines())
    assert result.stderr.startswith("simulated run: ")
