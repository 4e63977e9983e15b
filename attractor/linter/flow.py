"""Flow rules: what can be reached from the start, what can finish, loops, fan-in."""

from __future__ import annotations

from attractor.dot.graph import Graph, Node
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


@rule("exit_reachable", "error")
def exit_reachable(graph: Graph) -> list[Diagnostic]:
    """From every node reachable from the start, some path leads to the exit.

    A node that can never reach the exit is a trap: a run that enters it can
    never finish. Each dead end (or closed loop) is one error; the nodes that
    lead only into it are named in its message.
    """
    reached = _reachable(graph)
    exits = [n.id for n in facts(graph).exits]
    if reached is None or not exits:
        return []
    can_finish = set(exits)
    for exit_id in exits:
        can_finish |= graph.ancestors(exit_id)
    return trap_roots(graph, reached, can_finish)


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
    """A node that stops a loop: a visit limit, a goal gate, a human's choice, the exit."""
    return (
        handler_type in ("wait.human", "exit")
        or "max_visits" in node.attrs
        or ("goal_gate" in node.attrs and node.get("goal_gate") is True)
    )


@rule("unbounded_loop", "warning")
def unbounded_loop(graph: Graph) -> list[Diagnostic]:
    """A cycle with no condition, no max_visits and no goal_gate can only run forever.

    Cycles through a human gate (``wait.human``) count as bounded: a person
    chooses the way out. A graph-level ``default_max_visits`` bounds every loop.
    """
    if "default_max_visits" in graph.attrs:
        return []
    known = facts(graph)
    free: dict[str, set[str]] = {
        n.id: set() for n in known.nodes if not _bounds_loop(n, known.types[n.id])
    }
    for e in known.edges:
        if not e.condition and e.source in free and e.target in free:
            free[e.source].add(e.target)
    order = {node_id: i for i, node_id in enumerate(graph.node_ids())}
    found: list[Diagnostic] = []
    for component in strongly_connected(free):
        members = sorted(component, key=order.__getitem__)
        if len(members) == 1 and members[0] not in free[members[0]]:
            continue
        shown = ", ".join(members[:6]) + (", ..." if len(members) > 6 else "")
        found.append(
            at(
                "unbounded_loop",
                "warning",
                graph.node(members[0]),
                f"loop through {shown} has no condition on its edges and no max_visits "
                "or goal_gate on its nodes; nothing limits how often it repeats",
                fix=f"add max_visits=N to {members[0]} or a condition on one of the loop's edges",
            )
        )
    return found
