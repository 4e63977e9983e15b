"""Manager-loop rules: a ``house`` node names a child pipeline it can run."""

from __future__ import annotations

from pathlib import Path

from attractor.dot.conditions import parse_condition
from attractor.dot.graph import Graph, Node
from attractor.errors import ConditionError, Diagnostic
from attractor.linter.base import at, facts, rule_list

RULES, rule = rule_list()

MANAGER = "stack.manager_loop"
_ACTIONS = ("observe", "steer", "wait")


def _managers(graph: Graph) -> list[Node]:
    return facts(graph).of_type(MANAGER)


@rule("manager_child", "error", "warning")
def manager_child(graph: Graph) -> list[Diagnostic]:
    """A manager node has a child pipeline file, and lint can find it."""
    found: list[Diagnostic] = []
    for node in _managers(graph):
        raw = str(node.get("stack.child_dotfile") or graph.get("stack.child_dotfile") or "")
        if not raw.strip():
            found.append(_no_child(graph, node))
            continue
        path = Path(raw.strip())
        base = Path(graph.file).parent if graph.file else Path.cwd()
        if not (path if path.is_absolute() else base / path).is_file():
            key = "stack.child_dotfile" if node.has("stack.child_dotfile") else None
            found.append(
                at(
                    "manager_child",
                    "warning",
                    node,
                    f"child pipeline {raw} of {node.id} is not a file beside this pipeline; "
                    "at run time it is looked for in the working directory too",
                    key=key,
                    fix="check the path (relative paths start at this file's folder)",
                )
            )
    return found


def _looks_like_a_gate(graph: Graph, node: Node) -> bool:
    """Two or more outgoing edges, each a labelled choice without a condition."""
    edges = graph.outgoing(node.id)
    return len(edges) > 1 and all(
        e.attrs.get("label", "").strip() and not e.attrs.get("condition", "").strip() for e in edges
    )


def _no_child(graph: Graph, node: Node) -> Diagnostic:
    message = f"manager {node.id} has no child pipeline to supervise"
    fix = (
        f'set stack.child_dotfile="child.dot" on {node.id} or on the graph '
        f"(or, if {node.id} is meant as a human gate, write shape=hexagon)"
    )
    if _looks_like_a_gate(graph, node):
        # Some engines draw their human gate as a house; here it is the manager loop.
        message += (
            "; its outgoing edges are labelled choices, as a human gate's are, but "
            "shape=house is the manager loop here"
        )
        fix = f"for a human gate write shape=hexagon on {node.id}"
    return at("manager_child", "error", node, message, fix=fix)


@rule("manager_settings")
def manager_settings(graph: Graph) -> list[Diagnostic]:
    """manager.actions are known, stop_condition parses, autostart is on."""
    found: list[Diagnostic] = []
    for node in _managers(graph):
        actions = [a.strip() for a in str(node.get("manager.actions")).split(",") if a.strip()]
        unknown = [a for a in actions if a not in _ACTIONS]
        if unknown:
            found.append(
                _bad(
                    node,
                    "manager.actions",
                    f"unknown action {', '.join(unknown)}",
                    "use observe, steer and wait, comma separated",
                )
            )
        stop = str(node.get("manager.stop_condition") or "")
        if stop.strip():
            try:
                parse_condition(stop)
            except ConditionError as error:
                found.append(
                    _bad(
                        node,
                        "manager.stop_condition",
                        f"column {error.column}: {error.message}",
                        "write clauses like stack.child.current_node=review, joined by &&",
                    )
                )
        if not node.get("stack.child_autostart"):
            found.append(
                _bad(
                    node,
                    "stack.child_autostart",
                    "false is not supported",
                    "remove it: the manager always starts or resumes its child",
                )
            )
    return found


def _bad(node: Node, key: str, problem: str, fix: str) -> Diagnostic:
    return at("manager_settings", "error", node, f"{key} on {node.id}: {problem}", key=key, fix=fix)
