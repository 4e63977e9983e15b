"""Fuzzing: no input ever produces anything but a Graph or a PipelineSyntaxError."""

from __future__ import annotations

import warnings

import pydot
import pygraphviz  # type: ignore[import-untyped,unused-ignore]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attractor.dot.graph import Graph
from attractor.dot.parser import parse_dot
from attractor.dot.transforms import apply_transforms
from attractor.errors import PipelineSyntaxError
from attractor.linter import validate

FRAGMENTS = [
    "digraph",
    "graph",
    "strict",
    "subgraph",
    "node",
    "edge",
    "G",
    "a",
    "b",
    "c",
    "start",
    "exit",
    "{",
    "}",
    "[",
    "]",
    "=",
    ",",
    ";",
    "->",
    "--",
    '"x"',
    '"a\\"b"',
    "900s",
    "-1",
    "0.5",
    "shape=Mdiamond",
    "shape=Msquare",
    "label",
    "//c\n",
    "\n#c\n",
    "#",
    '"k"=v',
    "/*c*/",
    "/*",
    '"',
    "<",
    "\n",
    " ",
    "max_turns=lots",
    'condition="outcome=success"',
    "model_stylesheet",
    "@",
    "\\",
]

ids = st.sampled_from(["a", "b", "c", "d", "start", "exit", "n_1", "Plan"])


def _check(text: str) -> None:
    try:
        graph = parse_dot(text, file="f.dot")
    except PipelineSyntaxError as error:
        assert error.line >= 1 and error.column >= 1
        return
    assert isinstance(graph, Graph)
    validate(apply_transforms(graph))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes(text: str) -> None:
    _check(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_token_soup_never_crashes(parts: list[str]) -> None:
    _check(" ".join(parts))
    _check("digraph G { " + " ".join(parts) + " }")


@st.composite
def pipelines(draw: st.DrawFn) -> str:
    """Valid DOT of the subset: node statements and (chained) edges with attributes."""
    lines = ["digraph G {"]
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            label = draw(
                st.text(st.characters(codec="ascii", exclude_characters='"\\'), max_size=8)
            )
            lines.append(f'  {draw(ids)} [label="{label}", weight={draw(st.integers(-5, 5))}]')
        else:
            chain = draw(st.lists(ids, min_size=2, max_size=4))
            lines.append("  " + " -> ".join(chain))
    lines.append("}")
    return "\n".join(lines)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(pipelines())
def test_same_nodes_and_edges_as_pydot(text: str) -> None:
    ours = parse_dot(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (theirs,) = pydot.graph_from_dot_data(text)
    their_nodes = {n.get_name() for n in theirs.get_nodes()} | {
        end for e in theirs.get_edges() for end in (e.get_source(), e.get_destination())
    }
    assert {n.id for n in ours.nodes()} == their_nodes - {"node", "edge", "graph"}
    assert sorted((e.source, e.target) for e in ours.edges()) == sorted(
        (e.get_source(), e.get_destination()) for e in theirs.get_edges()
    )


#: Separators Graphviz allows after an item of an attribute list.
separators = st.sampled_from([",", ";", "", " ", "\n", ",\n", " ;", "\n# note\n"])
keys = st.sampled_from(["label", "prompt", "shape", "max_turns", "x_1", '"context.slot"'])
#: Values that are Graphviz IDs as written (a bare 5m is not: Graphviz splits it).
values = st.sampled_from(['"A"', '"two words"', "box", "-1", '"5m"', '"a,b;c"', '"# no comment"'])


@st.composite
def attr_list(draw: st.DrawFn) -> str:
    items = []
    for _ in range(draw(st.integers(0, 4))):
        key = draw(keys)
        if draw(st.booleans()) and not key.startswith('"'):
            key = f'"{key}"'
        items.append(f"{key}={draw(values)}{draw(separators)}")
    return "[" + " ".join(items) + "]"


@st.composite
def graphviz_pipelines(draw: st.DrawFn) -> str:
    """Node and edge statements with lists in every separator style Graphviz reads."""
    lines = ["# generated", "digraph G {"]
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            lines.append(f"  {draw(ids)} {draw(attr_list())}")
        else:
            lines.append(f"  {draw(ids)} -> {draw(ids)} {draw(attr_list())}")
        if draw(st.booleans()):
            lines.append("  # a comment line")
    lines.append("}")
    return "\n".join(lines)


@settings(max_examples=150, deadline=None)
@given(graphviz_pipelines())
def test_attribute_lists_read_as_graphviz_reads_them(text: str) -> None:
    ours = parse_dot(text)
    theirs = pygraphviz.AGraph(string=text)
    for node in ours.nodes():
        assert node.attrs == dict(theirs.get_node(node.id).attr), text
    their_edges = sorted((a, b, sorted(e.attr.items())) for e in theirs.edges() for a, b in [e])
    our_edges = sorted((e.source, e.target, sorted(e.attrs.items())) for e in ours.edges())
    assert our_edges == their_edges, text
