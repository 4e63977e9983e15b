from __future__ import annotations

import pytest

from attractor.dot.parser import parse_dot
from attractor.dot.stylesheet import parse_stylesheet
from attractor.errors import StylesheetError

SHEET = """
    * { llm_model: base; llm_provider: anthropic; }
    box { llm_model: boxed }
    .code { llm_model: "opus 4"; }
    #review { llm_model: gpt-5.2; reasoning_effort: high }
    /* a comment */
    .code { llm_provider: openai }
"""


def test_parses_selectors_in_order() -> None:
    sheet = parse_stylesheet(SHEET)
    assert [(r.kind, r.name, r.specificity) for r in sheet.rules] == [
        ("*", "*", 0),
        ("shape", "box", 1),
        ("class", "code", 2),
        ("id", "review", 3),
        ("class", "code", 2),
    ]
    assert sheet.rules[2].declarations == (("llm_model", "opus 4"),)


def test_resolve_uses_specificity_then_order() -> None:
    graph = parse_dot(
        'digraph G { a [shape=box]; b [shape=box, class="code"]; review [class=code]; '
        "d [shape=diamond] }"
    )
    sheet = parse_stylesheet(SHEET)
    assert sheet.resolve(graph.node("a")) == {"llm_model": "boxed", "llm_provider": "anthropic"}
    assert sheet.resolve(graph.node("b")) == {"llm_model": "opus 4", "llm_provider": "openai"}
    assert sheet.resolve(graph.node("review")) == {
        "llm_model": "gpt-5.2",
        "llm_provider": "openai",
        "reasoning_effort": "high",
    }
    assert sheet.resolve(graph.node("d")) == {"llm_model": "base", "llm_provider": "anthropic"}


def test_model_tags_with_colons_stay_whole() -> None:
    rule = parse_stylesheet("* { llm_model: qwen2.5:7b }").rules[0]
    assert rule.declarations == (("llm_model", "qwen2.5:7b"),)


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        ("* { llm_modle: x }", "did you mean llm_model?", 1, 5),
        ("* { llm_model x }", "expected ':' after llm_model", 1, 15),
        ("*\n{ llm_model: x", "found end of stylesheet", 2, 15),
        ("* { reasoning_effort: max }", "low, medium or high", 1, 23),
        ("{ }", "expected a selector", 1, 1),
        ("* { llm_model: a llm_provider: b }", "expected ';' or '}'", 1, 18),
        ('* { llm_model: "x }', "unterminated string", 1, 16),
        (". { }", "expected a class name", 1, 3),
    ],
)
def test_errors_carry_line_and_column(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(StylesheetError) as info:
        parse_stylesheet(text)
    assert message in info.value.message
    assert (info.value.line, info.value.column) == (line, column)
