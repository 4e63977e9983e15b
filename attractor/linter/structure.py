"""Structural rules: start and exit nodes, edge endpoints, duplicates, retry targets."""

from __future__ import annotations

from dataclasses import replace

from attractor.dot.graph import Edge, Graph, Node
from attractor.errors import Diagnostic
from attractor.linter.base import at, did_you_mean, facts, rule_list

RULES, rule = rule_list()


@rule("start_node", "error")
def start_node(graph: Graph) -> list[Diagnostic]:
    """Exactly one start node.

    A start node has ``type=start`` or shape Mdiamond (``type`` wins over
    ``shape``); when no node has either, a node with id ``start`` or ``Start``
    and no ``type`` is the start, whatever its shape.
    """
    found = facts(graph).starts
    if not found:
        return [
            at(
                "start_node",
                "error",
                graph,
                "pipeline has no start node",
                fix="add a node: start [shape=Mdiamond]",
            )
        ]
    return [
        at(
            "start_node",
            "error",
            node,
            f"pipeline has {len(found)} start nodes ({', '.join(n.id for n in found)})",
            fix="keep exactly one node with shape=Mdiamond",
        )
        for node in found[1:]
    ]


@rule("terminal_node", "error")
def terminal_node(graph: Graph) -> list[Diagnostic]:
    """At least one exit node.

    An exit node has ``type=exit`` or shape Msquare (``type`` wins over
    ``shape``); when no node has either, a node with id ``exit``, ``Exit``,
    ``end`` or ``End`` and no ``type`` is the exit, whatever its shape. The
    spec names ``exit``/``end``; the capitalised forms mirror its
    ``start``/``Start``. A pipeline may have several exits (a success exit and
    a failure exit, say): reaching any of them ends the run, after the goal
    gates are checked. A node with no outgoing edge also ends the run, but is
    no exit (see dead_end).
    """
    if facts(graph).exits:
        return []
    return [
        at(
            "terminal_node",
            "error",
            graph,
            "pipeline has no exit node",
            fix="add a node: exit [shape=Msquare]",
        )
    ]


@rule("start_no_incoming", "error")
def start_no_incoming(graph: Graph) -> list[Diagnostic]:
    """The start node has no incoming edges (it runs once, at the beginning)."""
    start = facts(graph).start
    if start is None:
        return []
    return [
        at(
            "start_no_incoming",
            "error",
            edge,
            f"edge {edge.source} -> {edge.target} leads back into the start node",
            fix="point the edge at the first real stage instead",
        )
        for edge in start.incoming()
    ]


@rule("exit_no_outgoing", "error")
def exit_no_outgoing(graph: Graph) -> list[Diagnostic]:
    """Exit nodes have no outgoing edges (reaching one ends the run)."""
    return [
        at(
            "exit_no_outgoing",
            "error",
            edge,
            f"edge {edge.source} -> {edge.target} leaves the exit node",
            fix="remove the edge, or route through another node before the exit",
        )
        for node in facts(graph).exits
        for edge in node.outgoing()
    ]


def _first_edge(graph: Graph, node: Node) -> Edge | None:
    edges = [*graph.outgoing(node.id), *graph.incoming(node.id)]
    return min(edges, key=lambda e: e.order) if edges else None


@rule("edge_target_exists", "error", "warning")
def edge_target_exists(graph: Graph) -> list[Diagnostic]:
    """Edge endpoints should be declared nodes.

    Following Graphviz, a node mentioned only in an edge still exists (the
    spec's own human-gate example relies on that), so an undeclared endpoint
    is only a WARNING asking the author to declare it (not for the start and
    exit by id, ``Start -> ... -> End``, which need nothing). When its id is a near
    miss of a declared node (``implment`` vs ``implement``) it is almost
    certainly a typo that silently creates an empty stage, so it is an ERROR
    with a did-you-mean.
    """
    known = facts(graph)
    declared = [n.id for n in known.nodes if n.declared]
    found: list[Diagnostic] = []
    for node in known.nodes:
        if not node.declared:
            found.append(replace(_undeclared(graph, node, declared), node=node.id))
    # The start and exit by id (``Start -> ... -> End``) need no declaration:
    # they have no attributes to give.
    return [d for d in found if d.severity == "error" or known.types[d.node or ""] not in _NO_ATTRS]


#: Node types that are complete without attributes.
_NO_ATTRS = ("start", "exit")


def _undeclared(graph: Graph, node: Node, declared: list[str]) -> Diagnostic:
    """The diagnostic for one node that only appears in edges."""
    edge = _first_edge(graph, node)
    where: Node | Edge = edge if edge is not None else node
    close = did_you_mean(node.id, declared, cutoff=0.8)
    if close is not None:
        return at(
            "edge_target_exists",
            "error",
            where,
            f"edge refers to undeclared node '{node.id}'; did you mean '{close}'?",
            fix=f"rename '{node.id}' to '{close}'",
        )
    return at(
        "edge_target_exists",
        "warning",
        where,
        f"node '{node.id}' appears only in edges and is never declared",
        fix=f'declare it: {node.id} [label="...", prompt="..."]',
    )


@rule("duplicate_node", "warning")
def duplicate_node(graph: Graph) -> list[Diagnostic]:
    """A node declared twice: attributes merge (later wins), which is rarely intended."""
    found: list[Diagnostic] = []
    for node_id, first, again in graph.duplicates:
        found.append(
            Diagnostic(
                "duplicate_node",
                "warning",
                f"node '{node_id}' is declared again (first at line {first.line}); "
                "attributes are merged and later values win",
                again.file,
                again.line,
                again.column,
                node=node_id,
                fix="merge the two declarations into one",
            )
        )
    return found


_RETRY_KEYS = ("retry_target", "fallback_retry_target")


@rule("retry_target_exists", "warning")
def retry_target_exists(graph: Graph) -> list[Diagnostic]:
    """retry_target and fallback_retry_target (node or graph) name existing nodes."""
    found: list[Diagnostic] = []
    nodes = facts(graph).nodes
    ids = [n.id for n in nodes]
    items: list[Graph | Node] = [graph, *nodes]
    for item in items:
        for key in _RETRY_KEYS:
            target = item.attrs.get(key, "").strip()
            if not target or graph.has_node(target):
                continue
            close = did_you_mean(target, ids, cutoff=0.6)
            fix = f"use {key}={close}" if close else f"set {key} to an existing node id"
            found.append(
                at(
                    "retry_target_exists",
                    "warning",
                    item,
                    f"{key}={target} names no node in this pipeline",
                    key=key,
                    fix=fix,
                )
            )
    return found


@rule("goal_gate_has_retry", "warning")
def goal_gate_has_retry(graph: Graph) -> list[Diagnostic]:
    """A goal_gate node has somewhere to go back to when it fails (node or graph level)."""
    if any(graph.attrs.get(k, "").strip() for k in _RETRY_KEYS):
        return []
    return [
        at(
            "goal_gate_has_retry",
            "warning",
            node,
            f"goal gate '{node.id}' has no retry_target; an unmet gate ends the run as failed",
            key="goal_gate",
            fix=f"add retry_target=<node to go back to> on {node.id} or on the graph",
        )
        for node in facts(graph).nodes
        if "goal_gate" in node.attrs
        and node.get("goal_gate") is True
        and not any(node.attrs.get(k, "").strip() for k in _RETRY_KEYS)
    ]
