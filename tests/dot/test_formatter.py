"""``attractor fmt``'s printer: canonical form, idempotent, lint results unchanged."""

from __future__ import annotations

import re
from pathlib import Path

import pygraphviz
import pytest

from attractor.dot.formatter import format_source
from attractor.dot.parser import parse_dot
from attractor.errors import PipelineSyntaxError
from attractor.linter.prepare import prepare

ROOT = Path(__file__).resolve().parents[2]


def _project_pipelines() -> list[tuple[str, str]]:
    """(name, text) of every pipeline of the project: examples, templates, docs' ``dot`` blocks."""
    found = []
    for path in sorted([*ROOT.glob("examples/**/*.dot"), *ROOT.glob("attractor/templates/*.dot")]):
        found.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    for doc in sorted([ROOT / "README.md", *ROOT.glob("docs/*.md")]):
        blocks = re.findall(r"```dot\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
        found += [(f"{doc.relative_to(ROOT)}#{n}", b) for n, b in enumerate(blocks, start=1)]
    return found


def _findings(text: str, name: str) -> tuple[object, ...] | None:
    """Lint results a user acts on (errors and warnings, by rule, line and node) and
    the graph a run reads (aliases resolved, stylesheet applied); None when the text
    does not parse. Style notes go: aliases are what fmt rewrites."""
    try:
        parse_dot(text, file=name)
    except PipelineSyntaxError:
        return None
    graph, found = prepare(text, file=name, folder=ROOT)
    assert graph is not None
    shown = sorted((d.rule, d.severity, d.line, d.node) for d in found if d.severity != "style")
    attrs = {k: v for k, v in graph.attrs.items() if k != "model_stylesheet"}
    nodes = {n.id: dict(n.attrs) for n in graph.nodes()}
    edges = [(e.source, e.target, dict(e.attrs)) for e in graph.edges()]
    return shown, attrs, nodes, edges


#: The project's pipelines that parse (fmt refuses one that does not: the CLI test).
PIPELINES = [(n, t) for n, t in _project_pipelines() if _findings(t, n) is not None]


def test_the_project_has_pipelines_to_format() -> None:
    assert len(PIPELINES) > 30


@pytest.mark.parametrize(("name", "text"), PIPELINES, ids=[n for n, _ in PIPELINES])
def test_formatting_is_idempotent_and_changes_no_lint_result(name: str, text: str) -> None:
    before = _findings(text, name)
    once = format_source(text)
    assert format_source(once) == once
    assert _findings(once, name) == before


def test_canonical_form_of_a_dialect_pipeline() -> None:
    written = """digraph d {
  context_fidelity_default=full
  model_stylesheet="* { model: m-1; }"
  node [ timeout="5m" ; shape = box ]
  start [shape=Mdiamond label="Start"]
  work [label="Work" prompt="Keep  this
      exactly" model="m-2" shape=box]
  # a Graphviz comment line
  sub [ type="sub_pipeline" sub_pipeline="c.dot" ]   // kept
  done [shape=Msquare]
  start -> work [ condition = "outcome=succeeded" ; weight=2 ]
  work -> sub -> done
}
"""
    assert (
        format_source(written)
        == """digraph d {
    default_fidelity=full
    model_stylesheet="* { llm_model: m-1; }"
    node [shape=box, timeout="5m"]
    start [shape=Mdiamond, label="Start"]
    work [shape=box, label="Work", prompt="Keep  this
      exactly", llm_model="m-2"]
    # a Graphviz comment line
    sub [type="subgraph", dot_file="c.dot"]   // kept
    done [shape=Msquare]
    start -> work [condition="outcome=success", weight=2]
    work -> sub -> done
}
"""
    )


def test_an_alias_beside_its_canonical_attribute_is_left_for_lint() -> None:
    text = 'digraph d {\n    w [llm_model="a", model="b"]\n}\n'
    assert format_source(text) == text


def test_prompt_file_becomes_a_prompt_file_reference() -> None:
    text = 'digraph d {\n    w [prompt_file="p.md"]\n}\n'
    assert format_source(text) == 'digraph d {\n    w [prompt="@p.md"]\n}\n'


def test_a_closing_brace_on_a_statement_line_keeps_its_blank() -> None:
    one_line = "digraph d { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }\n"
    assert format_source(one_line) == one_line
    last = "digraph d {\n    start [ shape=Mdiamond ]\n    start -> exit }\n"
    assert format_source(last) == "digraph d {\n    start [shape=Mdiamond]\n    start -> exit }\n"


def test_a_concatenated_string_stays_one_value() -> None:
    written = (
        "digraph d {\n"
        '    x [prompt="a" + "b" max_turns=3 shape=box]\n'
        '    y [prompt="a" +\n        "b" label="z"]\n'
        "}\n"
    )
    once = format_source(written)
    assert once == (
        "digraph d {\n"
        '    x [shape=box, prompt="a" + "b", max_turns=3]\n'
        '    y [prompt="a" +\n        "b", label="z"]\n'
        "}\n"
    )
    assert format_source(once) == once
    assert _findings(once, "d.dot") == _findings(written, "d.dot")


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ('a [llm_prompt="hi\\nthere"]', 'a [prompt="hi\\nthere"]'),
        ('a [command="echo \\"x\\""]', 'a [tool_command="echo \\"x\\""]'),
        ('a [llm_prompt="one " + "two"]', 'a [prompt="one " + "two"]'),
        ('a [prompt_file="dir\\\\" + "p.md"]', 'a [prompt="@dir\\\\" + "p.md"]'),
        ('a [node_type="to\\"ol"]', 'a [node_type="to\\"ol"]'),  # not a handler type
    ],
)
def test_an_alias_is_renamed_whatever_its_value_holds(written: str, canonical: str) -> None:
    text = "digraph G {\n    " + written + "\n}\n"
    out = format_source(text)
    assert out == "digraph G {\n    " + canonical + "\n}\n"
    before, after = prepare(text, file="t.dot")[0], prepare(out, file="t.dot")[0]
    assert before is not None and after is not None
    assert before.node("a").attrs == after.node("a").attrs


def test_a_graphviz_keyword_as_a_value_is_written_quoted() -> None:
    text = 'digraph G {\n    a [type=subgraph, dot_file="c.dot"]\n    b [type=sub_pipeline]\n}\n'
    out = format_source(text)
    assert out == (
        'digraph G {\n    a [type="subgraph", dot_file="c.dot"]\n    b [type="subgraph"]\n}\n'
    )
    # Graphviz itself reads the result (its keywords are IDs only when quoted).
    drawn = pygraphviz.AGraph(string=out)
    assert dict(drawn.get_node("a").attr)["type"] == "subgraph"
