"""Tokenizer for attractor's DOT subset.

One compiled master regular expression scans the whole text; whitespace and
comments (``//``, ``/* */`` and, as Graphviz reads them, lines whose first
non-blank character is ``#``) are skipped inside the scan, so the parser only
ever sees meaningful tokens. Every token carries its 1-based line and column.

Token kinds: ``WORD`` (identifiers, keys, numbers, durations and bare values
such as ``summary:high`` or ``-1``), ``STRING`` (the unescaped contents of a
double-quoted string), ``ARROW`` (``->``), the punctuation ``{ } [ ] , ; =``
(the kind is the character itself), and ``EOF``. Anything else raises
:class:`~attractor.errors.PipelineSyntaxError` with its position.

For the parser, :func:`scan` can also work in its fast mode (``fast=True``):
each well-formed attribute list (bare keys, items separated by whitespace and
at most one ``,`` or ``;``, no comment) is then a single ``ATTRS`` token, a node
statement of a plain id and such a list a single ``NODE`` token, and each edge
chain of plain node ids (``a -> b -> c``, only whitespace between) a single
``CHAIN`` token. A 10,000-node file then scans into about a ninth as many
tokens; the parser reads the items of a list with one ``findall``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cache
from typing import NamedTuple

from attractor.errors import PipelineSyntaxError

WORD = "WORD"
STRING = "STRING"
ARROW = "ARROW"
EOF = "EOF"
ATTRS = "ATTRS"
CHAIN = "CHAIN"
NODE = "NODE"

#: Whitespace and comments before a token. Possessive (``*+``, ``++``): the
#: regex never backtracks into it, so trailing blank lines cost linear time
#: instead of trying every way to split them. A line whose first non-blank
#: character is ``#`` is skipped too (Graphviz discards such lines as C
#: preprocessor output): each newline is matched with the indentation after it
#: and such a line. A ``#`` line opening the file is skipped by :func:`scan`.
_SKIP = r"(?:[ \t\r\f\v]++|\n[ \t\r\f\v]*+(?:\#[^\n]*+)?|//[^\n]*+|/\*[\s\S]*?\*/)*+"
#: A ``#`` line at the very start of the text (no newline before it).
_FIRST_HASH_LINE = re.compile(r"[ \t\r\f\v]*+\#[^\n]*+")
_WORD = r"-?[A-Za-z0-9_.:]+(?:-(?![->])[A-Za-z0-9_.:]*)*"
_STRING = r'"[^"\\]*(?:\\[\s\S][^"\\]*)*"'
#: Quoted strings joined with ``+`` (``"a" + "b"``) are one string, as in Graphviz.
_JOINED = rf"{_STRING}(?:(?=[ \t\r\n\f\v]*+[+/\#]){_SKIP}\+{_SKIP}{_STRING})*+"
_ONE_STRING = re.compile(_STRING)
_GLUE = re.compile(rf"{_SKIP}\+{_SKIP}")
_TOKENS = rf"""
        (?P<WORD>{_WORD})
      | (?P<punct>[{{}}\[\],;=])
      | (?P<STRING>{_JOINED})
      | (?P<ARROW>->)
      | (?P<bad_undirected>--)
      | (?P<bad_comment>/\*)
      | (?P<bad_string>")
      | (?P<bad_html><)
      | (?P<bad_hash>\#)
      | (?P<bad_char>\S)
      | (?P<END>\Z)
"""


@cache
def _master() -> re.Pattern[str]:
    """The plain scanner: each match is optional whitespace/comments, then one token
    group. ``bad_*`` groups raise; whitespace never reaches ``bad_char`` (it is \\S).

    Compiled on first use: most parses only need :data:`_FAST`.
    """
    return re.compile(rf"{_SKIP}(?:{_TOKENS})", re.VERBOSE)


_SPACE = r"[ \t\r\n\f\v]*"


def _attr_item(group: str) -> str:
    """``key = value`` exactly as the parser accepts it; ``group`` opens each part."""
    return (
        rf"{group}[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"
        rf"{_SPACE}={_SPACE}"
        rf'(?:{group}{_WORD})|"{group}[^"\\]*(?:\\[\s\S][^"\\]*)*)")'
    )


@cache
def attr_items() -> re.Pattern[str]:
    """The items (key, bare value, quoted value's body) of a well-formed list.

    Compiled on first use: only positions asked for need it.
    """
    return re.compile(_attr_item("("))


#: A well-formed list: items with bare keys, each followed by whitespace and at
#: most one ``,`` or ``;`` (Graphviz's separators, both optional).
_BLOCK = rf"\[{_SPACE}(?>{_attr_item('(?:')}{_SPACE}(?:[,;]{_SPACE})?)*\]"

#: ``(key, value)`` of each item of a well-formed list (only whitespace and at
#: most one ``,`` or ``;`` between items), for ``findall``: a quoted
#: value gives its body (still escaped), a bare one itself. Only correct on such
#: a list.
PAIRS = re.compile(
    rf'([A-Za-z_][A-Za-z0-9_.]*+){_SPACE}={_SPACE}"?((?<=")[^"\\]*+(?:\\[\s\S][^"\\]*+)*+|{_WORD})'
)

#: A node id as an edge chain needs it: a whole word (what the scanner would
#: take as one WORD), not a keyword.
_CHAIN_ID = (
    r"(?!(?i:strict|graph|digraph|subgraph|node|edge)(?![A-Za-z0-9_]))"
    r"[A-Za-z_][A-Za-z0-9_]*+(?![A-Za-z0-9_.:]|-(?![->]))"
)

#: The node ids of a ``CHAIN`` token.
CHAIN_IDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Like :func:`_master`, plus ``NODE`` (a valid id, then a well-formed
#: attribute list), ``ATTRS`` (such a list alone) and ``CHAIN`` (``a -> b -> c``
#: of valid ids with only whitespace between) as single tokens. Anything else
#: scans as before, so lists with comments and mistakes start with a ``[`` token
#: and the parser reports them as usual.
_FAST = re.compile(
    rf"""{_SKIP}(?:
        (?:(?P<NODE>{_CHAIN_ID}){_SPACE})?(?P<ATTRS>{_BLOCK})
      | (?P<CHAIN>{_CHAIN_ID}(?:{_SPACE}->{_SPACE}{_CHAIN_ID})++)
      | {_TOKENS})""",
    re.VERBOSE,
)

_ESCAPES = {'"': '"', "n": "\n", "t": "\t", "\\": "\\", "\n": ""}
_ESCAPE_RE = re.compile(r"\\([\s\S])")

_BAD_MESSAGES = {
    "bad_undirected": "undirected edge '--' is not supported; use '->'",
    "bad_comment": "unterminated block comment; close it with '*/'",
    "bad_string": 'unterminated string; close it with a matching "',
    "bad_html": "HTML labels (<...>) are not supported; use a quoted string",
    "bad_hash": "'#' starts a comment only at the start of a line; "
    "use // for a comment after code, and quote a value that holds '#'",
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
    if "\\\\" not in body:
        # Without an escaped backslash every backslash starts its own escape,
        # so plain replacements cannot overlap (and are much faster than sub).
        return (
            body.replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t").replace("\\\n", "")
        )
    return _ESCAPE_RE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), body)


def describe(token: Token) -> str:
    """How an error message names a token: ``'['``, ``"text"``, ``end of file``."""
    if token.kind == EOF:
        return "end of file"
    if token.kind == STRING:
        text = token.value if len(token.value) <= 30 else token.value[:27] + "..."
        return f'string "{text}"'
    return f"'{token.value}'"


class LineIndex:
    """Maps character offsets to 1-based (line, column) with a binary search.

    The index of line starts is built on the first question: parsing keeps
    offsets, and many parses never need a line number.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts: list[int] | None = None

    @property
    def starts(self) -> list[int]:
        """The offset of each line's first character."""
        if self._starts is None:
            # map() over the matches: no Python code per line, no copy of the lines.
            self._starts = [0, *map(re.Match.end, _NEWLINE.finditer(self.text))]
        return self._starts

    def locate(self, offset: int) -> tuple[int, int]:
        starts = self.starts
        line = bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1


_NEWLINE = re.compile("\n")


_LOW = (1 << 32) - 1


def block_span(start: int, end: int) -> int:
    """One int for a well-formed attribute list from its ``[`` at ``start`` to ``end``.

    A big pipeline keeps one per node and edge statement; one int is half the
    memory of two (a file is at most 16 MiB, far below 2**32 characters).
    """
    return start << 32 | end


def span_bounds(span: int) -> tuple[int, int]:
    """``(start, end)`` of a :func:`block_span`."""
    return span >> 32, span & _LOW


class Scan(NamedTuple):
    """Tokens as parallel lists (fast to build and to walk); ends with EOF."""

    kinds: list[str]
    values: list[str]
    offsets: list[int]
    lines: LineIndex
    #: token index -> the list's :func:`block_span` for each ``NODE`` and ``ATTRS``
    #: token, the end offset for each ``CHAIN`` token.
    ends: dict[int, int] = {}


def scan(text: str, *, file: str = "<string>", fast: bool = False) -> Scan:
    """Tokenize ``text`` into parallel lists of kinds, values and offsets.

    With ``fast``, each well-formed attribute list is one ``ATTRS`` token (value
    ``"["``), a plain id with such a list one ``NODE`` token (value: the id) and
    each chain of plain ids one ``CHAIN`` token (value ``"->"``). ``ends`` holds
    the :func:`block_span` of the list of an ``ATTRS`` or ``NODE`` token, and
    the end offset of a ``CHAIN``.

    Raises:
        PipelineSyntaxError: on a character or construct outside the subset.
    """
    kinds: list[str] = []
    values: list[str] = []
    offsets: list[int] = []
    ends: dict[int, int] = {}
    add_kind, add_value, add_offset = kinds.append, values.append, offsets.append
    first = _FIRST_HASH_LINE.match(text)
    for match in (_FAST if fast else _master()).finditer(text, first.end() if first else 0):
        kind = match.lastgroup
        start, end = match.span(kind)  # type: ignore[arg-type]
        if kind == "ATTRS":
            ends[len(kinds)] = start << 32 | end  # block_span(start, end), inlined
            node, node_end = match.span("NODE")  # -1, -1 unless a node id opens the list
            if node >= 0:
                add_kind(NODE)
                add_value(text[node:node_end])
                start = node
            else:
                add_kind(kind)
                add_value("[")
        elif kind == "WORD":
            add_kind(kind)
            add_value(text[start:end])
        elif kind == "punct":
            value = text[start]
            add_kind(value)
            add_value(value)
        elif kind == "ARROW" or kind == "CHAIN":
            if kind == "CHAIN":
                ends[len(kinds)] = end
            add_kind(kind)
            add_value("->")
        elif kind == "STRING":
            add_kind(STRING)
            if text[end - 1] == '"' and text.find('"', start + 1) == end - 1:
                add_value(unescape(text[start + 1 : end - 1]))
            else:
                add_value(_joined(text, start, end))
        elif kind == "END":
            break  # only whitespace and comments were left
        else:
            line, column = LineIndex(text).locate(start)
            _raise_bad(kind or "bad_char", text[start:end], file, line, column)
        add_offset(start)
    kinds.append(EOF)
    values.append("")
    offsets.append(len(text.rstrip()))
    return Scan(kinds, values, offsets, LineIndex(text), ends)


def _joined(text: str, start: int, end: int) -> str:
    """The value of ``"a" + "b"`` (or of one string with escaped quotes): the parts'
    bodies, unescaped and joined."""
    parts: list[str] = []
    pos = start
    while pos < end:
        part = _ONE_STRING.match(text, pos, end)
        if part is None:  # cannot happen: the token matched this shape
            break
        parts.append(unescape(part.group()[1:-1]))
        glue = _GLUE.match(text, part.end(), end)
        pos = glue.end() if glue else end
    return "".join(parts)


def tokenize(text: str, *, file: str = "<string>") -> list[Token]:
    """Split ``text`` into :class:`Token` objects with line and column, ending with EOF.

    Raises:
        PipelineSyntaxError: on a character or construct outside the subset.
    """
    result = scan(text, file=file)
    tokens = []
    for kind, value, offset in zip(result.kinds, result.values, result.offsets, strict=True):
        line, column = result.lines.locate(offset)
        tokens.append(Token(kind, value, line, column))
    return tokens


def _raise_bad(kind: str, char: str, file: str, line: int, column: int) -> None:
    message = _BAD_MESSAGES.get(kind) or f"unexpected character {char!r}"
    raise PipelineSyntaxError(message, file=file, line=line, column=column)
