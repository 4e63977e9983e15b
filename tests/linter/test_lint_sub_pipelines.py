"""Sub-pipeline nodes: the file they name is found, linted with the parent, never itself."""

from __future__ import annotations

from pathlib import Path

from attractor.linter.prepare import prepare
from tests.linter.lintkit import by_rule, lint_body


def _pipeline(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"digraph {path.stem} {{\n  start [shape=Mdiamond]\n  exit [shape=Msquare]\n{body}\n}}\n",
        encoding="utf-8",
    )
    return path


def _lint(path: Path) -> list:
    return prepare(path)[1]


def test_a_sub_pipeline_node_without_a_file_or_with_a_missing_one_is_an_error(
    tmp_path: Path,
) -> None:
    (none,) = by_rule(lint_body("s [shape=folder]\nstart -> s -> exit"), "sub_pipeline")
    assert none.message == "sub-pipeline node s names no pipeline file"
    parent = _pipeline(
        tmp_path / "p.dot", '  s [shape=folder, dot_file="gone.dot"]\n  start -> s -> exit'
    )
    (missing,) = by_rule(_lint(parent), "sub_pipeline")
    assert missing.line == 4 and missing.message.startswith('pipeline file "gone.dot" of s is not')


def test_the_child_errors_are_reported_at_the_child_file_and_line(tmp_path: Path) -> None:
    _pipeline(tmp_path / "lib" / "child.dot", "  w [shape=blob]\n  start -> w -> exit")
    parent = _pipeline(
        tmp_path / "flows" / "p.dot",
        '  s [type=subgraph, graph_ref="../lib/child.dot"]\n  start -> s -> exit',
    )
    found = by_rule(_lint(parent), "sub_pipeline")
    assert [(Path(d.file).name, d.line, d.severity) for d in found] == [("child.dot", 4, "error")]
    assert found[0].message.startswith("shape_known: ")
    assert found[0].message.endswith("(included by s of p.dot)")
    # Aliases of the attribute and of the type resolve to dot_file and subgraph.
    assert not by_rule(_lint(parent), "type_known")


def test_a_pipeline_that_includes_itself_is_refused(tmp_path: Path) -> None:
    a = _pipeline(tmp_path / "a.dot", '  s [shape=folder, dot_file="b.dot"]\n  start -> s -> exit')
    _pipeline(tmp_path / "b.dot", '  t [shape=folder, dot_file="a.dot"]\n  start -> t -> exit')
    found = by_rule(_lint(a), "sub_pipeline")
    assert len(found) == 1
    assert Path(found[0].file).name == "b.dot"
    assert "a.dot -> b.dot -> a.dot" in found[0].message
    itself = _pipeline(
        tmp_path / "self.dot", '  s [shape=folder, dot_file="self.dot"]\n  start -> s -> exit'
    )
    (loop,) = by_rule(_lint(itself), "sub_pipeline")
    assert "self.dot -> self.dot" in loop.message and loop.file.endswith("self.dot")


def test_a_clean_child_adds_nothing(tmp_path: Path) -> None:
    _pipeline(
        tmp_path / "child.dot",
        '  w [shape=parallelogram, tool_command="true"]\n  start -> w -> exit',
    )
    parent = _pipeline(
        tmp_path / "p.dot", '  s [shape=folder, dot_file="child.dot"]\n  start -> s -> exit'
    )
    assert [d for d in _lint(parent) if d.is_error] == []


def test_include_with_path_is_a_sub_pipeline_and_both_are_aliases(tmp_path: Path) -> None:
    _pipeline(tmp_path / "setup.dot", "  start -> exit")
    parent = _pipeline(
        tmp_path / "main.dot",
        '  setup [type=include, path="setup.dot"]\n  start -> setup -> exit',
    )
    graph, found = prepare(parent)
    assert graph is not None and graph.node("setup").get("dot_file") == "setup.dot"
    assert [d for d in found if d.is_error] == []
    notes = sorted(d.message for d in by_rule(found, "alias"))
    assert notes == [
        "'path' is read as dot_file",
        "'type=include' is read as type=subgraph (a sub-pipeline)",
    ]
