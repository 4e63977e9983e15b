"""The document's text around a position: offsets, tokens and where the cursor is.

LSP positions are 0-based lines and characters; the parser's are 1-based lines
and columns, counted in characters (code points). A character outside the
Basic Multilingual Plane would count twice in an editor's UTF-16 column; the
pipelines attractor reads are rarely written with one, so positions are
passed through as they are.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from functools import lru_cache
from typing import Literal

from lsprotocol import types as lsp

from attractor.valueclass import frozen

#: Strings, comments and the punctuation that opens and closes statements.
_SCAN = re.compile(
    r'"(?:[^"\\]|\\.)*"?'  # a string (unterminated at the end of the text too)
    r"|//[^\n]*|/\*[\s\S]*?(?:\*/|$)|(?m:^[ \t]*#[^\n]*)"  # comments
    r"|[\[\]{};]"
)
#: Identifiers (node ids, attribute keys), strings and comments, for finding ids.
_IDS = re.compile(
    r'"(?:[^"\\]|\\.)*"?|//[^\n]*|/\*[\s\S]*?(?:\*/|$)|(?m:^[ \t]*#[^\n]*)'
    r"|(?P<id>[A-Za-z_][\w.]*)"
)
_WORD = re.compile(r"[A-Za-z_][\w.\-:]*")


@lru_cache(maxsize=8)
def line_starts(text: str) -> list[int]:
    """The offset of each line's first character (kept for the last few texts)."""
    return [0, *map(re.Match.end, re.finditer("\n", text))]


def offset_of(text: str, line: int, character: int) -> int:
    """The offset of a 0-based (line, character), clamped to the text."""
    starts = line_starts(text)
    if line >= len(starts):
        return len(text)
    end = starts[line + 1] - 1 if line + 1 < len(starts) else len(text)
    return min(starts[line] + character, end)


def position_of(text: str, offset: int) -> tuple[int, int]:
    """The 0-based (line, character) of ``offset``."""
    starts = line_starts(text)
    line = bisect_right(starts, offset) - 1
    return line, offset - starts[line]


def token_end(text: str, offset: int) -> int:
    """The end of the token at ``offset``: a quoted string, a word, else one character.

    Diagnostics carry a start only; this gives them a range an editor can underline.
    """
    if offset >= len(text):
        return offset
    if text[offset] == '"':
        match = re.compile(r'"(?:[^"\\]|\\.)*"?').match(text, offset)
        assert match is not None
        return match.end()
    match = _WORD.match(text, offset)
    if match is not None:
        end = match.end()
        # key=value reads as one item: underline the whole of it.
        value = re.compile(r'\s*=\s*("(?:[^"\\]|\\.)*"?|[\w.\-:]+)').match(text, end)
        return value.end() if value is not None else end
    return offset + 1


def word_at(text: str, offset: int) -> tuple[int, int, str] | None:
    """(start, end, word) of the identifier under ``offset`` (dots included)."""
    start = offset
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_."):
        start -= 1
    match = re.compile(r"[A-Za-z_][\w.]*").match(text, start)
    if match is None or match.end() < offset:
        return None
    return start, match.end(), match.group()


def id_occurrences(text: str, name: str) -> Iterator[int]:
    """Offsets where ``name`` is written as a bare identifier (not in a string or comment)."""
    if name not in text:
        return
    for match in _IDS.finditer(text):
        if match.group("id") == name:
            yield match.start()


def target_occurrences(text: str, name: str) -> Iterator[int]:
    """Offsets of ``name`` as the value of ``retry_target`` or ``fallback_retry_target``."""
    if name not in text:
        return
    pattern = re.compile(r'\b(?:fallback_)?retry_target\s*=\s*"?(' + re.escape(name) + r')\b"?')
    for match in pattern.finditer(text):
        yield match.start(1)


Where = Literal["name", "value", "edge_target", "statement", "string"]


@frozen
class Cursor:
    """What the text before the cursor says it is in.

    ``scope`` is the attribute scope (graph, node or edge); ``key`` the attribute
    whose value is being written (for ``where == "value"``); ``prefix`` the
    partial word before the cursor.
    """

    where: Where
    scope: Literal["graph", "node", "edge"]
    key: str = ""
    prefix: str = ""


_VALUE = re.compile(r'(?P<key>[A-Za-z_][\w.]*|"[^"]*")\s*=\s*(?P<q>"?)(?P<value>[^"=,;\]\[]*)$')
_NAME = re.compile(r"(?:^|[\s,;\[])(?P<prefix>[A-Za-z_][\w.]*)?$")


def cursor_at(text: str, offset: int) -> Cursor:
    """Where the cursor at ``offset`` is: in an attribute list, a value, after ``->``."""
    list_start, in_string = -1, False
    for match in _SCAN.finditer(text, 0, offset):
        token = match.group()
        if token == "[":
            list_start = match.end()
        elif token in "]{};":
            list_start = -1
        elif token.startswith('"') and (len(token) == 1 or not token.endswith('"')):
            in_string = match.end() >= offset
    head = text[text.rfind("\n", 0, offset) + 1 : offset]
    if list_start >= 0:
        return _in_list(text, list_start, offset)
    value = _VALUE.search(head)
    if value is not None:
        return Cursor("value", "graph", value.group("key").strip('"'), value.group("value"))
    if in_string:
        return Cursor("string", "graph")
    if re.search(r"->\s*(?P<p>[A-Za-z_]\w*)?$", head):
        prefix = re.search(r"([A-Za-z_]\w*)?$", head)
        return Cursor("edge_target", "edge", prefix=prefix.group(1) or "" if prefix else "")
    name = _NAME.search(head)
    return Cursor("statement", "graph", prefix=(name.group("prefix") or "") if name else "")


def _in_list(text: str, list_start: int, offset: int) -> Cursor:
    """The cursor inside ``[ ... ]``: after ``key=`` a value, else an attribute name."""
    line_start = text.rfind("\n", 0, list_start - 1) + 1
    before = text[line_start : list_start - 1].rstrip()
    kind = re.search(r"(?:^|[\s;{}])(graph|node|edge)$", before)
    scope: Literal["graph", "node", "edge"] = "node"
    if kind is not None:
        scope = kind.group(1)  # type: ignore[assignment]
    elif "->" in before:
        scope = "edge"
    inside = text[list_start:offset]
    value = _VALUE.search(inside)
    if value is not None:
        return Cursor("value", scope, value.group("key").strip('"'), value.group("value"))
    if inside.count('"') % 2:
        return Cursor("string", scope)
    name = _NAME.search(inside)
    return Cursor("name", scope, prefix=(name.group("prefix") or "") if name else "")


def range_of(text: str, start: int, end: int) -> lsp.Range:
    """The LSP range of ``text[start:end]``."""
    return lsp.Range(lsp.Position(*position_of(text, start)), lsp.Position(*position_of(text, end)))
