"""The fast scan (NODE, ATTRS and CHAIN tokens) parses exactly as the plain scan.

``parse_dot`` reads whole node statements, attribute lists and edge chains as
single tokens. These tests parse the same text both ways and require the same
graph (every node, edge, attribute, position and adjacency list, in order) or
the same error (message, line and column).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from attractor.dot.graph import Graph
from attractor.dot.parser import _Parser, parse_dot
from attractor.errors import PipelineSyntaxError
from tests.dot.fuzzkit import Mutator, load_corpus

#: Pieces that make (or nearly make) every fused token, and the ways to break one.
PIECES = [
    "a",
    "b",
    "n_1",
    "Node",
    "EDGE",
    "subgraph",
    "graph",
    "digraph",
    "strict",
    "x.y",
    "a-b",
    "1a",
    "-1",
    "->",
    "-> ",
    "--",
    "-",
    "{",
    "}",
    "[",
    "]",
    "=",
    ",",
    ";",
    "+",
    '"q"',
    '"a\\"b"',
    '"a\\\\"',
    '"p" + "q"',
    "a -> b -> c",
    "a->b",
    "n_1 -> 2b",
    "a -> node",
    "a -> x.y",
    "a -> b-c",
    "a -> b:p",
    "b-c [x=1]",
    "x.y [x=1]",
    "a:b [x=1]",
    "Strict [x=1]",
    "a -> Graph",
    "[x=1]",
    '[x="1\\n", y=2, x="3\\t"]',
    'a [x="1\\n", x=2]',
    'a -> b [x="\\"", y=1, x=""]',
    "n_1 [x=1, x=2]",
    '[label="L", ]',
    "[ ]",
    "[x=1 y=2]",
    "[x=1; y=2;]",
    "[x=1;, y=2]",
    "[x=1\n y=2\n]",
    'a [x="1"y=2]',
    'a [x=1 "y"=2]',
    '["k.v"="1"]',
    '"k" = v',
    "#c\n",
    "\n# c\n",
    "\n  #c",
    "#",
    "[x=]",
    "[a.b=c]",
    "[k=v /* c */]",
    "a [shape=box]",
    'b [label="B" + "C"]',
    "label = L",
    "node [shape=box]",
    "edge [weight=2]",
    "graph [goal=g]",
    "subgraph s {",
    "/*c*/",
    "//c\n",
    "\n",
    "\t",
    "@",
    "<",
]


def canonical(graph: Graph) -> dict[str, Any]:
    """Everything a parse produces, in order, positions resolved."""

    def positions(view: Any) -> list[tuple[str, tuple[str, int, int]]]:
        return [(key, tuple(pos)) for key, pos in view.attr_pos.items()]

    def ends(edges: Any) -> list[tuple[str, str, int]]:
        return [(e.source, e.target, e.order) for e in edges]

    return {
        "graph": (graph.name, tuple(graph.pos), list(graph.attrs.items()), positions(graph)),
        "nodes": [
            (n.id, tuple(n.pos), n.declared, list(n.attrs.items()), positions(n))
            for n in graph.nodes()
        ],
        "edges": [
            (e.source, e.target, tuple(e.pos), list(e.attrs.items()), positions(e))
            for e in graph.edges()
        ],
        "adjacency": [(ends(n.outgoing()), ends(n.incoming())) for n in graph.nodes()],
        "duplicates": graph.duplicates,
    }


def outcome(parse: Any) -> Any:
    try:
        return canonical(parse())
    except PipelineSyntaxError as error:
        return ("error", error.message, error.line, error.column)


def assert_same(text: str) -> None:
    plain = outcome(lambda: _Parser(text, "f.dot", fast=False).parse())
    assert outcome(lambda: parse_dot(text, file="f.dot")) == plain


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(["", " ", "\n"])), max_size=30))
def test_token_soup_parses_as_with_the_plain_scan(parts: list[tuple[str, str]]) -> None:
    body = "".join(piece + gap for piece, gap in parts)
    assert_same(body)
    assert_same("digraph G {" + body + "}")


def test_mutated_examples_parse_as_with_the_plain_scan() -> None:
    mutator = Mutator(load_corpus(), seed=7)
    for case in mutator.sample(300):
        try:
            text = case.data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert_same(text)


def test_positions_inside_fused_tokens() -> None:
    text = 'digraph G {\n  a [x=1,\n     y="two"]\n  a -> b ->\n c [w=3]\n}\n'
    graph = parse_dot(text, file="g.dot")
    assert str(graph.node("a").attr_pos["y"]) == "g.dot:3:6"
    assert [str(e.pos) for e in graph.edges()] == ["g.dot:4:3", "g.dot:4:8"]
    assert str(graph.node("c").pos) == "g.dot:5:2"
    assert graph.edges()[1].pos_of("w") is not None
    assert_same(text)


def test_an_error_at_a_fused_token_is_worded_as_by_the_plain_parser() -> None:
    # A chain where a subgraph name goes: the plain parser stops at the arrow.
    with_chain = "digraph G {\n  subgraph a -> b { c }\n}"
    try:
        parse_dot(with_chain, file="g.dot")
    except PipelineSyntaxError as error:
        assert (error.message, error.line, error.column) == (
            "expected '{' to open the subgraph, found '->'",
            2,
            14,
        )
    else:
        raise AssertionError("expected a syntax error")
    assert_same(with_chain)
    assert_same("digraph a [x=1] { }")
