"""Flow rules: what can be reached from the start, what can finish, loops, fan-in."""

from __future__ import annotations

from collections.abc import Sequence

from attractor.dot.graph import Edge, Graph, Node
from attractor.dot.scc import strongly_connected
from attractor.errors import Diagnostic
from attractor.linter.base import at, facts, rule_list
from attractor.linter.cascade import trap_roots, unreachable_roots

RULES, rule = rule_list()


def _reachable(graph: Graph) -> set[str] | None:
    """Ids reachable from the single start node (itself included), or None without one."""
    start = facts(graph).start
    if start is None:
        return None
    return {start.id, *graph.descendants(start.id)}


@rule("reachability", "error")
def reachability(graph: Graph) -> list[Diagnostic]:
    """Every node can be reached from the start node.

    An island of unreachable nodes is one error, at its entry; the nodes after
    it are named in the message.
    """
    reached = _reachable(graph)
    if reached is None:
        return []
    return unreachable_roots(graph, reached)


def _dead_ends(graph: Graph, reached: set[str]) -> list[Node]:
    """Reached nodes with no outgoing edge that are no exit: the run ends there too."""
    known = facts(graph)
    exits = {n.id for n in known.exits}
    return [n for n in known.nodes if n.id in reached and n.id not in exits and not n.outgoing()]


@rule("exit_reachable", "error")
def exit_reachable(graph: Graph) -> list[Diagnostic]:
    """From every node reachable from the start, some path leads to an end.

    The run ends at an exit node or at a node with no outgoing edge (see
    dead_end). A group of nodes whose edges only lead among themselves is a
    closed loop: a run that enters it can never finish. Each closed loop is one
    error; the nodes that lead only into it are named in its message.
    """
    reached = _reachable(graph)
    exits = [n.id for n in facts(graph).exits]
    if reached is None or not exits:
        return []
    ends = [*exits, *(n.id for n in _dead_ends(graph, reached))]
    can_finish = set(ends)
    for end in ends:
        can_finish |= graph.ancestors(end)
    return trap_roots(graph, reached, can_finish)


def _dead_end_message(graph: Graph, node: Node, kind: str) -> str:
    """What the engine does at a node with no outgoing edge (engine/loop.py)."""
    text = f"node '{node.id}' has no outgoing edge, so the run ends here: "
    if kind == "wait.human":
        return text + "a human gate without choices fails, so the run fails at it"
    text += f"the run succeeds if {node.id} succeeds and fails if it fails"
    targets = [str(node.get(a) or "").strip() for a in ("retry_target", "fallback_retry_target")]
    targets = [t for t in targets if t and graph.has_node(t)]
    if targets:
        text += f" (a failure goes to {targets[0]} instead)"
    if any(n.get("goal_gate") for n in facts(graph).nodes):
        text += "; goal gates are checked only at an exit node, not here"
    return text


@rule("dead_end", "warning")
def dead_end(graph: Graph) -> list[Diagnostic]:
    """A node with no outgoing edge that is no exit: the run ends there.

    As the spec says, a run that finishes such a node ends: it succeeds when
    the node's outcome is a success and fails when it is a failure (unless the
    node's retry_target or fallback_retry_target takes the failure elsewhere).
    Some pipelines end a failure branch this way on purpose, as a fail-loud
    terminal. Goal gates are only checked on the way into an exit node, so a
    run that ends at a dead end does not check them. The warning says what
    happens; route the node to an exit to have the goal gates checked, or
    make it an exit (shape=Msquare) if reaching it is success.
    """
    reached = _reachable(graph)
    if reached is None or not facts(graph).exits:
        return []
    types = facts(graph).types
    return [
        at(
            "dead_end",
            "warning",
            node,
            _dead_end_message(graph, node, types[node.id]),
            fix=f"add an edge from {node.id} to an exit (shape=Msquare) if the run should "
            "go on, or leave it as a terminal",
        )
        for node in _dead_ends(graph, reached)
    ]


@rule("fan_in_reachable", "error")
def fan_in_reachable(graph: Graph) -> list[Diagnostic]:
    """Every parallel fan-out (component / type parallel) reaches a fan-in node."""
    found: list[Diagnostic] = []
    known = facts(graph)
    for node in known.nodes:
        if known.types[node.id] != "parallel":
            continue
        after = graph.descendants(node.id)
        if not any(known.types[n] == "parallel.fan_in" for n in after):
            found.append(
                at(
                    "fan_in_reachable",
                    "error",
                    node,
                    f'fan-out node "{node.id}" has no reachable fan-in node',
                    fix="route its branches into a node with shape=tripleoctagon",
                )
            )
    return found


def _bounds_loop(node: Node, handler_type: str) -> bool:
    """A node that stops a loop: a visit limit, a human's choice, the exit."""
    return handler_type in ("wait.human", "exit") or "max_visits" in node.attrs


@rule("unbounded_loop", "warning")
def unbounded_loop(graph: Graph) -> list[Diagnostic]:
    """A loop that no visit limit bounds repeats until the run's step budget stops it.

    Every cycle needs a node with ``max_visits`` on it (its failure once the
    limit is passed routes like any failure, so the run can move on or stop).
    An edge condition does not bound a loop: ``implement -> tests -> implement
    [condition="outcome=fail"]`` repeats for as long as the tests fail, and a
    stage that finishes at once (a simulated or a cached one) repeats thousands
    of times a second. Cycles through a human gate (``wait.human``) count as
    bounded: a person chooses the way out. A graph-level ``default_max_visits``
    bounds every loop, and so does a graph-level ``max_steps`` (the run-wide
    step budget, written on purpose). Visit counts carry across a
    ``loop_restart`` edge, so ``max_visits`` bounds those loops too. Without a
    bound, the default step budget (``--max-steps``, docs/cli.md) is what ends
    the run, as a failure.
    """
    if "default_max_visits" in graph.attrs or "max_steps" in graph.attrs:
        return []
    known = facts(graph)
    free: dict[str, set[str]] = {
        n.id: set() for n in known.nodes if not _bounds_loop(n, known.types[n.id])
    }
    unconditional: set[tuple[str, str]] = set()
    for e in known.edges:
        if e.source in free and e.target in free:
            free[e.source].add(e.target)
            if not e.condition:
                unconditional.add((e.source, e.target))
    order = {node_id: i for i, node_id in enumerate(graph.node_ids())}
    found: list[Diagnostic] = []
    for component in strongly_connected(free):
        members = sorted(component, key=order.__getitem__)
        if len(members) == 1 and members[0] not in free[members[0]]:
            continue
        way_out = _way_out(set(component), known.edges)
        closed = way_out is None and _closed(set(component), unconditional)
        found.append(_loop_warning(graph, members, closed, way_out))
    return found


def _way_out(component: set[str], edges: Sequence[Edge]) -> Edge | None:
    """The first edge out of ``component`` that a condition or a chosen label takes.

    The loop ends when its condition holds, or when a stage's outcome names its
    label (``preferred_label``: a model's report, a person's answer).
    """
    return next(
        (
            e
            for e in edges
            if e.source in component and e.target not in component and (e.condition or e.label)
        ),
        None,
    )


def _shown(edge: Edge) -> str:
    """``a -> b [condition="..."]`` or ``a -> b [label="..."]``."""
    key, value = ("condition", edge.condition) if edge.condition else ("label", edge.label)
    return f'{edge.source} -> {edge.target} [{key}="{value}"]'


def _closed(component: set[str], unconditional: set[tuple[str, str]]) -> bool:
    """Whether unconditional edges alone close a cycle among ``component`` (it never ends)."""
    edges: dict[str, set[str]] = {n: set() for n in component}
    for source, target in unconditional:
        if source in component and target in component:
            edges[source].add(target)
    return any(
        len(cycle) > 1 or any(n in edges[n] for n in cycle) for cycle in strongly_connected(edges)
    )


def _loop_warning(
    graph: Graph, members: list[str], closed: bool, way_out: Edge | None
) -> Diagnostic:
    shown = ", ".join(members[:6]) + (", ..." if len(members) > 6 else "")
    if way_out is not None:
        why = (
            f"leaves only when a condition or a chosen label sends it out ({_shown(way_out)}), "
            "so it repeats for as long as none does"
        )
    elif closed:
        why = "no condition on its edges, so it never ends by itself"
    else:
        why = "repeats for as long as its edge conditions hold"
    return at(
        "unbounded_loop",
        "warning",
        graph.node(members[0]),
        f"loop through {shown} has no max_visits on its nodes and {why}; only the run's "
        "step budget (--max-steps) would stop it",
        fix=f"add max_visits=N to {members[0]} (past the limit it fails, and its failure "
        "routes on), or set default_max_visits on the graph",
    )
