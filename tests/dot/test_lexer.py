from __future__ import annotations

import pytest

from attractor.dot.lexer import ARROW, EOF, STRING, WORD, tokenize, unescape
from attractor.errors import PipelineSyntaxError


def kinds(text: str) -> list[tuple[str, str]]:
    return [(t.kind, t.value) for t in tokenize(text)]


def test_tokens_carry_line_and_column() -> None:
    tokens = tokenize('digraph G {\n  a -> b [x="y"]\n}')
    arrow = next(t for t in tokens if t.kind == ARROW)
    assert (arrow.line, arrow.column) == (2, 5)
    string = next(t for t in tokens if t.kind == STRING)
    assert (string.value, string.line, string.column) == ("y", 2, 13)
    assert tokens[-1].kind == EOF


def test_comments_and_whitespace_are_skipped_and_lines_counted() -> None:
    tokens = tokenize("// one\n/* two\nthree */ a")
    assert [(t.value, t.line, t.column) for t in tokens[:-1]] == [("a", 3, 10)]


def test_hash_lines_are_skipped_like_graphviz_preprocessor_lines() -> None:
    text = '# 1 "pipeline.dot"\ndigraph G {\n  # a note\n\t#x\r\n  a [label="# kept"]\n}'
    tokens = tokenize(text)
    assert [(t.value, t.line, t.column) for t in tokens[:4]] == [
        ("digraph", 2, 1),
        ("G", 2, 9),
        ("{", 2, 11),
        ("a", 5, 3),
    ]
    assert ("# kept", 5, 12) in [(t.value, t.line, t.column) for t in tokens]


def test_hash_line_between_joined_strings() -> None:
    tokens = tokenize('"a"\n# why\n+ "b" c')
    assert [(t.kind, t.value) for t in tokens[:2]] == [(STRING, "ab"), (WORD, "c")]


def test_multiline_string_advances_the_line() -> None:
    tokens = tokenize('"a\nb" c')
    assert tokens[0].value == "a\nb"
    assert (tokens[1].line, tokens[1].column) == (2, 4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("900s", [(WORD, "900s")]),
        ("-1", [(WORD, "-1")]),
        ("0.5", [(WORD, "0.5")]),
        ("summary:high", [(WORD, "summary:high")]),
        ("claude-sonnet-4-5", [(WORD, "claude-sonnet-4-5")]),
        ("human.default_choice", [(WORD, "human.default_choice")]),
        ("a->b", [(WORD, "a"), (ARROW, "->"), (WORD, "b")]),
        (
            "[x=1,y=2];",
            [
                ("[", "["),
                (WORD, "x"),
                ("=", "="),
                (WORD, "1"),
                (",", ","),
                (WORD, "y"),
                ("=", "="),
                (WORD, "2"),
                ("]", "]"),
                (";", ";"),
            ],
        ),
    ],
)
def test_words_numbers_and_punctuation(text: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(text)[:-1] == expected


def test_unescape_handles_the_documented_escapes() -> None:
    assert unescape(r"a\"b\nc\td\\e\lf") == 'a"b\nc\td\\e\\lf'
    assert unescape("line\\\ncontinued") == "linecontinued"


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("a -- b", "undirected edge '--'", 3),
        ('x = "open', "unterminated string", 5),
        ("a /* never closed", "unterminated block comment", 3),
        ("label=<b>x</b>", "HTML labels", 7),
        ("a @ b", "unexpected character '@'", 3),
        ("a [x=1] # note", "'#' starts a comment only at the start of a line", 9),
        ("a [color=#ff0000]", "quote a value that holds '#'", 10),
    ],
)
def test_bad_input_raises_with_position(text: str, message: str, column: int) -> None:
    with pytest.raises(PipelineSyntaxError) as info:
        tokenize(text, file="f.dot")
    assert message in info.value.message
    assert (info.value.file, info.value.line, info.value.column) == ("f.dot", 1, column)
