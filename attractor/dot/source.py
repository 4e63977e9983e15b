"""Source positions, and the parsed text that turns offsets into them on demand.

A big pipeline has a position for every node, edge and attribute, and most of
them are never looked at (a diagnostic, a copy of the graph). The parser
therefore keeps plain character offsets, and the graph asks its :class:`Source`
for the ``file:line:column`` of one when somebody reads it.
"""

from __future__ import annotations

from typing import NamedTuple

from attractor.dot.lexer import ATTR, ATTR_BLOCK, LineIndex


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

    __slots__ = ("file", "text", "lines")

    def __init__(self, file: str, text: str, lines: LineIndex) -> None:
        self.file = file
        self.text = text
        self.lines = lines

    def at(self, offset: int) -> SourcePos:
        """The position of character ``offset``."""
        line, column = self.lines.locate(offset)
        return SourcePos(self.file, line, column)

    def block_positions(self, offset: int) -> dict[str, SourcePos]:
        """Key -> position of each item of the well-formed attribute list at ``offset``.

        ``offset`` is that of its ``[``; a key written twice is at its last place.
        """
        block = ATTR_BLOCK.match(self.text, offset)
        if block is None:  # cannot happen: the scanner matched this list at this offset
            return {}
        at = self.at
        return {
            m.group(1): at(m.start()) for m in ATTR.finditer(self.text, offset + 1, block.end())
        }
