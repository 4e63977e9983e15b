"""A one-node graph for the codergen adapter's tests."""

from __future__ import annotations

from attractor.dot.graph import Graph, Node, SourcePos

POS = SourcePos("test.dot", 1, 1)


def graph_with_node(
    node_attrs: dict[str, str] | None = None, graph_attrs: dict[str, str] | None = None
) -> tuple[Graph, Node]:
    """A graph with one codergen node ``work`` carrying ``node_attrs``."""
    graph = Graph("g")
    for key, value in (graph_attrs or {}).items():
        graph.set(key, value)
    node = graph.add_node("work", {"shape": "box", **(node_attrs or {})}, POS)
    return graph, node
