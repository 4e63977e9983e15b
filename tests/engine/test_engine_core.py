"""The core loop on real graphs with the simulate backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.dot.graph import Graph, Node
from attractor.handlers.backend import StageRequest
from attractor.handlers.base import StageEnv
from attractor.handlers.builtin import default_registry
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.llm.types import Usage
from tests.engine.enginekit import Recorder, executed, graph_of, run, status_json

pytestmark = pytest.mark.anyio


async def test_linear_pipeline_runs_every_node_and_writes_stage_files(tmp_path: Path) -> None:
    graph = graph_of('a [prompt="Do $goal"]\n b\n start -> a -> b -> done', attrs='goal="ship it"')
    result = await run(graph, tmp_path)
    assert result.status == "success" and result.exit_code == 0
    assert executed(result) == ["start", "a", "b", "done"]
    stage = result.run_dir / "a"
    assert (stage / "prompt.md").read_text() == "Do ship it"
    assert (stage / "response.md").read_text() == "[Simulated] Response for stage: a"
    assert status_json(result, "a")["outcome"] == "success"
    # b starts a fresh conversation (default fidelity compact): a preamble, then its prompt.
    later = (stage.parent / "b" / "prompt.md").read_text()
    assert later.endswith("\n---\n\nb") and "- a: success" in later


async def test_conditional_branching_follows_the_failure_path(tmp_path: Path) -> None:
    graph = graph_of(
        'work [simulate="fail"]\n ok\n fixit\n'
        "start -> work\n"
        'work -> ok [condition="outcome=success"]\n'
        'work -> fixit [condition="outcome=fail"]\n'
        "ok -> done\n fixit -> done"
    )
    result = await run(graph, tmp_path)
    assert result.status == "success"
    assert executed(result) == ["start", "work", "fixit", "done"]


async def test_failure_without_a_route_fails_the_pipeline_with_the_reason(tmp_path: Path) -> None:
    graph = graph_of('work [simulate="fail"]\n start -> work -> done')
    result = await run(graph, tmp_path)
    assert result.status == "fail" and result.exit_code == 1
    assert result.failure_reason == "work failed: simulated fail (execution 1)"
    assert "done" not in executed(result)


async def test_max_retries_two_means_up_to_three_runs(tmp_path: Path) -> None:
    graph = graph_of(
        'flaky [max_retries=2, simulate="fail,retry,success"]\n start -> flaky -> done'
    )
    recorder = Recorder()
    result = await run(graph, tmp_path, observers=[recorder])
    assert result.status == "success"
    flaky = result.node_results[1]
    assert (flaky.node, flaky.attempts, flaky.status) == ("flaky", 3, "success")
    assert [e["will_retry"] for e in recorder.of("stage_failed")] == [True, True]
    assert [e["attempt"] for e in recorder.of("stage_retrying")] == [2, 3]


async def test_retries_exhausted_then_failure_routing_applies(tmp_path: Path) -> None:
    graph = graph_of(
        'flaky [max_retries=1, simulate="fail", retry_target=plan]\n plan\n'
        "start -> plan -> flaky -> done",
        attrs="",
    )
    graph.node("plan").set("max_visits", "2")
    result = await run(graph, tmp_path)
    assert result.status == "fail"
    assert [r.attempts for r in result.node_results if r.node == "flaky"] == [2, 2]
    assert "max_visits=2" in result.failure_reason


async def test_graph_default_max_retries_and_legacy_alias(tmp_path: Path) -> None:
    for attr in ("default_max_retries=1", "default_max_retry=1"):
        graph = graph_of('w [simulate="fail,success"]\n start -> w -> done', attrs=attr)
        result = await run(graph, tmp_path)
        assert result.status == "success", attr
        assert result.node_results[1].attempts == 2


async def test_exhausted_retry_becomes_partial_success_with_allow_partial(tmp_path: Path) -> None:
    graph = graph_of('w [max_retries=1, simulate="retry", allow_partial=true]\n start -> w -> done')
    result = await run(graph, tmp_path)
    assert result.status == "success"
    assert result.node_results[1].status == "partial_success"
    assert status_json(result, "w")["notes"] == "retries exhausted, partial accepted"


async def test_exhausted_retry_without_allow_partial_is_fail(tmp_path: Path) -> None:
    graph = graph_of('w [max_retries=1, simulate="retry"]\n start -> w -> done')
    result = await run(graph, tmp_path)
    assert result.status == "fail"
    assert result.node_results[1].status == "fail"


async def test_goal_gate_blocks_exit_and_routes_to_retry_target(tmp_path: Path) -> None:
    graph = graph_of(
        'impl [goal_gate=true, simulate="partial_success,fail,success", retry_target=impl]\n'
        "check\n start -> impl -> check -> done\n"
    )
    graph.node("impl").set("simulate", "fail,success")
    graph.add_edge("impl", "check", {"condition": "outcome=fail"}, graph.pos)
    result = await run(graph, tmp_path)
    assert result.status == "success"
    assert executed(result) == ["start", "impl", "check", "impl", "check", "done"]


async def test_goal_gate_without_retry_target_fails_the_pipeline(tmp_path: Path) -> None:
    graph = graph_of(
        'impl [goal_gate=true, simulate="fail"]\n'
        'start -> impl\n impl -> done [condition="outcome=fail"]'
    )
    result = await run(graph, tmp_path)
    assert result.status == "fail"
    assert "goal gate impl is not satisfied" in result.failure_reason
    assert "done" not in executed(result)


async def test_goal_gate_uses_graph_level_retry_target(tmp_path: Path) -> None:
    graph = graph_of(
        'impl [goal_gate=true, simulate="fail,success"]\n fix\n'
        'start -> fix -> impl\n impl -> done [condition="outcome=fail"]\n impl -> done',
        attrs="retry_target=fix",
    )
    result = await run(graph, tmp_path)
    assert result.status == "success"
    assert executed(result) == ["start", "fix", "impl", "fix", "impl", "done"]


async def test_context_updates_are_visible_to_later_nodes(tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    class Writer:
        async def execute(
            self, node: Node, context: Context, graph: Graph, env: StageEnv
        ) -> Outcome:
            return Outcome(StageStatus.SUCCESS, context_updates={"context.answer": 42})

    class Reader:
        async def execute(
            self, node: Node, context: Context, graph: Graph, env: StageEnv
        ) -> Outcome:
            seen.update(
                answer=context.get("context.answer"),
                goal=context.get("graph.goal"),
                seed=context.get("ticket"),
                outcome=context.get("outcome"),
                current=context.get("current_node"),
            )
            return Outcome.success()

    registry = default_registry()
    registry.register("writer", Writer())
    registry.register("reader", Reader())
    graph = graph_of(
        "w [type=writer]\n r [type=reader]\n start -> w -> r -> done", attrs='goal="g"'
    )
    result = await run(graph, tmp_path, registry=registry, context_seed={"ticket": "T-1"})
    assert result.status == "success"
    assert seen == {"answer": 42, "goal": "g", "seed": "T-1", "outcome": "success", "current": "r"}


async def test_custom_handler_returning_none_needs_auto_status(tmp_path: Path) -> None:
    class Silent:
        async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> None:
            return None

    registry = default_registry()
    registry.register("silent", Silent())
    ok = graph_of("s [type=silent, auto_status=true]\n start -> s -> done")
    assert (await run(ok, tmp_path, registry=registry)).status == "success"
    bad = graph_of("s [type=silent]\n start -> s -> done")
    result = await run(bad, tmp_path, registry=registry)
    assert result.status == "fail" and "auto_status" in result.failure_reason


async def test_handler_exception_becomes_fail_with_its_message(tmp_path: Path) -> None:
    class Broken:
        async def execute(
            self, node: Node, context: Context, graph: Graph, env: StageEnv
        ) -> Outcome:
            raise ValueError("disk on fire")

    registry = default_registry()
    registry.register("broken", Broken())
    graph = graph_of("b [type=broken]\n start -> b -> done")
    result = await run(graph, tmp_path, registry=registry)
    assert result.status == "fail"
    assert result.failure_reason == "b failed: disk on fire"


async def test_max_visits_failure_routes_to_a_replanning_node(tmp_path: Path) -> None:
    graph = graph_of(
        'loop [max_visits=2, simulate="fail"]\n replan\n'
        "start -> loop\n"
        'loop -> loop [condition="outcome=fail && context.internal.retry_count.loop!=9"]\n'
        "loop -> done\n"
    )
    # loop fails, its fail edge re-enters it; the third entry exceeds max_visits.
    graph.node("loop").set("retry_target", "replan")
    graph.add_edge("replan", "done", {}, graph.pos)
    result = await run(graph, tmp_path)
    assert result.status == "fail"
    assert result.failure_reason == "loop failed: entered 3 times, more than max_visits=2"
    # Two runs, then a third entry that fails without running: its fail edge leads
    # straight back into itself, exhausted, so the pipeline ends.
    assert [r.attempts for r in result.node_results if r.node == "loop"] == [1, 1, 0]


async def test_max_visits_exceeded_node_does_not_run_and_routes_normally(tmp_path: Path) -> None:
    graph = graph_of(
        "a [max_visits=1]\n gate [shape=diamond]\n replan\n"
        "start -> a -> gate\n"
        'gate -> a [condition="context.visited=yes"]\n'
        'gate -> done [condition="context.visited!=yes"]\n'
        'a -> replan [condition="outcome=fail"]\n replan -> done\n'
    )
    registry = default_registry()
    calls: list[tuple[str, int]] = []

    class Counting:
        async def run(self, request: StageRequest) -> str:
            calls.append((request.node.id, request.visit))
            return "ok"

        async def aclose(self) -> None:
            return None

    result = await run(
        graph, tmp_path, registry=registry, backend=Counting(), context_seed={"visited": "yes"}
    )
    assert calls == [("a", 1), ("replan", 1)]
    assert executed(result) == ["start", "a", "gate", "a", "replan", "done"]
    assert result.status == "success"
    assert "max_visits=1" in result.node_results[3].note


async def test_node_timeout_fails_with_a_readable_reason_and_routes(tmp_path: Path) -> None:
    graph = graph_of(
        'slow [shape=parallelogram, tool_command="sleep 30", timeout="100ms"]\n after\n'
        'start -> slow\n slow -> after [condition="outcome=fail"]\n after -> done'
    )
    result = await run(graph, tmp_path)
    assert result.status == "success"
    assert result.node_results[1].note == "timed out after 100ms"
    assert executed(result) == ["start", "slow", "after", "done"]


async def test_run_budget_exhaustion_ends_the_pipeline(tmp_path: Path) -> None:
    class Greedy:
        async def run(self, request: StageRequest) -> Outcome:
            while request.run_budget.take():
                pass
            request.run_budget.exhausted = True
            request.run_budget.spend(Usage(10, 5))
            return Outcome(
                StageStatus.PARTIAL_SUCCESS,
                details={"usage": {"input_tokens": 10, "output_tokens": 5}},
            )

        async def aclose(self) -> None:
            return None

    graph = graph_of("a\n b\n start -> a -> b -> done")
    result = await run(graph, tmp_path, backend=Greedy(), max_total_turns=3)
    assert result.status == "fail"
    assert result.failure_reason == ("run turn budget exhausted: 3 of 3 model requests (default)")
    assert executed(result) == ["start", "a"]
    assert result.usage == Usage(10, 5).to_json()
    assert result.node_results[1].usage == Usage(10, 5).to_json()
    assert status_json(result, "a")["usage"] == {"input_tokens": 10, "output_tokens": 5}


async def test_backend_error_is_a_fail_with_the_message(tmp_path: Path) -> None:
    class Failing:
        async def run(self, request: StageRequest) -> str:
            raise RuntimeError("model unreachable")

        async def aclose(self) -> None:
            return None

    graph = graph_of("a\n start -> a -> done")
    result = await run(graph, tmp_path, backend=Failing())
    assert result.failure_reason == "a failed: model unreachable"


async def test_ten_plus_node_pipeline_completes(tmp_path: Path) -> None:
    chain = " -> ".join(f"n{i}" for i in range(12))
    graph = graph_of(f"start -> {chain} -> done")
    result = await run(graph, tmp_path)
    assert result.status == "success"
    assert len(result.node_results) == 14


async def test_unknown_explicit_type_fails_that_node_clearly(tmp_path: Path) -> None:
    graph = graph_of("x [type=nosuch]\n start -> x -> done")
    result = await run(graph, tmp_path)
    assert result.status == "fail"
    assert "no handler is registered for type 'nosuch'" in result.failure_reason


async def test_a_conditional_node_forwarding_a_failure_is_not_retried(tmp_path: Path) -> None:
    graph = graph_of(
        'check [simulate="fail", max_retries=0]\n gate [shape=diamond]\n fix\n'
        "start -> check -> gate\n"
        'gate -> done [condition="outcome=success"]\n'
        'gate -> fix [condition="outcome=fail"]\n fix -> done',
        attrs="default_max_retries=3",
    )
    result = await run(graph, tmp_path)
    assert result.status == "success"
    assert [(r.node, r.status, r.attempts) for r in result.node_results][1:] == [
        ("check", "fail", 1),
        ("gate", "fail", 1),
        ("fix", "success", 1),
        ("done", "success", 1),
    ]
    gate = status_json(result, "gate")
    assert gate["notes"] == "routing on the outcome of check: fail"
    assert gate["failure_reason"] == (
        "routing on the outcome of check: fail (simulated fail (execution 1))"
    )


async def test_an_exhausted_node_entered_from_a_failure_routes_its_own_failure(
    tmp_path: Path,
) -> None:
    graph = graph_of(
        'a [max_visits=2]\n b [simulate="fail"]\n replan\n'
        "start -> a -> b\n"
        'b -> done [condition="outcome=success"]\n'
        'b -> a [condition="outcome=fail"]\n'
        'a -> replan [condition="outcome=fail"]\n replan -> done'
    )
    result = await run(graph, tmp_path)
    assert result.status == "success", result.failure_reason
    rows = [(r.node, r.status, r.attempts) for r in result.node_results]
    assert rows[1:] == [
        ("a", "success", 1),
        ("b", "fail", 1),
        ("a", "success", 1),
        ("b", "fail", 1),
        ("a", "fail", 0),
        ("replan", "success", 1),
        ("done", "success", 1),
    ]
    assert status_json(result, "a")["failure_reason"] == "entered 3 times, more than max_visits=2"


async def test_an_exhausted_node_whose_failure_leads_to_another_exhausted_node_ends(
    tmp_path: Path,
) -> None:
    graph = graph_of(
        'a [max_visits=1]\n b [max_visits=1, simulate="fail"]\n'
        "start -> a -> b\n"
        'b -> a [condition="outcome=fail"]\n'
        'a -> b [condition="outcome=fail"]\n b -> done'
    )
    result = await run(graph, tmp_path)
    assert result.status == "fail"
    assert result.failure_reason == "a failed: entered 2 times, more than max_visits=1"
    assert executed(result) == ["start", "a", "b", "a"]


async def test_re_entering_a_node_past_its_limit_a_second_time_ends_instead_of_spinning(
    tmp_path: Path,
) -> None:
    # a's max_visits failure goes to replan, which has no limit and leads back to
    # a: without a stop this would go round forever.
    graph = graph_of(
        'a [max_visits=1]\n replan\n b [simulate="fail"]\n'
        "start -> a -> b\n"
        'b -> a [condition="outcome=fail"]\n'
        'a -> replan [condition="outcome=fail"]\n replan -> a\n'
        'b -> done [condition="outcome=success"]'
    )
    result = await run(graph, tmp_path)
    assert result.status == "fail"
    assert result.failure_reason == "a failed: entered 3 times, more than max_visits=1"
    assert executed(result) == ["start", "a", "b", "a", "replan"]


async def test_no_retry_once_the_run_turn_budget_is_exhausted(tmp_path: Path) -> None:
    class SpendsTheBudget:
        calls = 0

        async def run(self, request: StageRequest) -> Outcome:
            SpendsTheBudget.calls += 1
            while request.run_budget.take():
                pass
            request.run_budget.exhausted = True
            return Outcome.fail("cut short: run turn budget exhausted")

        async def aclose(self) -> None:
            return None

    graph = graph_of("agent [max_retries=3]\n start -> agent -> done")
    recorder = Recorder()
    result = await run(
        graph, tmp_path, backend=SpendsTheBudget(), max_total_turns=2, observers=[recorder]
    )
    assert SpendsTheBudget.calls == 1
    assert recorder.of("stage_retrying") == []
    assert result.status == "fail"
    assert result.failure_reason == ("run turn budget exhausted: 2 of 2 model requests (default)")


async def test_a_manager_without_a_child_fails_instead_of_running_as_a_model(
    tmp_path: Path,
) -> None:
    graph = graph_of('boss [shape=house, label="Supervise"]\n start -> boss -> done')
    result = await run(graph, tmp_path)
    assert result.status == "fail"
    assert "boss has no stack.child_dotfile" in result.failure_reason
    assert not (result.run_dir / "boss" / "response.md").exists()


async def test_a_stage_that_removes_its_own_folder_still_gets_its_status_file(
    tmp_path: Path,
) -> None:
    graph = graph_of(
        'wipe [shape=parallelogram, tool_command="rm -rf \\"$ATTRACTOR_STAGE_DIR\\""]\n'
        "start -> wipe -> done"
    )
    result = await run(graph, tmp_path, sandbox="none")
    assert result.status == "success"
    # The engine writes status.json without looking for the folder first; when
    # the folder is gone it makes it again instead of losing the record.
    assert status_json(result, "wipe")["outcome"] == "success"
