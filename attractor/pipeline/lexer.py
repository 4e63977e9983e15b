"""Tokenizer for attractor's DOT subset.

One compiled master regular expression scans the whole text; whitespace and
comments are skipped inside the scan, so the parser only ever sees meaningful
tokens. Every token carries its 1-based line and column.

Token kinds: ``WORD`` (identifiers, keys, numbers, durations and bare values
such as ``summary:high`` or ``-1``), ``STRING`` (the unescaped contents of a
double-quoted string), ``ARROW`` (``->``), the punctuation ``{ } [ ] , ; =``
(the kind is the character itself), and ``EOF``. Anything else raises
:class:`~attractor.errors.PipelineSyntaxError` with its position.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from attractor.errors import PipelineSyntaxError

WORD = "WORD"
STRING = "STRING"
ARROW = "ARROW"
EOF = "EOF"

#: Group name -> kind. ``skip`` groups produce no token; ``bad_*`` groups raise.
_MASTER = re.compile(
    r"""
    (?P<skip>(?:[ \t\r\n\f\v]+|//[^\n]*|/\*[\s\S]*?\*/)+)
  | (?P<STRING>"(?:[^"\\]|\\[\s\S])*")
  | (?P<ARROW>->)
  | (?P<bad_undirected>--)
  | (?P<WORD>-?(?:[A-Za-z0-9_.:]|-(?![->]))+)
  | (?P<punct>[{}\[\],;=])
  | (?P<bad_comment>/\*)
  | (?P<bad_string>")
  | (?P<bad_html><)
  | (?P<bad_char>[\s\S])
    """,
    re.VERBOSE,
)

_ESCAPES = {'"': '"', "n": "\n", "t": "\t", "\\": "\\", "\n": ""}
_ESCAPE_RE = re.compile(r"\\([\s\S])")

_BAD_MESSAGES = {
    "bad_undirected": "undirected edge '--' is not supported; use '->'",
    "bad_comment": "unterminated block comment; close it with '*/'",
    "bad_string": 'unterminated string; close it with a matching "',
    "bad_html": "HTML labels (<...>) are not supported; use a quoted string",
}


class Token(NamedTuple):
    """One token: its kind, its text (unescaped for strings) and where it starts."""

    kind: str
    value: str
    line: int
    column: int


def unescape(body: str) -> str:
    r"""Resolve ``\" \n \t \\`` and line continuations; other escapes stay as written."""
    if "\\" not in body:
        return body
    return _ESCAPE_RE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), body)


def describe(token: Token) -> str:
    """How an error message names a token: ``'['``, ``"text"``, ``end of file``."""
    if token.kind == EOF:
        return "end of file"
    if token.kind == STRING:
        text = token.value if len(token.value) <= 30 else token.value[:27] + "..."
        return f'string "{text}"'
    return f"'{token.value}'"


def tokenize(text: str, *, file: str = "<string>") -> list[Token]:
    """Split ``text`` into tokens, ending with an ``EOF`` token.

    Raises:
        PipelineSyntaxError: on a character or construct outside the subset.
    """
    tokens: list[Token] = []
    append = tokens.append
    line = 1
    line_start = 0
    for match in _MASTER.finditer(text):
        kind = match.lastgroup
        start = match.start()
        if kind == "skip" or kind == "STRING":
            end = match.end()
            newlines = text.count("\n", start, end)
            if kind == "STRING":
                append(
                    Token(STRING, unescape(text[start + 1 : end - 1]), line, start - line_start + 1)
                )
            if newlines:
                line += newlines
                line_start = text.rindex("\n", start, end) + 1
        elif kind == "WORD" or kind == "ARROW":
            append(Token(kind, match.group(), line, start - line_start + 1))
        elif kind == "punct":
            value = match.group()
            append(Token(value, value, line, start - line_start + 1))
        else:
            _raise_bad(kind or "bad_char", match.group(), file, line, start - line_start + 1)
    append(Token(EOF, "", line, len(text) - line_start + 1))
    return tokens


def _raise_bad(kind: str, char: str, file: str, line: int, column: int) -> None:
    message = _BAD_MESSAGES.get(kind) or f"unexpected character {char!r}"
    raise PipelineSyntaxError(message, file=file, line=line, column=column)
