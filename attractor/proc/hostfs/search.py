"""grep: the lines of a file or a tree matching a literal string or a regular expression."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from attractor.errors import ToolError
from attractor.proc.hostfs.beneath import Beneath, Found, show
from attractor.proc.hostfs.fdio import LineReader, is_binary
from attractor.proc.hostfs.pattern import Matcher, matcher
from attractor.proc.hostfs.tree import Skipped, open_file, walk

MAX_MATCHES = 200
MAX_LINE = 300
# Only this much of one line is matched against: memory stays bounded on a
# file that is one enormous line.
SEARCH_LINE_BYTES = 1024 * 1024
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv"})


def _files(beneath: Beneath, top: Found[int], skipped: Skipped) -> Iterator[tuple[str, int]]:
    """``(shown path, descriptor)`` of each regular file under ``top``, in a stable order.

    Pipes, sockets and devices are left out (reading a FIFO would block forever),
    and so are symlinks leading outside the working directory.
    """
    for folder in walk(top.value, top.parts, skipped, prune=_SKIP_DIRS):
        for entry in folder.entries:
            parts = (*top.parts, *folder.parts, entry.name)
            with open_file(beneath, folder, entry, parts, skipped) as fd:
                if fd is not None:
                    yield show(parts), fd


def _matching_lines(fd: int, matches: Matcher) -> Iterator[tuple[int, str]]:
    if is_binary(fd):
        return
    reader = LineReader(fd, keep=SEARCH_LINE_BYTES)
    number = 0
    while (line := reader.next_line()) is not None:
        number += 1
        if matches(line.text):
            yield number, line.text[: MAX_LINE * 4].decode("utf-8", errors="replace")


def grep(
    workdir: Path, pattern: str, raw: str = ".", *, regex: bool = False, ignore_case: bool = False
) -> str:
    """Matching lines under ``raw`` as ``path:line: text``, at most :data:`MAX_MATCHES`.

    A regex is RE2 syntax (see :mod:`attractor.proc.hostfs.pattern`). Lines end at
    ``\\n``; only the first :data:`SEARCH_LINE_BYTES` of a line are searched.
    """
    matches = matcher(pattern, regex=regex, ignore_case=ignore_case)
    skipped = Skipped()
    shown: list[str] = []
    total = 0
    with Beneath(workdir) as beneath, beneath.open(raw) as top:
        mode = os.fstat(top.value).st_mode
        if stat.S_ISREG(mode):
            files: Iterator[tuple[str, int]] = iter([(top.shown, top.value)])
        elif stat.S_ISDIR(mode):
            files = _files(beneath, top, skipped)
        else:
            raise ToolError(
                f"{raw} is not a regular file or a directory (a pipe, socket or device)"
            )
        for path, fd in files:
            for number, text in _matching_lines(fd, matches):
                total += 1
                if len(shown) < MAX_MATCHES:
                    text = text if len(text) <= MAX_LINE else text[:MAX_LINE] + "..."
                    shown.append(f"{path}:{number}: {text}")
    if not shown:
        shown.append(f"no matches for {pattern!r} in {raw}")
    elif total > len(shown):
        shown.append(
            f"[{total - len(shown)} more matches not shown (total {total}); "
            "narrow the pattern or the path]"
        )
    note = skipped.note()
    return "\n".join([*shown, note] if note else shown)
