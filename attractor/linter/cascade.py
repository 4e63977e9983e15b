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
from attractor.linter.base import FunctionRule, did_you_mean, facts

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
    """A copy of ``graph`` whose edges use the meant node ids instead of the typos."""
    copy = Graph(graph.name, file=graph.file, source=graph.source)
    for key, value in graph.attrs.items():
        copy.set(key, value, graph.attr_pos.get(key))
    for node in facts(graph).nodes:
        if node.id not in aliases:
            copy.add_node(node.id, node.attrs, node.pos, node.attr_pos, declared=node.declared)
    for edge in facts(graph).edges:
        source = aliases.get(edge.source, edge.source)
        target = aliases.get(edge.target, edge.target)
        copy.add_edge(source, target, edge.attrs, edge.pos, edge.attr_pos)
    return copy


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
