from __future__ import annotations

from pathlib import Path

import pytest

from attractor.dot.graph import SourcePos
from attractor.dot.parser import derive_class, load, parse_dot
from attractor.errors import PipelineError, PipelineSyntaxError
from attractor.linter.prepare import prepare

SPEC_BRANCH = """digraph Branch {
    graph [goal="Implement and validate a feature"]
    rankdir=LR
    node [shape=box, timeout="900s"]

    start     [shape=Mdiamond, label="Start"]
    exit      [shape=Msquare, label="Exit"]
    plan      [label="Plan", prompt="Plan the implementation"]
    implement [label="Implement", prompt="Implement the plan"]
    validate  [label="Validate", prompt="Run tests"]
    gate      [shape=diamond, label="Tests passing?"]

    start -> plan -> implement -> validate -> gate
    gate -> exit      [label="Yes", condition="outcome=success"]
    gate -> implement [label="No", condition="outcome!=success"]
}
"""


def test_parses_graph_attributes_nodes_and_edges() -> None:
    graph = parse_dot(SPEC_BRANCH, file="b.dot")
    assert graph.name == "Branch"
    assert graph.attrs == {"goal": "Implement and validate a feature", "rankdir": "LR"}
    assert [n.id for n in graph.nodes()] == [
        "start",
        "exit",
        "plan",
        "implement",
        "validate",
        "gate",
    ]
    assert [(e.source, e.target) for e in graph.edges()] == [
        ("start", "plan"),
        ("plan", "implement"),
        ("implement", "validate"),
        ("validate", "gate"),
        ("gate", "exit"),
        ("gate", "implement"),
    ]
    assert graph.node("plan").attrs["timeout"] == "900s"
    assert graph.node("start").shape == "Mdiamond"
    assert graph.outgoing("gate")[1].condition == "outcome!=success"


def test_positions_of_nodes_edges_and_attributes() -> None:
    graph = parse_dot(SPEC_BRANCH, file="b.dot")
    plan = graph.node("plan")
    assert plan.pos == SourcePos("b.dot", 8, 5)
    assert plan.attr_pos["prompt"] == SourcePos("b.dot", 8, 30)
    assert plan.attr_pos["timeout"] == SourcePos("b.dot", 4, 22)  # from the default block
    second = graph.edges()[1]
    assert second.pos == SourcePos("b.dot", 13, 14)
    assert graph.attr_pos["goal"] == SourcePos("b.dot", 2, 12)


def test_chained_edges_all_get_the_attributes() -> None:
    graph = parse_dot('digraph G { a -> b -> c [label="next", weight=2] }')
    assert [(e.source, e.target, e.attrs) for e in graph.edges()] == [
        ("a", "b", {"label": "next", "weight": "2"}),
        ("b", "c", {"label": "next", "weight": "2"}),
    ]


def test_values_are_unescaped_text_quoted_or_bare() -> None:
    graph = parse_dot(
        'digraph G { n [timeout=900s, t2="900s", w=-1, f=0.5, ok=true, '
        'fid=summary:high, p="say \\"hi\\"\\nbye\\t\\\\"] }'
    )
    assert graph.node("n").attrs == {
        "timeout": "900s",
        "t2": "900s",
        "w": "-1",
        "f": "0.5",
        "ok": "true",
        "fid": "summary:high",
        "p": 'say "hi"\nbye\t\\',
    }
    assert graph.node("n").get("timeout") == 900.0


def test_multiline_attribute_blocks_semicolons_and_comments() -> None:
    graph = parse_dot(
        """// header
        digraph G {
            a [
                label = "A",   // trailing comment
                prompt = "x"
            ];
            /* block */ b; a -> b;
        }"""
    )
    assert graph.node("a").attrs == {"label": "A", "prompt": "x"}
    assert graph.node("b").declared


def test_defaults_are_scoped_by_subgraph_and_derive_a_class() -> None:
    graph = parse_dot(
        """digraph G {
            node [timeout="1m"]
            subgraph cluster_loop {
                label = "Loop A"
                node [thread_id="loop-a", timeout="900s"]
                Plan      [label="Plan next step"]
                Implement [label="Implement", timeout="1800s", class="code"]
                subgraph inner { graph [label="Deep!"]; Deep }
            }
            Outside
        }"""
    )
    plan, implement = graph.node("Plan"), graph.node("Implement")
    assert (plan.attrs["thread_id"], plan.attrs["timeout"]) == ("loop-a", "900s")
    assert implement.attrs["timeout"] == "1800s"
    assert plan.classes == ["loop-a"]
    assert implement.classes == ["code", "loop-a"]
    assert graph.node("Deep").classes == ["deep", "loop-a"]
    assert graph.node("Outside").attrs == {"timeout": "1m"}
    assert "label" not in graph.attrs  # the subgraph label is not the graph's


def test_subgraph_label_after_its_nodes_still_applies() -> None:
    graph = parse_dot('digraph G { subgraph { a; label="Late Label" } }')
    assert graph.node("a").classes == ["late-label"]


def test_derive_class() -> None:
    assert derive_class("Loop A") == "loop-a"
    assert derive_class("  Review & QA (2) ") == "review--qa-2"


def test_nodes_only_in_edges_are_undeclared_and_get_defaults() -> None:
    graph = parse_dot("digraph G { node [shape=box]; a -> b; a [label=A] }")
    assert graph.node("a").declared
    assert not graph.node("b").declared
    assert graph.node("b").attrs == {"shape": "box"}


def test_duplicate_node_merges_and_is_recorded() -> None:
    graph = parse_dot("digraph G { a [x=1, y=1]\n node [y=9]\n a [x=2] }", file="d.dot")
    assert graph.node("a").attrs == {"x": "2", "y": "1"}  # later defaults do not overwrite
    assert graph.duplicates == [("a", SourcePos("d.dot", 1, 13), SourcePos("d.dot", 3, 2))]


def test_top_level_dotted_key_is_a_graph_attribute() -> None:
    graph = parse_dot("digraph G { stack.child_dotfile = child.dot }")
    assert graph.attrs["stack.child_dotfile"] == "child.dot"


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        ("graph G { a }", "undirected 'graph' is not supported", 1, 1),
        ("strict digraph G { a }", "'strict' graphs are not supported", 1, 1),
        ("digraph G { a -- b }", "undirected edge '--'", 1, 15),
        ("digraph G { a }\ndigraph H { b }", "exactly one digraph", 2, 1),
        ("digraph G { a } junk", "expected end of file", 1, 17),
        ("digraph G { a [x=1 = 2] }", "expected another attribute or ']'", 1, 20),
        ("digraph G { a [x=1,, y=2] }", "expected an attribute name or ']', found ','", 1, 20),
        ("digraph G { a [x=1;;] }", "expected an attribute name or ']', found ';'", 1, 20),
        ("digraph G { a [, x=1] }", "expected an attribute name or ']', found ','", 1, 16),
        ("digraph G { a [x=1 shape] }", "expected '=' after attribute name 'shape'", 1, 25),
        ('digraph G { a ["my key"=1] }', 'invalid attribute name string "my key"', 1, 16),
        ('digraph G { "a b" = 1 }', 'invalid attribute name string "a b"', 1, 13),
        ('digraph G { a [label="x] }', "unterminated string", 1, 22),
        ("digraph G { /* a }", "unterminated block comment", 1, 13),
        ("digraph G { a [label=<b>] }", "HTML labels", 1, 22),
        ("digraph G { 9lives }", "invalid node id '9lives'", 1, 13),
        ("digraph G { a -> 2b }", "invalid node id '2b'", 1, 18),
        ('digraph G { "quoted id" }', "node ids are bare identifiers", 1, 13),
        ("digraph G { a [=1] }", "expected an attribute name", 1, 16),
        ("digraph G { a [x=] }", "expected a value", 1, 18),
        ("digraph G { a -> }", "expected a node id after '->'", 1, 18),
        ("digraph G { a", "expected '}' to close the graph body", 1, 14),
        ("", "expected 'digraph', found end of file", 1, 1),
    ],
)
def test_rejections_name_position_and_expectation(
    text: str, message: str, line: int, column: int
) -> None:
    with pytest.raises(PipelineSyntaxError) as info:
        parse_dot(text, file="x.dot")
    error = info.value
    assert message in error.message
    assert (error.file, error.line, error.column) == ("x.dot", line, column)
    assert str(error).startswith(f"x.dot:{line}:{column}: ")


def test_load_reads_a_file_and_reports_unreadable_ones(tmp_path: Path) -> None:
    path = tmp_path / "p.dot"
    path.write_text("digraph G { a }", encoding="utf-8")
    assert load(path).file == str(path)
    with pytest.raises(PipelineError, match="cannot read"):
        load(tmp_path / "missing.dot")
    (tmp_path / "bin.dot").write_bytes(b"\xff\xfe\x00digraph")
    with pytest.raises(PipelineError, match="not UTF-8"):
        load(tmp_path / "bin.dot")


def test_absurdly_deep_subgraph_nesting_is_a_syntax_error_not_a_crash() -> None:
    deep = "digraph g {" + "subgraph {" * 300 + "a" + "}" * 300 + "}"
    with pytest.raises(PipelineSyntaxError, match="subgraphs nest more than 100 deep"):
        parse_dot(deep)
    fine = "digraph g {" + "{" * 100 + "a" + "}" * 100 + "}"
    assert parse_dot(fine).has_node("a")


def test_quoted_strings_joined_with_plus_are_one_value() -> None:
    graph = parse_dot(
        'digraph g {\n  a [prompt="Plan the " + "change:\\n" /* why */ + "then \\"test\\""]\n}',
        file="g.dot",
    )
    assert graph.node("a").prompt == 'Plan the change:\nthen "test"'
    assert graph.node("a").attr_pos["prompt"].line == 2


def test_attribute_separators_are_optional_as_in_graphviz() -> None:
    text = (
        "digraph G {\n"
        '  start [shape=Mdiamond label="Start"]\n'
        "  plan [\n"
        "    label=Plan\n"
        '    prompt="Plan it"\n'
        "    max_turns=5\n"
        "  ]\n"
        "  gate [shape=diamond; label=Gate;]\n"
        '  node [timeout="5m" max_retries=2,]\n'
        '  start -> plan [label="go" weight=2; condition="outcome=success"]\n'
        "}\n"
    )
    graph = parse_dot(text, file="p.dot")
    assert graph.node("start").attrs == {"shape": "Mdiamond", "label": "Start"}
    assert graph.node("plan").attrs == {"label": "Plan", "prompt": "Plan it", "max_turns": "5"}
    assert graph.node("gate").attrs == {"shape": "diamond", "label": "Gate"}
    edge = graph.edges()[0]
    assert edge.attrs == {"label": "go", "weight": "2", "condition": "outcome=success"}
    assert graph.node("start").attr_pos["label"] == SourcePos("p.dot", 2, 25)
    assert graph.node("plan").attr_pos["prompt"] == SourcePos("p.dot", 5, 5)
    assert graph.node("plan").attr_pos["max_turns"] == SourcePos("p.dot", 6, 5)
    assert graph.node("gate").attr_pos["label"] == SourcePos("p.dot", 8, 24)
    assert edge.pos_of("condition") == SourcePos("p.dot", 10, 39)
    # The same text with commas everywhere parses to the same attributes.
    with_commas = text.replace('"Start"', '"Start",').replace("=Plan\n", "=Plan,\n")
    with_commas = with_commas.replace('it"\n', 'it",\n').replace("; ", ", ")
    same = parse_dot(with_commas, file="p.dot")
    assert [n.attrs for n in same.nodes()] == [n.attrs for n in graph.nodes()]


def test_quoted_attribute_keys() -> None:
    graph = parse_dot(
        'digraph G {\n  "goal" = "ship it"\n  a ["context.slot"="1", "label"=A]\n'
        '  graph ["default_max_retries"=2]\n}',
        file="q.dot",
    )
    assert graph.attrs == {"goal": "ship it", "default_max_retries": "2"}
    assert graph.node("a").attrs == {"context.slot": "1", "label": "A"}
    assert graph.node("a").attr_pos["context.slot"] == SourcePos("q.dot", 3, 6)
    assert graph.node("a").attr_pos["label"] == SourcePos("q.dot", 3, 26)
    assert graph.attr_pos["goal"] == SourcePos("q.dot", 2, 3)


def test_hash_comment_lines_are_ignored() -> None:
    graph = parse_dot(
        "# generated by a tool\ndigraph G {\n  # stages\n  a [\n    # the label\n"
        '    label="A"\n  ]\n  a -> b\n#  b [label=B]\n}\n',
        file="h.dot",
    )
    assert graph.node("a").attrs == {"label": "A"}
    assert graph.node("a").attr_pos["label"] == SourcePos("h.dot", 6, 5)
    assert not graph.node("b").declared


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        # The list of a is never closed: the error names b, the id that follows it.
        ('digraph G {\n  a [label="A"\n  b [label="B"]\n}', 3, 3),
        ('digraph G {\n  a [label="A" shape=box\n  b -> c\n}', 3, 3),
        ('digraph G {\n  a -> b [label="x"\n  c\n}', 3, 3),
    ],
)
def test_an_unclosed_attribute_list_is_reported_at_the_next_statement(
    text: str, line: int, column: int
) -> None:
    with pytest.raises(PipelineSyntaxError) as info:
        parse_dot(text, file="u.dot")
    error = info.value
    assert error.message.startswith("attribute list not closed before ")
    assert error.message.endswith("; write ']' after its last attribute")
    assert (error.file, error.line, error.column) == ("u.dot", line, column)


@pytest.mark.parametrize(
    "items",
    [
        'label="Work" timeout="5xx"',  # the fast scan's one token
        'label="Work"; timeout="5xx";',
        '"label"="Work"\n        "timeout"="5xx"',  # quoted keys: the plain scan
        'label="Work"\n# why\n        timeout="5xx"',  # a '#' line: the plain scan
    ],
)
def test_lint_diagnostics_point_into_lists_without_commas(items: str) -> None:
    text = (
        "digraph G {\n  start [shape=Mdiamond]\n  exit [shape=Msquare]\n"
        f"  work [{items}]\n  start -> work -> exit\n}}\n"
    )
    graph, found = prepare(text, file="w.dot")
    assert graph is not None and graph.node("work").attrs["label"] == "Work"
    (bad,) = [d for d in found if d.is_error]
    assert bad.rule == "attribute_value"
    line = text[: text.index("timeout") - 1].count("\n") + 1
    column = text.index("timeout") - text.rindex("\n", 0, text.index("timeout"))
    if items.startswith('"'):
        column -= 1  # a quoted key is placed at its opening quote
    assert (bad.file, bad.line, bad.column) == ("w.dot", line, column)
