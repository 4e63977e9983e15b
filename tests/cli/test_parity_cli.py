"""The spec's cross-feature parity matrix (11.12) and smoke test (11.13), through the CLI.

Each test drives ``attractor run`` on a real file with the simulate backend and
checks what a user can see: exit code, run directory, checkpoint, stage files.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from click.testing import Result

from attractor.dot.graph import Graph, Node
from attractor.engine.run import RunOptions, prepare_run_graph, run_pipeline
from attractor.handlers.base import StageEnv
from attractor.handlers.builtin import default_registry
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome
from attractor.handlers.simulate import SimulateBackend
from attractor.settings import resolve_settings
from tests.cli.runkit import (
    completed_stages,
    events,
    invoke,
    kill_all,
    only_run_dir,
    read_json,
    run_dirs,
    started_stages,
    write,
)


def _run(workspace: Path, text: str, *args: str) -> tuple[Result, Path | None]:
    write(workspace / "p.dot", text)
    result = invoke(["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}", *args])
    dirs = run_dirs(workspace / "runs")
    return result, dirs[0] if dirs else None


def _ok(workspace: Path, text: str, *args: str) -> Path:
    result, run_dir = _run(workspace, text, *args)
    assert result.exit_code == 0, result.output
    assert run_dir is not None
    return run_dir


def _completed(run_dir: Path) -> list[str]:
    return list(read_json(run_dir / "checkpoint.json")["completed_nodes"])


def _graph(body: str, name: str = "p", attrs: str = "") -> str:
    return f"""digraph {name} {{
    {attrs}
    start [shape=Mdiamond]
    done  [shape=Msquare]
{body}
}}
"""


# -- parsing ----------------------------------------------------------------------


def test_parse_and_run_a_simple_linear_pipeline(workspace: Path) -> None:
    run_dir = _ok(workspace, _graph('A [prompt="a"]\nB [prompt="b"]\nstart -> A -> B -> done'))
    assert [n for n in _completed(run_dir) if n in ("A", "B")] == ["A", "B"]


def test_graph_level_goal_and_label_are_kept(workspace: Path) -> None:
    text = _graph(
        'A [prompt="Do: $goal"]\nstart -> A -> done',
        attrs='graph [goal="Ship the widget", label="Widget pipeline"]',
    )
    run_dir = _ok(workspace, text)
    assert (run_dir / "A" / "prompt.md").read_text(encoding="utf-8") == "Do: Ship the widget"
    assert read_json(run_dir / "manifest.json")["goal"] == "Ship the widget"


def test_multi_line_node_attributes(workspace: Path) -> None:
    body = """A [
        label="Step A",
        prompt="line one",
        simulate="fail,success",
        max_retries=1
    ]
    start -> A -> done"""
    run_dir = _ok(workspace, _graph(body))
    assert (run_dir / "A" / "prompt.md").read_text(encoding="utf-8") == "line one"
    assert completed_stages(run_dir).count("A") >= 1


# -- validation -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ('digraph p { done [shape=Msquare]\n A [prompt="a"]\n A -> done }', "start_node"),
        ('digraph p { start [shape=Mdiamond]\n A [prompt="a"]\n start -> A }', "terminal_node"),
        (_graph('A [prompt="a"]\nlonely [prompt="x"]\nstart -> A -> done'), "reachability"),
    ],
)
def test_structural_problems_are_reported_and_nothing_runs(
    workspace: Path, text: str, rule: str
) -> None:
    result, run_dir = _run(workspace, text)
    assert result.exit_code == 2
    assert f" {rule}: " in result.stderr
    assert run_dir is None


# -- execution --------------------------------------------------------------------


def test_linear_three_node_pipeline_end_to_end(workspace: Path) -> None:
    body = 'a [prompt="1"]\nb [prompt="2"]\nc [prompt="3"]\nstart -> a -> b -> c -> done'
    run_dir = _ok(workspace, _graph(body))
    assert _completed(run_dir)[:4] == ["start", "a", "b", "c"]
    for node in "abc":
        assert read_json(run_dir / node / "status.json")["outcome"] == "success"


BRANCHING = """check [prompt="check", simulate="{status}"]
    good [prompt="good"]
    bad  [prompt="bad"]
    start -> check
    check -> good [condition="outcome=success"]
    check -> bad  [condition="outcome=fail"]
    good -> done
    bad -> done"""


@pytest.mark.parametrize(
    ("status", "taken", "skipped"), [("success", "good", "bad"), ("fail", "bad", "good")]
)
def test_conditional_branching_on_success_and_fail(
    workspace: Path, status: str, taken: str, skipped: str
) -> None:
    run_dir = _ok(workspace, _graph(BRANCHING.format(status=status)))
    assert taken in _completed(run_dir)
    assert skipped not in _completed(run_dir)
    assert not (run_dir / skipped).exists()


SPEC_BRANCH = """digraph Branch {{
    graph [goal="Implement and validate a feature"]
    rankdir=LR
    node [shape=box, timeout="900s"]

    start     [shape=Mdiamond, label="Start"]
    exit      [shape=Msquare, label="Exit"]
    plan      [label="Plan", prompt="Plan the implementation"]
    implement [label="Implement", prompt="Implement the plan"]
    validate  [label="Validate", prompt="Run tests", simulate="{plan}"]
    gate      [shape=diamond, label="Tests passing?"]

    start -> plan -> implement -> validate -> gate
    gate -> exit      [label="Yes", condition="outcome=success"]
    gate -> implement [label="No", condition="outcome!=success"]
}}
"""


@pytest.mark.parametrize("first", ["fail", "partial_success"])
def test_spec_branch_example_loops_back_once_when_validate_does_not_succeed(
    workspace: Path, first: str
) -> None:
    run_dir = _ok(workspace, SPEC_BRANCH.format(plan=f"{first},success"))
    assert _completed(run_dir) == [
        "start", "plan", "implement", "validate", "gate",
        "implement", "validate", "gate", "exit",
    ]  # fmt: skip
    gate = read_json(run_dir / "gate" / "status.json")
    assert gate["outcome"] == "success"
    assert gate["notes"] == "routing on the outcome of validate: success"
    rows = [e for e in events(run_dir) if e["type"] in ("stage_failed", "stage_completed")]
    first_gate = next(e for e in rows if e["name"] == "gate")
    assert "routing on the outcome of validate: " + first in str(first_gate)


def test_spec_branch_example_goes_straight_to_exit_when_validate_succeeds(
    workspace: Path,
) -> None:
    run_dir = _ok(workspace, SPEC_BRANCH.format(plan="success"))
    assert _completed(run_dir) == ["start", "plan", "implement", "validate", "gate", "exit"]


def test_example_branching_pipeline_runs(workspace: Path) -> None:
    source = Path(__file__).parents[2] / "examples" / "branching.dot"
    run_dir = _ok(workspace, source.read_text(encoding="utf-8"))
    assert _completed(run_dir)[-2:] == ["gate", "exit"]


def test_retry_on_failure_with_max_retries_2(workspace: Path) -> None:
    run_dir = _ok(
        workspace,
        _graph('flaky [prompt="x", max_retries=2, simulate="fail,fail,success"]\n'
               "start -> flaky -> done"),
        "--quiet",
    )  # fmt: skip
    started = [e for e in events(run_dir) if e["type"] == "stage_started" and e["name"] == "flaky"]
    assert [e["attempt"] for e in started] == [1, 2, 3]


def test_retries_exhausted_fails_the_run_after_three_attempts(workspace: Path) -> None:
    result, run_dir = _run(
        workspace,
        _graph('flaky [prompt="x", max_retries=2, simulate="fail"]\nstart -> flaky -> done'),
    )
    assert result.exit_code == 1
    assert run_dir is not None
    row = next(line.split() for line in result.stdout.splitlines() if line.startswith("flaky "))
    assert row[1:3] == ["fail", "3"]


GATED = """impl   [prompt="impl", goal_gate=true, simulate="{plan}"{retry}]
    report [prompt="report"]
    start -> impl
    impl -> report [condition="outcome=success"]
    impl -> report [condition="outcome=fail"]
    report -> done"""


def test_goal_gate_blocks_exit_when_unsatisfied(workspace: Path) -> None:
    result, run_dir = _run(workspace, _graph(GATED.format(plan="fail", retry="")))
    assert result.exit_code == 1
    assert "impl" in result.stdout.splitlines()[-1]
    assert run_dir is not None
    assert "done" not in _completed(run_dir)


def test_goal_gate_sends_the_run_back_to_its_retry_target(workspace: Path) -> None:
    text = _graph(GATED.format(plan="fail,success", retry=", retry_target=impl"))
    run_dir = _ok(workspace, text)
    assert started_stages(run_dir).count("impl") == 2


def test_goal_gate_allows_exit_when_satisfied(workspace: Path) -> None:
    run_dir = _ok(workspace, _graph(GATED.format(plan="success", retry="")))
    assert {"impl", "report"} <= set(_completed(run_dir))
    assert completed_stages(run_dir).count("impl") == 1


HUMAN = """gate [shape=hexagon, label="Ship it?"]
    ship [prompt="ship"]
    fix  [prompt="fix"]
    start -> gate
    gate -> ship [label="[A] Approve"]
    gate -> fix  [label="[F] Fix"]
    ship -> done
    fix -> done"""


@pytest.mark.parametrize(
    ("args", "answer", "taken", "skipped"),
    [
        (["--answers", "answers.txt"], "F", "fix", "ship"),
        (["--answers", "answers.txt"], "Approve", "ship", "fix"),
        (["--auto-approve"], "", "ship", "fix"),
    ],
)
def test_human_gate_routes_on_the_answer(
    workspace: Path, args: list[str], answer: str, taken: str, skipped: str
) -> None:
    write(workspace / "answers.txt", f"{answer}\n")
    run_dir = _ok(workspace, _graph(HUMAN), *args)
    assert taken in _completed(run_dir)
    assert skipped not in _completed(run_dir)


def _routes(body: str) -> str:
    return _graph(f'a [prompt="a"]\nx [prompt="x"]\ny [prompt="y"]\n{body}\nx -> done\ny -> done')


@pytest.mark.parametrize(
    ("edges", "taken", "skipped"),
    [
        ('start -> a\na -> y [weight=10]\na -> x [condition="outcome=success"]', "x", "y"),
        ("start -> a\na -> x [weight=1]\na -> y [weight=5]", "y", "x"),
        ("start -> a\na -> y\na -> x", "x", "y"),
    ],
    ids=["condition-beats-weight", "weight-breaks-ties", "lexical-fallback"],
)
def test_edge_selection(workspace: Path, edges: str, taken: str, skipped: str) -> None:
    run_dir = _ok(workspace, _routes(edges))
    assert taken in _completed(run_dir)
    assert skipped not in _completed(run_dir)


def test_context_updates_from_one_node_are_visible_to_the_next(workspace: Path) -> None:
    body = """probe [shape=parallelogram, tool_command="printf ready"]
    pick  [shape=diamond]
    yes   [prompt="yes"]
    no    [prompt="no"]
    start -> probe -> pick
    pick -> yes [condition="context.tool.output=ready"]
    pick -> no  [condition="context.tool.output!=ready"]
    yes -> done
    no -> done"""
    run_dir = _ok(workspace, _graph(body))
    assert "yes" in _completed(run_dir)
    assert "no" not in _completed(run_dir)


def test_checkpoint_save_and_resume_produces_the_same_result(workspace: Path) -> None:
    mark = f"29.{uuid.uuid4().int % 10**9:09d}"
    body = f"""a [shape=parallelogram, tool_command="echo a >> side.txt"]
    b [shape=parallelogram, tool_command="[ -f go ] || sleep {mark}"]
    c [prompt="c"]
    start -> a -> b -> c -> done"""
    text = _graph(body)
    try:
        stopped, run_dir = _run(workspace, text, "--timeout", "1s")
    finally:
        kill_all(mark)
    assert stopped.exit_code == 124, stopped.output
    assert run_dir is not None
    write(workspace / "go", "")
    resumed = invoke(["resume", str(run_dir), "--quiet"])
    assert resumed.exit_code == 0, resumed.output

    write(workspace / "clean.dot", text)
    clean = invoke(["run", "clean.dot", "--logs-dir", "clean/{timestamp}-{graph}", "--quiet"])
    assert clean.exit_code == 0
    clean_dir = only_run_dir(workspace / "clean")
    assert _completed(run_dir) == _completed(clean_dir)
    assert (workspace / "side.txt").read_text(encoding="utf-8") == "a\na\n"


def test_stylesheet_applies_a_model_to_nodes_by_shape(workspace: Path) -> None:
    """The stylesheet gives box nodes an Anthropic model, so that key is the one missing."""
    sheet = "box { llm_provider: anthropic; llm_model: claude-test; }"
    text = _graph('a [prompt="a"]\nstart -> a -> done', attrs=f'graph [model_stylesheet="{sheet}"]')
    result, run_dir = _run(workspace, text, "--backend", "llm")
    assert result.exit_code == 2, result.output
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert run_dir is None
    # Naming a model in the graph is enough to make llm the default backend.
    implicit, run_dir = _run(workspace, text)
    assert implicit.exit_code == 2, implicit.output
    assert "ANTHROPIC_API_KEY" in implicit.stderr
    assert run_dir is None


def test_prompt_goal_expansion(workspace: Path) -> None:
    text = _graph('a [prompt="Goal is $goal."]\nstart -> a -> done', attrs='graph [goal="tea"]')
    run_dir = _ok(workspace, text)
    assert (run_dir / "a" / "prompt.md").read_text(encoding="utf-8") == "Goal is tea."


def test_parallel_fan_out_and_fan_in_complete(workspace: Path) -> None:
    body = """fan  [shape=component]
    join [shape=tripleoctagon]
    b1 [prompt="1"]
    b2 [prompt="2"]
    b3 [prompt="3"]
    after [prompt="after"]
    start -> fan
    fan -> b1 -> join
    fan -> b2 -> join
    fan -> b3 -> join
    join -> after -> done"""
    run_dir = _ok(workspace, _graph(body))
    completed = set(_completed(run_dir))
    assert {"fan", "join", "after"} <= completed
    assert {"b1", "b2", "b3"} <= set(completed_stages(run_dir))


def test_pipeline_with_more_than_ten_nodes(workspace: Path) -> None:
    chain = " -> ".join(f"n{i}" for i in range(12))
    nodes = "\n".join(f'n{i} [prompt="step {i}"]' for i in range(12))
    run_dir = _ok(workspace, _graph(f"{nodes}\nstart -> {chain} -> done"))
    assert [n for n in _completed(run_dir) if n.startswith("n")] == [f"n{i}" for i in range(12)]


class _Stamp:
    """A custom handler: writes a file and sets a context value."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        (env.stage_dir / "stamp.txt").write_text(node.id, encoding="utf-8")
        return Outcome.success(notes="stamped", stamped=node.id)


@pytest.mark.anyio
async def test_custom_handler_registration_and_execution(workspace: Path) -> None:
    """Custom handlers are a library feature (the CLI has no plugin option)."""
    path = write(
        workspace / "p.dot",
        _graph('s [type="stamp", prompt="x"]\nstart -> s -> done'),
    )
    registry = default_registry()
    registry.register("stamp", _Stamp())
    settings = resolve_settings({"logs_dir": "runs/{timestamp}-{graph}"}, env={}, cwd=workspace)
    graph = prepare_run_graph(path)
    options = RunOptions(settings=settings, registry=registry, backend=SimulateBackend())
    result = await run_pipeline(graph, path, options)
    assert result.status == "success"
    assert (result.run_dir / "s" / "stamp.txt").read_text(encoding="utf-8") == "s"
    assert read_json(result.run_dir / "checkpoint.json")["context"]["stamped"] == "s"


# -- 11.13 integration smoke test ---------------------------------------------------

SMOKE = """digraph test_pipeline {
    graph [goal="Create a hello world Python script"]

    start       [shape=Mdiamond]
    plan        [shape=box, prompt="Plan how to create a hello world script for: $goal"]
    implement   [shape=box, prompt="Write the code based on the plan", goal_gate=true]
    review      [shape=box, prompt="Review the code for correctness"]
    done        [shape=Msquare]

    start -> plan
    plan -> implement
    implement -> review [condition="outcome=success"]
    implement -> plan   [condition="outcome=fail", label="Retry"]
    review -> done      [condition="outcome=success"]
    review -> implement [condition="outcome=fail", label="Fix"]
}
"""


def test_integration_smoke(workspace: Path) -> None:
    result, run_dir = _run(workspace, SMOKE)
    assert result.exit_code == 0, result.output
    assert run_dir is not None
    for node in ("plan", "implement", "review"):
        for name in ("prompt.md", "response.md", "status.json"):
            assert (run_dir / node / name).is_file(), f"{node}/{name}"
    assert read_json(run_dir / "implement" / "status.json")["outcome"] == "success"
    prompt = (run_dir / "plan" / "prompt.md").read_text(encoding="utf-8")
    assert prompt.endswith("for: Create a hello world Python script")
    checkpoint = read_json(run_dir / "checkpoint.json")
    assert checkpoint["current_node"] == "done"
    assert {"plan", "implement", "review"} <= set(checkpoint["completed_nodes"])
    rows = {line.split()[0] for line in result.stdout.splitlines() if line.strip()}
    assert {"plan", "implement", "review"} <= rows
