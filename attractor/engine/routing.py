"""Where the run goes after a node: edge selection, failure routing and goal gates.

Edge selection takes the first of five steps that yields an edge:

1. edges whose ``condition`` holds (best by weight, then target id);
2. the unconditional edge whose label matches the outcome's preferred label;
3. the first unconditional edge to one of the outcome's suggested next ids;
4. the unconditional edge with the highest weight;
5. among equal weights, the target id that sorts first.

A FAIL outcome follows only a matching edge whose condition tests ``outcome``
(a "fail edge", such as ``outcome=fail`` or ``outcome!=success && context.x=y``),
else a plain edge into a conditional (diamond) node, which exists to route on
the outcome, else the node's ``retry_target``, else its
``fallback_retry_target``. It never slips onto another unconditional edge, nor
onto an edge that only tests the context (``context.env=prod`` says where to go
when the step worked, not when it failed); see docs/engine.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from attractor.dot.conditions import condition_keys, evaluate
from attractor.dot.graph import Edge, Graph, Node, normalize_label
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.valueclass import frozen

CONDITIONAL = "conditional"


def best_by_weight(edges: Iterable[Edge]) -> Edge | None:
    """Highest weight first; equal weights go to the target id that sorts first."""
    if isinstance(edges, list) and len(edges) < 2:  # most nodes: one edge, nothing to rank
        return edges[0] if edges else None
    ranked = sorted(edges, key=lambda e: (-e.weight, e.target))
    return ranked[0] if ranked else None


def select_edge(node: Node, outcome: Outcome, context: Context) -> Edge | None:
    """The edge to follow after ``node`` finished with ``outcome`` (five steps)."""
    edges = node.outgoing()
    if not edges:
        return None
    if len(edges) == 1 and not edges[0].condition:
        return edges[0]  # each of the steps below would choose it
    matched = [
        e for e in edges if e.condition and evaluate_condition(e.condition, outcome, context)
    ]
    if matched:
        return best_by_weight(matched)
    plain = [e for e in edges if not e.condition]
    if outcome.preferred_label:
        wanted = normalize_label(outcome.preferred_label)
        for edge in plain:
            if normalize_label(edge.label) == wanted:
                return edge
    for target in outcome.suggested_next_ids:
        for edge in plain:
            if edge.target == target:
                return edge
    return best_by_weight(plain)


@frozen
class Step:
    """The next move: go to ``target`` (how: ``via``), or stop when ``target`` is None."""

    target: str | None
    #: edge | fail_edge | to_conditional | retry_target | fallback_retry_target | jump
    via: str = "edge"
    loop_restart: bool = False
    #: The edge followed, when the move follows one.
    edge: Edge | None = None


END = Step(None, "end")


def next_step(node: Node, outcome: Outcome, context: Context) -> Step:
    """Where to go after ``node``: a jump, an edge, a failure route, or END."""
    if outcome.jump_to:
        return Step(outcome.jump_to, "jump")
    if outcome.status == StageStatus.FAIL:
        return failure_step(node, outcome, context)
    edge = select_edge(node, outcome, context)
    if edge is None:
        return END
    return Step(edge.target, "edge", bool(edge.get("loop_restart")), edge)


def is_fail_edge(edge: Edge) -> bool:
    """Whether a failure may follow ``edge``: its condition tests ``outcome``."""
    return bool(edge.condition) and "outcome" in condition_keys(edge.condition)


def failure_step(node: Node, outcome: Outcome, context: Context) -> Step:
    """Fail edge, then retry_target, then fallback_retry_target, else END."""
    matched = [
        e
        for e in node.outgoing()
        if is_fail_edge(e) and evaluate_condition(e.condition, outcome, context)
    ]
    best = best_by_weight(matched)
    if best is not None:
        return Step(best.target, "fail_edge", bool(best.get("loop_restart")), best)
    # The one plain edge a failure may take: into a conditional node, which
    # exists to look at the outcome and route on it.
    to_conditional = best_by_weight(
        e
        for e in node.outgoing()
        if not e.condition and node.graph.node(e.target).handler_type == CONDITIONAL
    )
    if to_conditional is not None:
        return Step(to_conditional.target, "to_conditional", edge=to_conditional)
    for attr in ("retry_target", "fallback_retry_target"):
        target = str(node.get(attr) or "").strip()
        if target and node.graph.has_node(target):
            return Step(target, attr)
    return END


def unsatisfied_goal_gate(graph: Graph, outcomes: Mapping[str, Outcome]) -> Node | None:
    """The first visited goal-gate node whose last outcome was not a success."""
    for node_id, outcome in outcomes.items():
        if not graph.has_node(node_id):
            continue
        node = graph.node(node_id)
        if node.get("goal_gate") and not outcome.status.is_success:
            return node
    return None


def goal_gate_target(gate: Node, graph: Graph) -> str | None:
    """Node retry_target, node fallback, graph retry_target, graph fallback; else None."""
    for source in (gate, graph):
        for attr in ("retry_target", "fallback_retry_target"):
            target = str(source.get(attr) or "").strip()
            if target and graph.has_node(target):
                return target
    return None


def evaluate_condition(text: str, outcome: Outcome, context: Context) -> bool:
    """Whether edge condition ``text`` holds for a stage's Outcome and the run context."""
    return evaluate(
        text,
        outcome=str(outcome.status.value),
        preferred_label=outcome.preferred_label,
        context=context,
    )
