"""Reachability and strongly connected components over the plain graph structure."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from attractor.dot.graph import Graph, SourcePos
from attractor.dot.parser import parse_dot
from attractor.dot.scc import strongly_connected

POS = SourcePos("t.dot", 1, 1)


def _graph(edges: list[tuple[str, str]], nodes: list[str]) -> Graph:
    graph = Graph("g")
    for node in nodes:
        graph.add_node(node, {}, POS)
    for source, target in edges:
        graph.add_edge(source, target, {}, POS)
    return graph


def test_descendants_and_ancestors_follow_edges_and_leave_out_the_node_itself() -> None:
    graph = parse_dot("digraph g { a -> b -> c -> a\n c -> d\n e -> d\n f }")
    assert graph.descendants("a") == {"b", "c", "d"}  # a is on a cycle, still left out
    assert graph.ancestors("d") == {"a", "b", "c", "e"}
    assert graph.descendants("f") == set() == graph.ancestors("f")
    assert list(graph.successors("c")) == ["a", "d"]


def test_parallel_edges_and_self_loops_keep_their_order() -> None:
    graph = parse_dot('digraph g { a -> b [label="x"]\n a -> a\n a -> b [label="y"] }')
    assert [(e.target, e.label) for e in graph.outgoing("a")] == [("b", "x"), ("a", ""), ("b", "y")]
    assert [e.label for e in graph.incoming("b")] == ["x", "y"]
    assert [e.order for e in graph.edges()] == [0, 1, 2]
    assert graph.descendants("a") == {"b"}


def test_components_of_a_known_graph() -> None:
    successors = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e", "outside"]}
    components = sorted(sorted(c) for c in strongly_connected(successors))
    assert components == [["a", "b", "c"], ["d"], ["e"]]


edge_lists = st.lists(
    st.tuples(st.integers(0, 7), st.integers(0, 7)).map(lambda e: (f"n{e[0]}", f"n{e[1]}")),
    max_size=20,
)


@settings(max_examples=200, deadline=None)
@given(edge_lists)
def test_two_nodes_share_a_component_exactly_when_each_reaches_the_other(
    edges: list[tuple[str, str]],
) -> None:
    nodes = [f"n{i}" for i in range(8)]
    graph = _graph(edges, nodes)
    successors = {n: list(graph.successors(n)) for n in nodes}
    component_of = {m: i for i, c in enumerate(strongly_connected(successors)) for m in c}
    assert sorted(component_of) == nodes  # every node in exactly one component
    reach = {n: graph.descendants(n) for n in nodes}
    for a in nodes:
        assert reach[a] == {b for b in nodes if b != a and _reaches(graph, a, b)}
        assert graph.ancestors(a) == {b for b in nodes if a in reach[b]}
        for b in nodes:
            mutual = a == b or (b in reach[a] and a in reach[b])
            assert (component_of[a] == component_of[b]) == mutual


def _reaches(graph: Graph, a: str, b: str) -> bool:
    """Breadth-first search written independently of Graph.descendants."""
    frontier, seen = [a], set()
    while frontier:
        step = [t for n in frontier for t in graph.successors(n) if t not in seen]
        if b in step:
            return True
        seen.update(step)
        frontier = step
    return False


def test_setting_one_edge_of_a_chain_leaves_the_others_alone() -> None:
    graph = parse_dot("digraph g { a -> b -> c [weight=2] }")
    first, second = graph.edges()
    first.set("weight", "5")
    assert (first.weight, second.weight) == (5, 2)
    assert graph.outgoing("a")[0].weight == 5


def test_renamed_points_edges_at_the_meant_nodes_and_keeps_positions() -> None:
    text = "digraph g {\n  a [x=1]\n  b\n  a -> bb [w=2]\n  bb -> a\n}"
    graph = parse_dot(text, file="r.dot")
    meant = graph.renamed({"bb": "b"})
    assert meant.node_ids() == ["a", "b"]
    assert [(e.source, e.target) for e in meant.edges()] == [("a", "b"), ("b", "a")]
    assert list(meant.successors("b")) == ["a"]
    assert meant.node("a").attr_pos == graph.node("a").attr_pos
    assert str(meant.node("a").pos_of("x")) == "r.dot:2:6"
    assert [str(e.pos) for e in meant.edges()] == ["r.dot:4:3", "r.dot:5:3"]
    assert str(meant.edges()[0].pos_of("w")) == "r.dot:4:12"
    assert graph.has_node("bb") and list(graph.successors("a")) == ["bb"]  # unchanged
