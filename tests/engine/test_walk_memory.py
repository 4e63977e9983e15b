"""What a walk keeps of the nodes it ran: enough to route and resume, not every outcome.

A long run must not grow by each node's outcome (its context updates, details
and notes): goal gates read only a node's last status, which is what a resumed
run rebuilds from its checkpoint too.
"""

from __future__ import annotations

from attractor.engine.loop import apply_outcome
from attractor.engine.routing import unsatisfied_goal_gate
from attractor.engine.state import Walk
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from tests.engine.enginekit import graph_of


def test_a_walk_keeps_each_nodes_status_not_its_outcome() -> None:
    graph = graph_of("  check [goal_gate=true]\n  start -> check -> done")
    walk = Walk(Context())
    big = Outcome(
        StageStatus.FAIL,
        failure_reason="tests failed",
        notes="x" * 10_000,
        details={"report": "y" * 10_000},
        context_updates={"result": "z"},
    )
    apply_outcome(walk, graph.node("check"), big)
    kept = walk.outcomes["check"]
    assert kept.status is StageStatus.FAIL
    assert kept.notes == "" and kept.details == {} and kept.context_updates == {}
    assert walk.context.get("result") == "z"  # the updates went to the context
    gate = unsatisfied_goal_gate(graph, walk.outcomes)
    assert gate is not None and gate.id == "check"
