"""Context rules: a ``thread_id`` only means something under ``full`` fidelity."""

from __future__ import annotations

from attractor.dot.graph import Graph, Node, SourcePos
from attractor.errors import Diagnostic
from attractor.linter.base import at, facts, rule_list

RULES, rule = rule_list()

_LLM = frozenset({"codergen"})


def _may_run_full(node: Node, graph: Graph) -> bool:
    """Whether some way into ``node`` resolves its fidelity to ``full``."""
    edges = node.incoming()
    if any(str(e.get("fidelity") or "") == "full" for e in edges):
        return True
    own = str(node.get("fidelity") or graph.get("default_fidelity") or "")
    # An edge that sets another mode overrides the node's; a plain edge keeps it.
    return own == "full" and (not edges or any(not e.get("fidelity") for e in edges))


@rule("thread_without_full", "warning")
def thread_without_full(graph: Graph) -> list[Diagnostic]:
    """A ``thread_id`` on an LLM node that never runs with ``fidelity=full``."""
    found: list[Diagnostic] = []
    seen: set[SourcePos | None] = set()
    shared = facts(graph)
    for node in shared.nodes:
        if not node.has("thread_id") or shared.types[node.id] not in _LLM:
            continue
        pos = node.pos_of("thread_id")
        if pos in seen:
            continue  # a node [thread_id=...] default: reported once
        if _may_run_full(node, graph):
            continue
        seen.add(pos)
        found.append(
            at(
                "thread_without_full",
                "warning",
                node,
                f"thread_id={node.get('thread_id')} on {node.id} has no effect: the node "
                "does not run with fidelity=full, so it starts a fresh conversation",
                key="thread_id",
                fix=f'set fidelity="full" on {node.id} (or default_fidelity="full" on the '
                "graph) to continue the thread, or remove thread_id",
            )
        )
    return found
