"""Parsing the v4a patch format of ``apply_patch`` and fitting hunks into text.

A patch is a block between ``*** Begin Patch`` and ``*** End Patch`` holding
file operations: ``*** Add File: P`` (every line ``+``-prefixed), ``*** Delete
File: P`` and ``*** Update File: P`` (an optional ``*** Move to: Q``, then hunks
that start at ``@@`` lines, optionally followed by a line to anchor on). Hunk lines
are `` `` context, ``-`` removed or ``+`` added. Nothing here touches a file:
:func:`parse_patch` gives operations and :func:`apply_hunks` computes new text.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import field
from typing import Literal

from attractor.errors import ToolError
from attractor.valueclass import mutable

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
EOF_MARK = "*** End of File"
_SHOWN_LINES = 3  # of a hunk that does not fit, quoted back in the error


@mutable
class Hunk:
    """One change: the lines it expects (context and removed) and what replaces them."""

    anchor: str = ""
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    at_end: bool = False


@mutable
class FileOp:
    """One file operation of a patch."""

    kind: Literal["add", "delete", "update"]
    path: str
    move_to: str | None = None
    lines: list[str] = field(default_factory=list)  # content of an added file
    hunks: list[Hunk] = field(default_factory=list)


def parse_patch(text: str) -> list[FileOp]:
    """The operations of a v4a patch; :class:`ToolError` names the bad line."""
    lines = text.strip("\n").split("\n")
    lines = [line.rstrip("\r") for line in lines]
    if not lines or lines[0].strip() != BEGIN:
        raise ToolError(f"the patch must start with the line '{BEGIN}'")
    if lines[-1].strip() != END:
        raise ToolError(f"the patch must end with the line '{END}'")
    parser = _Parser(lines[1:-1])
    ops = parser.run()
    if not ops:
        raise ToolError("the patch holds no file operations (Add File, Delete File, Update File)")
    return ops


class _Parser:
    def __init__(self, body: list[str]) -> None:
        self.body = body
        self.pos = 0

    def _error(self, what: str) -> ToolError:
        # +2: the Begin line, and numbering from 1.
        return ToolError(f"patch line {self.pos + 2}: {what}")

    def run(self) -> list[FileOp]:
        ops: list[FileOp] = []
        while self.pos < len(self.body):
            line = self.body[self.pos]
            self.pos += 1
            if line.startswith(ADD):
                ops.append(FileOp("add", self._path(line, ADD), lines=self._added()))
            elif line.startswith(DELETE):
                ops.append(FileOp("delete", self._path(line, DELETE)))
            elif line.startswith(UPDATE):
                ops.append(self._update(self._path(line, UPDATE)))
            elif line.strip():
                self.pos -= 1
                raise self._error(
                    f"expected '{ADD}', '{DELETE}' or '{UPDATE}' followed by a path, "
                    f"got {line[:80]!r}"
                )
        return ops

    def _path(self, line: str, prefix: str) -> str:
        path = line[len(prefix) :].strip()
        if not path:
            self.pos -= 1
            raise self._error(f"'{prefix.strip()}' needs a path")
        return path

    def _at_op(self) -> bool:
        """At the next operation, or at blank lines that only separate operations."""
        rest = self.body[self.pos :]
        for line in rest:
            if line.strip():
                return line.startswith((ADD, DELETE, UPDATE))
        return True  # only blank lines left before End Patch

    def _added(self) -> list[str]:
        added: list[str] = []
        while self.pos < len(self.body) and not self._at_op():
            line = self.body[self.pos]
            if not line.startswith("+"):
                raise self._error(f"every line of an added file must start with '+', got {line!r}")
            added.append(line[1:])
            self.pos += 1
        return added

    def _update(self, path: str) -> FileOp:
        op = FileOp("update", path)
        if self.pos < len(self.body) and self.body[self.pos].startswith(MOVE):
            op.move_to = self._path(self.body[self.pos], MOVE)
            self.pos += 1
        while self.pos < len(self.body) and not self._at_op():
            op.hunks.append(self._hunk())
        if not op.hunks:
            raise self._error(f"'{UPDATE}{path}' has no hunks ('@@' followed by change lines)")
        return op

    def _hunk(self) -> Hunk:
        hunk = Hunk()
        line = self.body[self.pos]
        if line.startswith("@@"):
            hunk.anchor = line[2:].strip()
            self.pos += 1
        changed = False
        while self.pos < len(self.body) and not self._at_op():
            line = self.body[self.pos]
            if line.startswith("@@") and (hunk.old or hunk.new):
                break
            self.pos += 1
            if line.strip() == EOF_MARK:
                hunk.at_end = True
                break
            changed |= self._hunk_line(hunk, line)
        if not changed:
            raise self._error("a hunk must add or remove at least one line ('+' or '-')")
        return hunk

    def _hunk_line(self, hunk: Hunk, line: str) -> bool:
        """Add one line to ``hunk``; whether it is a change."""
        marker, rest = line[:1], line[1:]
        if marker == "+":
            hunk.new.append(rest)
            return True
        if marker == "-":
            hunk.old.append(rest)
            return True
        if marker == " " or line == "":  # a blank context line often loses its space
            hunk.old.append(rest)
            hunk.new.append(rest)
            return False
        self.pos -= 1
        raise self._error(
            f"a hunk line must start with ' ' (context), '-' (remove) or '+' (add), got {line!r}"
        )


# -- fitting hunks ------------------------------------------------------------------

_PUNCTUATION = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u00a0": " ",
    }
)


def _loose(line: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", line).translate(_PUNCTUATION).split())


#: Ways to compare lines, strictest first: the first that finds a hunk wins.
_COMPARISONS: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    str.rstrip,
    str.strip,
    _loose,
)


def _find(lines: list[str], wanted: list[str], start: int) -> int | None:
    """Where ``wanted`` occurs in ``lines`` at or after ``start``, comparing ever more loosely."""
    for norm in _COMPARISONS:
        target = [norm(w) for w in wanted]
        seen = [norm(line) for line in lines[start:]]
        first = target[0]
        for offset in range(len(seen) - len(target) + 1):
            if seen[offset] == first and seen[offset : offset + len(target)] == target:
                return start + offset
    return None


def apply_hunks(text: str, hunks: list[Hunk], path: str) -> str:
    """``text`` with every hunk applied in order; :class:`ToolError` if one does not fit.

    A file with CRLF line ends keeps them, and a missing final newline stays missing.
    """
    newline = "\r\n" if "\r\n" in text else "\n"
    ends_with_newline = text.endswith("\n") or not text
    lines = text.split(newline)
    if ends_with_newline:
        lines.pop()
    cursor = 0
    for number, hunk in enumerate(hunks, start=1):
        cursor = _apply_one(lines, hunk, cursor, f"hunk {number} of {path}")
    return newline.join(lines) + (newline if lines and ends_with_newline else "")


def _apply_one(lines: list[str], hunk: Hunk, cursor: int, where: str) -> int:
    start = cursor
    if hunk.anchor:
        found = _find(lines, [hunk.anchor], cursor)
        if found is None:
            raise ToolError(f"{where}: the '@@ {hunk.anchor}' line was not found in the file")
        # The anchor line may itself be the first context line of the hunk.
        start = found
    if not hunk.old:
        index = len(lines) if hunk.at_end or not hunk.anchor else start + 1
    else:
        if hunk.at_end:
            start = max(start, len(lines) - len(hunk.old))
        found = _find(lines, hunk.old, start)
        if found is None:
            shown = "\n".join(hunk.old[:_SHOWN_LINES])
            raise ToolError(
                f"{where}: the context and removed lines were not found in the file "
                f"(after line {start}); read the file again and copy them exactly. "
                f"They begin:\n{shown}"
            )
        index = found
    lines[index : index + len(hunk.old)] = hunk.new
    return index + len(hunk.new)
