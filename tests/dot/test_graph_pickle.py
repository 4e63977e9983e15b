"""A parsed graph travels to Ray workers pickled: the copy must be the same graph."""

from __future__ import annotations

import pickle

from attractor.dot.parser import parse_dot

FAN = """digraph fan {
  start [shape=Mdiamond]
  done [shape=Msquare]
  fan [shape=component]
  join [shape=tripleoctagon]
  b0 [shape=parallelogram, tool_command="true"]
  fan -> b0 -> join
  b1 [shape=parallelogram, tool_command="true"]
  fan -> b1 -> join
  start -> fan
  join -> done
}
"""


def _adjacency(graph: object) -> dict[str, tuple[list[str], list[str]]]:
    return {
        node.id: ([e.target for e in node.outgoing()], [e.source for e in node.incoming()])
        for node in graph.nodes()  # type: ignore[attr-defined]
    }


def test_a_graph_pickled_before_its_edges_were_read_keeps_its_edges() -> None:
    fresh = parse_dot(FAN, file="fan.dot")
    copy = pickle.loads(pickle.dumps(fresh))
    expected = _adjacency(parse_dot(FAN, file="fan.dot"))
    assert _adjacency(copy) == expected
    assert expected["start"] == (["fan"], [])
    assert expected["fan"] == (["b0", "b1"], ["start"])


def test_a_graph_pickled_after_its_edges_were_read_keeps_its_edges() -> None:
    used = parse_dot(FAN, file="fan.dot")
    expected = _adjacency(used)
    assert _adjacency(pickle.loads(pickle.dumps(used))) == expected
