"""The run-wide step budget (``--max-steps``) through the real CLI."""

from __future__ import annotations

from pathlib import Path

from tests.cli.runkit import invoke, only_run_dir, read_json, started_stages, write

#: A simulated stage that loops on its own success: nothing but a budget ends it.
RUNAWAY = """digraph runaway {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    a [prompt="again"]
    start -> a
    a -> a    [condition="outcome=success"]
    a -> exit [condition="outcome=fail"]
}
"""


def _chain(n: int) -> str:
    nodes = " -> ".join(f"n{i}" for i in range(n))
    return (
        "digraph chain {\n    start [shape=Mdiamond]\n    exit [shape=Msquare]\n"
        + "".join(f'    n{i} [prompt="step {i}"]\n' for i in range(n))
        + f"    start -> {nodes} -> exit\n}}\n"
    )


def test_max_steps_ends_a_runaway_loop_as_failed_naming_the_budget(workspace: Path) -> None:
    write(workspace / "p.dot", RUNAWAY)
    result = invoke(["run", "p.dot", "--max-steps", "25", "--logs-dir", "runs/r"])
    assert result.exit_code == 1, result.output
    reason = "run step budget exhausted: 25 of 25 steps taken before a (--max-steps)"
    assert reason in result.stdout + result.stderr
    run_dir = only_run_dir(workspace / "runs")
    assert len(started_stages(run_dir)) == 25  # start and 24 visits of a
    manifest = read_json(run_dir / "manifest.json")
    assert manifest["status"] == "fail" and manifest["failure_reason"].startswith(reason)
    assert manifest["settings"]["max_steps"] == "25"


def test_the_graph_attribute_sets_the_budget_and_a_flag_beats_it(workspace: Path) -> None:
    write(workspace / "p.dot", RUNAWAY.replace("start [", "max_steps=8\n    start ["))
    result = invoke(["run", "p.dot", "--logs-dir", "runs/graph"])
    assert result.exit_code == 1
    assert "8 of 8 steps taken before a (graph attribute max_steps)" in result.stdout
    env = {"ATTRACTOR_MAX_STEPS": "12"}
    result = invoke(["run", "p.dot", "--logs-dir", "runs/env"], env=env)
    assert "12 of 12 steps taken before a (ATTRACTOR_MAX_STEPS)" in result.stdout
    result = invoke(["run", "p.dot", "--max-steps", "5", "--logs-dir", "runs/flag"], env=env)
    assert "5 of 5 steps taken before a (--max-steps)" in result.stdout


def test_a_step_is_one_node_execution(workspace: Path) -> None:
    # Ten stages plus start and exit: twelve steps.
    write(workspace / "chain.dot", _chain(10))
    enough = invoke(["run", "chain.dot", "--max-steps", "12", "--logs-dir", "runs/ok"])
    assert enough.exit_code == 0, enough.output
    short = invoke(["run", "chain.dot", "--max-steps", "11", "--logs-dir", "runs/short"])
    assert short.exit_code == 1
    assert "11 of 11 steps taken before exit (--max-steps)" in short.stdout


def test_dry_run_shows_the_step_budget_and_its_source(workspace: Path) -> None:
    write(workspace / "p.dot", RUNAWAY)
    default = invoke(["run", "p.dot", "--dry-run"])
    assert "\nstep budget: 10,000 node executions (default)\n" in default.stdout
    flagged = invoke(["run", "p.dot", "--dry-run", "--max-steps", "40"])
    assert "\nstep budget: 40 node executions (--max-steps)\n" in flagged.stdout
    write(workspace / "big.dot", _chain(1500))
    big = invoke(["run", "big.dot", "--dry-run"])
    assert "\nstep budget: 15,020 node executions (default: 10 per node)\n" in big.stdout


def test_max_visits_bounds_a_loop_restart_loop(workspace: Path) -> None:
    # Visit counts carry across restarts: a fresh directory, not a fresh allowance.
    bounded = RUNAWAY.replace('a [prompt="again"]', 'a [prompt="again", max_visits=3]')
    bounded = bounded.replace(
        'a -> a    [condition="outcome=success"]',
        'a -> a    [condition="outcome=success", loop_restart=true]',
    ).replace('[condition="outcome=fail"]', '[condition="outcome!=success"]')
    write(workspace / "p.dot", bounded)
    assert invoke(["lint", "--strict", "p.dot"]).exit_code == 0
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    # Three visits of a, then its fourth entry fails and routes to the exit.
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (workspace / "runs").iterdir()) == [
        "r",
        "r-restart1",
        "r-restart2",
        "r-restart3",
    ]


def test_a_resumed_run_counts_the_steps_taken_before_it_stopped(workspace: Path) -> None:
    write(workspace / "p.dot", RUNAWAY)
    first = invoke(["run", "p.dot", "--timeout", "1s", "--max-steps", "100000", "--logs-dir", "r"])
    assert first.exit_code == 124, first.output
    taken = len((workspace / "r" / "results.jsonl").read_text("utf-8").splitlines())
    assert taken > 1
    limit = taken + 3
    resumed = invoke(["resume", "r", "--timeout", "5m", "--max-steps", str(limit)])
    assert resumed.exit_code == 1, resumed.output
    assert f"{limit:,} of {limit:,} steps taken before a (--max-steps)" in resumed.stdout
    rows = (workspace / "r" / "results.jsonl").read_text("utf-8").splitlines()
    assert len(rows) == limit  # three more steps, not a fresh budget
