"""Edge selection in five steps, failure routing and goal gates."""

from __future__ import annotations

from attractor.engine.routing import (
    END,
    goal_gate_target,
    next_step,
    normalize_label,
    select_edge,
    unsatisfied_goal_gate,
)
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from tests.engine.enginekit import graph_of

OK = Outcome(StageStatus.SUCCESS)
FAIL = Outcome(StageStatus.FAIL, failure_reason="x")


def test_normalize_label_strips_accelerators_case_and_space() -> None:
    assert normalize_label("  [Y] Yes, Deploy ") == "yes, deploy"
    assert normalize_label("Y) Yes") == "yes"
    assert normalize_label("Y - Yes") == "yes"
    assert normalize_label("Yes") == "yes"


def test_condition_match_wins_over_weight() -> None:
    graph = graph_of(
        'n -> heavy [weight=10]\n n -> cond [condition="outcome=success"]\n start -> n'
    )
    edge = select_edge(graph.node("n"), OK, Context())
    assert edge is not None and edge.target == "cond"


def test_preferred_label_beats_weight() -> None:
    graph = graph_of('n -> a [weight=5, label="Go"]\n n -> b [label="[R] Redo"]\n start -> n')
    outcome = Outcome(StageStatus.SUCCESS, preferred_label="redo")
    edge = select_edge(graph.node("n"), outcome, Context())
    assert edge is not None and edge.target == "b"


def test_suggested_next_ids_follow_the_label_step() -> None:
    graph = graph_of("n -> a [weight=5]\n n -> b\n start -> n")
    outcome = Outcome(StageStatus.SUCCESS, suggested_next_ids=("b",))
    edge = select_edge(graph.node("n"), outcome, Context())
    assert edge is not None and edge.target == "b"


def test_weight_breaks_ties_between_unconditional_edges() -> None:
    graph = graph_of("n -> a\n n -> b [weight=2]\n start -> n")
    edge = select_edge(graph.node("n"), OK, Context())
    assert edge is not None and edge.target == "b"


def test_a_fractional_weight_ranks_as_graphviz_reads_it() -> None:
    graph = graph_of(
        'n -> a [weight="1.5"]\n n -> b [weight=1]\n n -> c [weight="2.0"]\n start -> n'
    )
    assert [e.weight for e in graph.outgoing("n")] == [1.5, 1, 2]
    edge = select_edge(graph.node("n"), OK, Context())
    assert edge is not None and edge.target == "c"
    graph = graph_of('n -> a [weight="0.5"]\n n -> b\n start -> n')
    edge = select_edge(graph.node("n"), OK, Context())
    assert edge is not None and edge.target == "a"


def test_lexical_order_is_the_final_tiebreak() -> None:
    graph = graph_of("n -> zeta\n n -> alpha\n start -> n")
    edge = select_edge(graph.node("n"), OK, Context())
    assert edge is not None and edge.target == "alpha"


def test_conditions_see_context_values() -> None:
    graph = graph_of(
        'n -> a [condition="context.lang=py"]\n n -> b [condition="context.lang!=py"]\nstart -> n'
    )
    edge = select_edge(graph.node("n"), OK, Context({"context.lang": "py"}))
    assert edge is not None and edge.target == "a"


def test_fail_takes_the_fail_edge_not_the_unconditional_path() -> None:
    graph = graph_of('n -> next\n n -> fixit [condition="outcome=fail"]\n start -> n')
    step = next_step(graph.node("n"), FAIL, Context())
    assert (step.target, step.via) == ("fixit", "fail_edge")


def test_fail_uses_retry_target_then_fallback_then_ends() -> None:
    graph = graph_of("n [retry_target=r, fallback_retry_target=f]\n r\n f\n start -> n -> next")
    step = next_step(graph.node("n"), FAIL, Context())
    assert (step.target, step.via) == ("r", "retry_target")
    graph.node("n").attrs.pop("retry_target")
    assert next_step(graph.node("n"), FAIL, Context()).via == "fallback_retry_target"
    graph.node("n").attrs.pop("fallback_retry_target")
    assert next_step(graph.node("n"), FAIL, Context()) == END


def test_loop_restart_edge_is_flagged() -> None:
    graph = graph_of("n -> start [loop_restart=true]\n start -> n")
    assert next_step(graph.node("n"), OK, Context()).loop_restart


def test_goal_gates_and_their_targets() -> None:
    graph = graph_of(
        "g [goal_gate=true, fallback_retry_target=f]\n f\n h [goal_gate=true]\n"
        "start -> g -> h -> done",
        attrs="retry_target=f",
    )
    outcomes = {"g": OK, "h": FAIL}
    gate = unsatisfied_goal_gate(graph, outcomes)
    assert gate is not None and gate.id == "h"
    assert goal_gate_target(gate, graph) == "f"  # graph level
    assert goal_gate_target(graph.node("g"), graph) == "f"  # node fallback
    partial = Outcome(StageStatus.PARTIAL_SUCCESS)
    assert unsatisfied_goal_gate(graph, {"g": OK, "h": partial}) is None


def test_fail_ignores_matching_edges_that_do_not_test_the_outcome() -> None:
    graph = graph_of(
        'n -> deploy [condition="context.env=prod"]\n'
        'n -> other [condition="context.env!=prod"]\n start -> n'
    )
    context = Context({"env": "prod"})
    assert next_step(graph.node("n"), FAIL, context) == END
    assert next_step(graph.node("n"), OK, context).target == "deploy"


def test_fail_takes_an_outcome_edge_combined_with_context_clauses() -> None:
    graph = graph_of(
        'n -> deploy [condition="context.env=prod"]\n'
        'n -> fix [condition="outcome!=success && context.env=prod"]\n start -> n'
    )
    step = next_step(graph.node("n"), FAIL, Context({"env": "prod"}))
    assert (step.target, step.via) == ("fix", "fail_edge")


def test_a_single_edge_is_taken_whatever_the_outcome_prefers() -> None:
    graph = graph_of('n -> a [label="Go"]\n m -> b [condition="outcome=fail"]\n start -> n -> m')
    for outcome in (
        OK,
        Outcome(StageStatus.SUCCESS, preferred_label="other"),
        Outcome(StageStatus.PARTIAL_SUCCESS, suggested_next_ids=("elsewhere",)),
    ):
        edge = select_edge(graph.node("n"), outcome, Context())
        assert edge is not None and edge.target == "a"
    # One edge with a condition that does not hold is no edge to take.
    assert select_edge(graph.node("m"), OK, Context()) is None
