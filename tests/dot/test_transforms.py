from __future__ import annotations

from pathlib import Path

import pytest

from attractor.dot.graph import Graph
from attractor.dot.parser import parse_dot
from attractor.dot.transforms import apply_transforms
from attractor.errors import PipelineError
from attractor.linter.prepare import prepare


def test_goal_is_expanded_in_prompts() -> None:
    graph = apply_transforms(
        parse_dot('digraph G { goal="ship v2"; a [prompt="Plan: $goal. Then $goal."]; b }')
    )
    assert graph.node("a").attrs["prompt"] == "Plan: ship v2. Then ship v2."
    assert "prompt" not in graph.node("b").attrs


def test_stylesheet_fills_only_missing_properties() -> None:
    graph = apply_transforms(
        parse_dot(
            """digraph G {
                graph [model_stylesheet="* { llm_model: base } .fast { llm_model: small;
                       reasoning_effort: low } #pinned { llm_provider: openai }"]
                subgraph cluster { label="Fast"; quick }
                pinned [llm_model=explicit]
                plain
            }"""
        )
    )
    assert graph.node("quick").attrs["llm_model"] == "small"
    assert graph.node("quick").attrs["reasoning_effort"] == "low"
    assert graph.node("pinned").attrs["llm_model"] == "explicit"  # explicit wins
    assert graph.node("pinned").attrs["llm_provider"] == "openai"
    assert graph.node("plain").attrs["llm_model"] == "base"


def test_invalid_stylesheet_is_left_for_lint() -> None:
    graph = apply_transforms(parse_dot('digraph G { model_stylesheet="* {"; a }'))
    assert "llm_model" not in graph.node("a").attrs


class _Tag:
    def __init__(self, value: str) -> None:
        self.value = value

    def apply(self, graph: Graph) -> Graph:
        for node in graph.nodes():
            node.attrs["tag"] = node.attrs.get("tag", "") + self.value
        return graph


def test_custom_transforms_run_after_builtins_in_order() -> None:
    graph = apply_transforms(parse_dot("digraph G { a }"), extra=[_Tag("1"), _Tag("2")])
    assert graph.node("a").attrs["tag"] == "12"


def test_prepare_text_path_and_syntax_error(tmp_path: Path) -> None:
    text = "digraph G { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }"
    graph, found = prepare(text)
    assert graph is not None and found == []
    path = tmp_path / "p.dot"
    path.write_text("digraph G {\n  a [x=1 =2]\n}", encoding="utf-8")
    graph, found = prepare(path)
    assert graph is None
    assert [(d.rule, d.file, d.line, d.column) for d in found] == [("syntax", str(path), 2, 10)]
    graph, found = prepare(str(path))  # a string without '{' is a path
    assert graph is None and found[0].rule == "syntax"
    with pytest.raises(PipelineError, match="cannot read"):
        prepare(tmp_path / "nope.dot")
