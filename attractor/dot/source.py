"""Source positions, and the parsed text that turns offsets into them on demand.

A big pipeline has a position for every node, edge and attribute, and most of
them are never looked at (a diagnostic, a copy of the graph). The parser
therefore keeps plain character offsets, and the graph asks its :class:`Source`
for the ``file:line:column`` of one when somebody reads it.
"""

from __future__ import annotations

from typing import NamedTuple

from attractor.dot.lexer import LineIndex, attr_items, span_bounds


class SourcePos(NamedTuple):
    """Where something was written: file, 1-based line and column.

    A named tuple: built faster and smaller than a dataclass instance.
    """

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class Source:
    """The text of one pipeline file, with the offset -> line index of the parser."""

    __slots__ = ("file", "text", "lines", "_known")

    def __init__(self, file: str, text: str, lines: LineIndex) -> None:
        self.file = file
        self.text = text
        self.lines = lines
        #: offset -> position, for offsets asked about again (a default's attribute
        #: is asked about once per node it reaches).
        self._known: dict[int, SourcePos] = {}

    def at(self, offset: int) -> SourcePos:
        """The position of character ``offset``."""
        pos = self._known.get(offset)
        if pos is None:
            line, column = self.lines.locate(offset)
            pos = self._known[offset] = SourcePos(self.file, line, column)
        return pos

    def key_position(self, span: int, key: str) -> SourcePos | None:
        """Where the list ``span`` writes ``key`` (its last place), None if it does not."""
        text = self.text
        start, end = span_bounds(span)
        if text.find(key, start, end) < 0:
            return None
        found = None
        for match in attr_items().finditer(text, start + 1, end):
            if match.group(1) == key:
                found = match.start()
        return None if found is None else self.at(found)

    def block_positions(self, span: int) -> dict[str, SourcePos]:
        """Key -> position of each item of the list ``span`` (a key written twice: its
        last place)."""
        at = self.at
        return {key: at(offset) for key, offset in self.block_offsets(span).items()}

    def block_offsets(self, span: int) -> dict[str, int]:
        """Key -> offset of each item of the list ``span`` (a key written twice: its
        last place)."""
        start, end = span_bounds(span)
        items = attr_items().finditer(self.text, start + 1, end)
        return {m.group(1): m.start() for m in items}
