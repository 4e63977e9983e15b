"""Text files beneath a working directory: read by lines, written whole, edited, listed.

Every path is walked by descriptor (:class:`~attractor.proc.hostfs.beneath.Beneath`),
so nothing outside the working directory is read or written; the answers are the
text the agent's file tools give the model.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attractor.errors import ToolError
from attractor.proc.hostfs import DEFAULT_READ_LIMIT
from attractor.proc.hostfs.beneath import Beneath, Found
from attractor.proc.hostfs.fdio import (
    Line,
    LineReader,
    is_binary,
    not_regular,
    read_all,
    refuse_hard_link,
    regular,
    replace_file,
)
from attractor.proc.hostfs.globbing import LISTING_LIMIT

MAX_READ_BYTES = 256 * 1024  # of line text in one read_file answer
MAX_LINE_BYTES = 16 * 1024  # of one line shown; the rest is cut with a note
MAX_LINE_SCAN = 16 * 1024 * 1024  # read past the end of a line shown, then stop
COUNT_AHEAD = 1024 * 1024  # read on this far to say how many lines the file has
MAX_EDIT_BYTES = 32 * 1024 * 1024
_MIB = 1024 * 1024


def _open_text(found: Found[int], raw: str) -> os.stat_result:
    info = regular(found.value, raw)
    if is_binary(found.value):
        raise ToolError(f"{raw} looks like a binary file; it cannot be shown as text")
    return info


def _show_line(number: int, width: int, line: Line) -> str:
    text = line.text.decode("utf-8", errors="replace")
    if line.left_out:
        over = "" if line.ended else "over "
        text += f" [line cut: {over}{line.left_out} more bytes not shown]"
    return f"{number:>{width}} | {text}"


def _skip(reader: LineReader, lines: int, raw: str) -> int:
    """Read past ``lines`` lines; how many there were (fewer at the end of the file)."""
    for number in range(1, lines + 1):
        line = reader.next_line()
        if line is None:
            return number - 1
        if not line.ended:
            raise ToolError(
                f"line {number} of {raw} is longer than {MAX_LINE_SCAN // _MIB} MiB; "
                "reading stops inside it, so later lines cannot be shown"
            )
    return lines


def _numbered(reader: LineReader, raw: str, offset: int, limit: int) -> str:
    before = _skip(reader, offset - 1, raw)
    shown: list[Line] = []
    size = 0
    while len(shown) < limit and size < MAX_READ_BYTES:
        line = reader.next_line()
        if line is None:
            break
        shown.append(line)
        size += len(line.text)
        if not line.ended:
            break
    if not shown:
        if before == 0:
            return f"{raw} is empty"
        raise ToolError(f"offset {offset} is past the end: the file has {before} lines")
    last = offset + len(shown) - 1
    width = len(str(last))
    body = "\n".join(_show_line(n, width, line) for n, line in enumerate(shown, start=offset))
    if not shown[-1].ended:
        return body + f"\n[line {last} is longer than {MAX_LINE_SCAN // _MIB} MiB; reading stopped]"
    return body + _trailer(reader, offset, last)


def _trailer(reader: LineReader, offset: int, last: int) -> str:
    """Where to read on: the line count is known only if the rest is short."""
    rest = reader.count_rest(COUNT_AHEAD)
    if rest == 0:
        return ""
    if rest is None:
        return f"\n[lines {offset}-{last} shown; more follow: use offset={last + 1} to read on]"
    return f"\n[lines {offset}-{last} of {last + rest}; use offset={last + 1} to read on]"


def read_lines(workdir: Path, raw: str, offset: int = 1, limit: int = DEFAULT_READ_LIMIT) -> str:
    """Line-numbered text of a file, from ``offset`` (1-based) for ``limit`` lines.

    Only what is asked for is read: lines stream from the file, one line shows at
    most :data:`MAX_LINE_BYTES` and one answer at most :data:`MAX_READ_BYTES`.
    Reading a hard-linked file is allowed (package caches hard-link into virtual
    environments); writing one is not.
    """
    if offset < 1 or limit < 1:
        raise ToolError("offset and limit must be at least 1")
    with Beneath(workdir) as beneath, beneath.open(raw) as found:
        _open_text(found, raw)
        return _numbered(LineReader(found.value, MAX_LINE_BYTES, MAX_LINE_SCAN), raw, offset, limit)


def write_text(workdir: Path, raw: str, content: str) -> str:
    """Write ``content`` to a file, creating parent directories (see :func:`write_bytes`)."""
    data = content.encode("utf-8")
    shown = write_bytes(workdir, raw, data)
    return f"wrote {len(data)} bytes to {shown}"


def write_bytes(workdir: Path, raw: str, data: bytes) -> str:
    """Write ``data`` to a file, creating parent directories; the path as shown.

    The new content goes to a temporary file beside it that then replaces the old
    name; a file with other (hard-linked) names is refused, and so is anything
    but a regular file (a FIFO would hold the write till someone reads it).
    """
    with Beneath(workdir) as beneath, beneath.place(raw, create=True) as found:
        info = found.value
        if info is not None:
            if stat.S_ISDIR(info.st_mode):
                raise ToolError(f"{raw} is a directory")
            if not stat.S_ISREG(info.st_mode):
                raise not_regular(raw)  # and it stays: no rename over a FIFO
            refuse_hard_link(info, raw)
        replace_file(found.dir_fd, found.name, data, None if info is None else info.st_mode)
    return found.shown


def read_bytes(workdir: Path, raw: str, limit: int) -> bytes:
    """Every byte of a regular file of at most ``limit`` bytes."""
    with Beneath(workdir) as beneath, beneath.open(raw) as found:
        regular(found.value, raw)
        data = read_all(found.value, limit)
    if data is None:
        raise ToolError(f"{raw} is larger than {limit // _MIB} MiB; it is not read whole")
    return data


def edit_text(
    workdir: Path, raw: str, old_string: str, new_string: str, replace_all: bool = False
) -> str:
    """Replace an exact string; it must occur once unless ``replace_all`` is true.

    The file is read through the descriptor the walk checked and replaced like
    write_file does, unless another name took its place meanwhile.
    """
    old, new = old_string.encode(), new_string.encode()
    if not old:
        raise ToolError("old_string must not be empty; use write_file to create a file")
    with Beneath(workdir) as beneath, beneath.open(raw) as found:
        info = _open_text(found, raw)
        refuse_hard_link(info, raw)
        data = read_all(found.value, MAX_EDIT_BYTES)
        if data is None:
            raise ToolError(
                f"{raw} is larger than {MAX_EDIT_BYTES // _MIB} MiB; edit it with the shell"
            )
        count = data.count(old)
        if count == 0:
            raise ToolError(
                f"old_string not found in {raw}; read the file and copy the text exactly"
            )
        if count > 1 and not replace_all:
            raise ToolError(
                f"old_string occurs {count} times in {raw}; include more surrounding "
                "text to make it unique, or set replace_all to true"
            )
        _unchanged(found, info, raw)
        replace_file(found.dir_fd, found.name, data.replace(old, new), info.st_mode)
    return f"replaced {count} occurrence(s) in {found.shown}"


def _unchanged(found: Found[int], info: os.stat_result, raw: str) -> None:
    """Refuse to replace the name if it no longer names the file that was read."""
    try:
        now = os.stat(found.name, dir_fd=found.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        now = None
    if now is None or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
        raise ToolError(f"{raw} was replaced while it was being edited; read it again")


def list_dir(workdir: Path, raw: str = ".") -> str:
    """The entries of a directory, directories marked with a trailing slash."""
    with Beneath(workdir) as beneath, beneath.open(raw) as found:
        if not stat.S_ISDIR(os.fstat(found.value).st_mode):
            raise ToolError(f"{raw} is not a directory")
        with os.scandir(found.value) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
        # Inside the block: the entries stat through the directory's descriptor.
        names = [entry.name + ("/" if _is_dir(entry) else "") for entry in entries[:LISTING_LIMIT]]
    if not names:
        return f"{raw} is empty"
    more = len(entries) - len(names)
    return "\n".join(names) + (f"\n[{more} more entries not shown]" if more > 0 else "")


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows a symlink, as the listing always has
    except OSError:  # a symlink loop, or no permission to look
        return False
