"""One root cause, one diagnostic.

Two mechanisms keep follow-on findings quiet:

- A misspelt edge endpoint (``implment`` for ``implement``) is reported once, by
  ``edge_target_exists``. The flow rules (reachability, exit paths, fan-in,
  loops) then check the graph as the author meant it: :func:`repaired` points
  every edge at the node its typo stands for.
- A rule may name the rules it follows from (``after``); where one of those
  reports an error on the same node or edge, the later rule says nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from attractor.dot.graph import Graph
from attractor.errors import Diagnostic
from attractor.linter.base import FunctionRule, at, did_you_mean, facts

#: The cutoff edge_target_exists uses to call an undeclared id a typo.
TYPO_CUTOFF = 0.8


def typo_aliases(graph: Graph) -> dict[str, str]:
    """Undeclared node id -> the declared node it is a near miss of."""
    nodes = facts(graph).nodes
    declared = [n.id for n in nodes if n.declared]
    aliases: dict[str, str] = {}
    for node in nodes:
        if not node.declared:
            close = did_you_mean(node.id, declared, cutoff=TYPO_CUTOFF)
            if close is not None:
                aliases[node.id] = close
    return aliases


def repaired(graph: Graph, aliases: dict[str, str]) -> Graph:
    """``graph`` as the flow rules read it: its edges use the meant node ids instead of
    the typos (attributes and positions shared, not copied)."""
    return graph.renamed(aliases)


def _element(d: Diagnostic) -> tuple[str | None, tuple[str, str] | None, int, int]:
    return (d.node, d.edge, d.line, d.column)


def quiet_followers(found: list[Diagnostic], rules: Iterable[FunctionRule]) -> list[Diagnostic]:
    """Drop diagnostics whose rule follows from an error already reported on the same element."""
    after = {r.name: set(r.after) for r in rules if r.after}
    if not after:
        return found
    errors: dict[str, set[object]] = {}
    for d in found:
        if d.is_error:
            errors.setdefault(d.rule, set()).update(_marks(d))
    return [
        d
        for d in found
        if not any(_marks(d) & errors.get(root, set()) for root in after.get(d.rule, ()))
    ]


def _marks(d: Diagnostic) -> set[object]:
    """What identifies the element a diagnostic is about: its node, its edge, else its place."""
    marks: set[object] = set()
    if d.node is not None:
        marks.add(("node", d.node))
    if d.edge is not None:
        marks.add(("edge", d.edge, d.line))
    if not marks:
        marks.add(("at", d.file, d.line, d.column))
    return marks


def components(members: Iterable[str], succ: dict[str, list[str]]) -> dict[str, int]:
    """Strongly connected components of the subgraph on ``members``: node -> component id.

    Iterative Kosaraju (no recursion, so 10,000-node chains are fine).
    """
    inside = set(members)
    order: list[str] = []
    seen: set[str] = set()
    for root in inside:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(succ.get(root, ())))]
        while stack:
            node, edges = stack[-1]
            nxt = next((t for t in edges if t in inside and t not in seen), None)
            if nxt is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(succ.get(nxt, ()))))
    pred: dict[str, list[str]] = {}
    for node in inside:
        for target in succ.get(node, ()):
            if target in inside:
                pred.setdefault(target, []).append(node)
    comp: dict[str, int] = {}
    for root in reversed(order):
        if root in comp:
            continue
        comp[root] = len(comp)
        todo = [root]
        label = comp[root]
        while todo:
            for source in pred.get(todo.pop(), ()):
                if source not in comp:
                    comp[source] = label
                    todo.append(source)
    return comp


def end_components(
    members: Iterable[str], succ: dict[str, list[str]], order: dict[str, int]
) -> list[list[str]]:
    """The components of ``members`` that no edge leaves (within ``members``), each sorted
    by ``order``, in the order of their first node."""
    comp = components(members, succ)
    leaves = {comp[n] for n in comp for t in succ.get(n, ()) if t in comp and comp[t] != comp[n]}
    groups: dict[int, list[str]] = {}
    for node in sorted(comp, key=order.__getitem__):
        if comp[node] not in leaves:
            groups.setdefault(comp[node], []).append(node)
    return sorted(groups.values(), key=lambda group: order[group[0]])


def upstream(targets: Iterable[str], pred: dict[str, list[str]], members: set[str]) -> set[str]:
    """Members that can reach one of ``targets`` (the targets themselves excluded)."""
    start = set(targets)
    found: set[str] = set()
    todo = list(start)
    while todo:
        for source in pred.get(todo.pop(), ()):
            if source in members and source not in found and source not in start:
                found.add(source)
                todo.append(source)
    return found


def _adjacency(graph: Graph) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, int]]:
    succ: dict[str, list[str]] = {}
    pred: dict[str, list[str]] = {}
    for edge in facts(graph).edges:
        succ.setdefault(edge.source, []).append(edge.target)
        pred.setdefault(edge.target, []).append(edge.source)
    order = {node.id: i for i, node in enumerate(facts(graph).nodes)}
    return succ, pred, order


def _names(ids: Iterable[str], order: dict[str, int]) -> str:
    shown = sorted(ids, key=order.__getitem__)
    return ", ".join(shown[:6]) + (", ..." if len(shown) > 6 else "")


def unreachable_roots(graph: Graph, reached: set[str]) -> list[Diagnostic]:
    """``reachability``: one error per island of unreachable nodes, at its entry.

    The nodes after an entry are unreachable only because it is; they are named
    in its message, not reported again.
    """
    lost = {n.id for n in facts(graph).nodes if n.id not in reached}
    if not lost:
        return []
    succ, pred, order = _adjacency(graph)
    found: list[Diagnostic] = []
    for group in end_components(lost, pred, order):
        first = graph.node(group[0])
        after = upstream(group, succ, lost)
        message = f"node '{first.id}' cannot be reached from the start node"
        if len(group) > 1:
            message = f"nodes {_names(group, order)} cannot be reached from the start node"
        if after:
            message += f", nor can the nodes after it ({_names(after, order)})"
        fix = f"add an edge into {first.id}, or delete it"
        found.append(at("reachability", "error", first, message, fix=fix))
    return found


def trap_roots(graph: Graph, reached: set[str], can_finish: set[str]) -> list[Diagnostic]:
    """``exit_reachable``: one error per closed loop (or node) a run cannot leave.

    Nodes upstream that lead only into it are named in its message.
    """
    trapped = {n for n in reached if n not in can_finish}
    if not trapped:
        return []
    succ, pred, order = _adjacency(graph)
    found: list[Diagnostic] = []
    for group in end_components(trapped, succ, order):
        first = graph.node(group[0])
        if len(group) == 1 and first.id not in succ.get(first.id, ()):
            message = f"node '{first.id}' has no way out to an exit or a dead end"
            fix = f"add an edge from {first.id} towards the exit"
        else:
            message = f"nodes {_names(group, order)} loop with no way out to an exit or a dead end"
            fix = f"add an edge from one of {_names(group, order)} towards the exit"
        before = upstream(group, pred, trapped)
        if before:
            message += (
                f", nor have the nodes before it that lead only here ({_names(before, order)})"
            )
        message += "; a run that gets here can never finish"
        found.append(at("exit_reachable", "error", first, message, fix=fix))
    return found
