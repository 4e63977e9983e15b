"""Parallel fan-out and fan-in."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from attractor.dot.graph import Graph, Node
from attractor.events import Event, ParallelBranchStarted
from attractor.handlers import parallel
from attractor.handlers.base import StageEnv
from attractor.handlers.builtin import default_registry
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome
from tests.engine.enginekit import Recorder, executed, graph_of, run

pytestmark = pytest.mark.anyio

FAN = (
    "fan [shape=component]\n join [shape=tripleoctagon]\n after\n"
    "start -> fan\n fan -> a\n fan -> b\n a -> join\n b -> join\n join -> after -> done\n"
)


async def test_fan_out_runs_every_branch_then_continues_at_the_fan_in(tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    class Peek:
        async def execute(
            self, node: Node, context: Context, graph: Graph, env: StageEnv
        ) -> Outcome:
            seen["results"] = context.get("parallel.results")
            seen["best"] = context.get("parallel.fan_in.best_id")
            seen["leak"] = context.get("last_stage")
            return Outcome.success()

    registry = default_registry()
    registry.register("peek", Peek())
    graph = graph_of(FAN.replace("after\n", "after [type=peek]\n", 1))
    recorder = Recorder()
    result = await run(graph, tmp_path, registry=registry, observers=[recorder])
    assert result.status == "success"
    nodes = executed(result)
    # A summary row is added when a node finishes: the branches finish before "fan".
    assert nodes[0] == "start" and sorted(nodes[1:3]) == ["a", "b"]
    assert nodes[3:] == ["fan", "join", "after", "done"]
    results = seen["results"]
    assert isinstance(results, list)
    assert [(r["id"], r["status"]) for r in results] == [("a", "success"), ("b", "success")]
    assert results[0]["last_response"] == "[Simulated] Response for stage: a"
    assert seen["best"] == "a"
    # Branch context changes stay in the branch clones.
    assert seen["leak"] != "a" and seen["leak"] != "b"
    assert recorder.of("parallel_started")[0]["branch_count"] == 2
    assert len(recorder.of("parallel_branch_completed")) == 2
    done = recorder.of("parallel_completed")[0]
    assert (done["success_count"], done["failure_count"]) == (2, 0)


async def test_wait_all_with_a_failed_branch_is_partial_and_fan_in_picks_the_winner(
    tmp_path: Path,
) -> None:
    graph = graph_of(FAN.replace("after\n", 'after\n a [simulate="fail"]\n', 1))
    result = await run(graph, tmp_path)
    assert result.status == "success"
    by_node = {r.node: r for r in result.node_results}
    assert by_node["fan"].status == "partial_success"
    assert by_node["join"].note == "Selected best candidate: b"


async def test_every_branch_failing_fails_the_fan_in(tmp_path: Path) -> None:
    graph = graph_of(
        FAN.replace("after\n", 'after\n a [simulate="fail"]\n b [simulate="fail"]\n', 1)
    )
    result = await run(graph, tmp_path)
    assert result.status == "fail"
    assert "every parallel branch failed" in result.failure_reason


async def test_first_success_cancels_the_slower_branches(tmp_path: Path) -> None:
    graph = graph_of(
        "fan [shape=component, join_policy=first_success]\n join [shape=tripleoctagon]\n"
        'fast [shape=parallelogram, tool_command="true"]\n'
        'slow [shape=parallelogram, tool_command="echo started > slow.txt; sleep 30; '
        'echo finished >> slow.txt"]\n'
        "start -> fan\n fan -> slow\n fan -> fast\n slow -> join\n fast -> join\n"
        "join -> done\n"
    )
    result = await run(graph, tmp_path, timeout=20)
    assert result.status == "success"
    by_node = {r.node: r for r in result.node_results}
    assert "slow" not in by_node  # cancelled before it could finish
    slow = tmp_path / "slow.txt"  # absent when it was cancelled before its shell started
    assert not slow.exists() or "finished" not in slow.read_text()
    assert by_node["join"].note == "Selected best candidate: fast"


async def test_max_parallel_bounds_concurrent_branches(tmp_path: Path) -> None:
    import anyio

    running = 0
    peak = 0

    class Track:
        async def execute(
            self, node: Node, context: Context, graph: Graph, env: StageEnv
        ) -> Outcome:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await anyio.sleep(0.01)
            running -= 1
            return Outcome.success()

    registry = default_registry()
    registry.register("track", Track())
    branches = "".join(f"b{i} [type=track]\n fan -> b{i}\n b{i} -> join\n" for i in range(6))
    graph = graph_of(
        "fan [shape=component, max_parallel=2]\n join [shape=tripleoctagon]\n"
        f"start -> fan\n{branches} join -> done\n"
    )
    result = await run(graph, tmp_path, registry=registry)
    assert result.status == "success"
    assert peak == 2


async def test_multi_node_branches_run_to_the_fan_in(tmp_path: Path) -> None:
    graph = graph_of(
        "fan [shape=component]\n join [shape=tripleoctagon]\n"
        "start -> fan\n fan -> a1 -> a2 -> join\n fan -> b1 -> join\n join -> done\n"
    )
    result = await run(graph, tmp_path)
    assert result.status == "success"
    assert sorted(executed(result)) == sorted(["start", "fan", "a1", "a2", "b1", "join", "done"])


@pytest.mark.parametrize(
    ("branches", "max_parallel", "held"),
    [(parallel.BURST, parallel.BURST, True), (2, 2, False), (parallel.BURST, 2, False)],
    ids=["burst", "two", "two-at-a-time"],
)
async def test_a_burst_of_branch_starts_holds_the_collector_back_and_the_run_ends_with_it_on(
    tmp_path: Path, branches: int, max_parallel: int, held: bool
) -> None:
    was = gc.isenabled()
    gc.enable()
    collecting: list[bool] = []

    def note(event: Event) -> None:
        if isinstance(event, ParallelBranchStarted):
            collecting.append(gc.isenabled())

    edges = "".join(f"  fan -> b{i} -> join\n" for i in range(branches))
    body = (
        f"fan [shape=component, max_parallel={max_parallel}]\n join [shape=tripleoctagon]\n"
        f"start -> fan\n{edges} join -> done\n"
    )
    try:
        result = await run(graph_of(body), tmp_path, observers=[note])
        after = gc.isenabled()
    finally:
        if not was:
            gc.disable()
    assert result.status == "success"
    # Every branch started while the collector waited, or none did (a small fan-out,
    # or one that starts its branches two at a time); on again once the run is over.
    assert len(collecting) == branches
    assert collecting[: min(branches, max_parallel)] == [not held] * min(branches, max_parallel)
    assert after
