"""Reading and writing files through descriptors, in bounded memory.

The tools get their descriptors from :class:`~attractor.proc.hostfs.beneath.Beneath`;
nothing here takes a path. Reads stream in chunks so a huge (or sparse) file costs
only what is asked of it; writes go to a new file in the same directory that then
replaces the old name in one rename.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat

from attractor.errors import ToolError
from attractor.valueclass import frozen

CHUNK = 64 * 1024
BINARY_SNIFF = 8192  # a NUL in this many first bytes marks a binary file


def regular(fd: int, raw: str) -> os.stat_result:
    """The fstat of ``fd``, refused unless it is a regular file."""
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{raw} is a directory; use list_dir to see its entries")
    if not stat.S_ISREG(info.st_mode):
        raise not_regular(raw)
    return info


def not_regular(raw: str) -> ToolError:
    return ToolError(f"{raw} is not a regular file (a pipe, socket or device); it cannot be used")


def refuse_hard_link(info: os.stat_result, raw: str) -> None:
    """Refuse to change a file that has other names: one of them may be outside."""
    if info.st_nlink > 1:
        raise ToolError(
            f"{raw} is a hard link to a file with {info.st_nlink - 1} other name(s), possibly "
            "outside the working directory, so it is not changed; to replace only this name, "
            "delete it first and then write the file"
        )


def is_binary(fd: int) -> bool:
    return b"\0" in os.pread(fd, BINARY_SNIFF, 0)


def read_all(fd: int, limit: int) -> bytes | None:
    """Every byte of ``fd``, or None if it holds more than ``limit``."""
    parts: list[bytes] = []
    size = 0
    while chunk := os.read(fd, CHUNK):
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
    return b"".join(parts)


@frozen
class Line:
    """One line, without its newline (or ``\\r\\n``)."""

    text: bytes  # at most the reader's ``keep`` bytes of it
    left_out: int  # bytes of the line not in ``text``
    ended: bool  # False: it ran past the reader's ``scan`` bytes, and reading stopped in it


class LineReader:
    """The lines of an open file, read in chunks: memory stays bounded whatever it holds.

    Lines end at ``\\n``. A line keeps at most ``keep`` bytes; the rest is read past
    (and counted), but no further than ``scan`` bytes into the line.
    """

    def __init__(self, fd: int, keep: int, scan: int | None = None) -> None:
        self._fd = fd
        self._keep = keep
        self._scan = scan
        self._chunk = b""
        self._pos = 0

    def _fill(self) -> bool:
        if self._pos < len(self._chunk):
            return True
        self._chunk, self._pos = os.read(self._fd, CHUNK), 0
        return bool(self._chunk)

    def next_line(self) -> Line | None:
        """The next line, or None at the end of the file."""
        if not self._fill():
            return None
        kept = bytearray()
        length = 0
        last = b""
        while self._fill():
            end = self._chunk.find(b"\n", self._pos)
            stop = len(self._chunk) if end == -1 else end
            room = self._keep - len(kept)
            if room > 0:
                kept += self._chunk[self._pos : min(stop, self._pos + room)]
            if stop > self._pos:
                length += stop - self._pos
                last = self._chunk[stop - 1 : stop]
            self._pos = stop if end == -1 else end + 1
            if end != -1:
                break
            if self._scan is not None and length > self._scan:
                return Line(bytes(kept), length - len(kept), ended=False)
        if last == b"\r":  # a CRLF line end
            length -= 1
            del kept[length:]
        return Line(bytes(kept), length - len(kept), ended=True)

    def count_rest(self, budget: int) -> int | None:
        """How many lines are left, if the end comes within ``budget`` bytes; else None."""
        count, seen, last = 0, 0, b"\n"
        while self._fill():
            piece = self._chunk[self._pos :]
            self._pos = len(self._chunk)
            count += piece.count(b"\n")
            seen += len(piece)
            last = piece[-1:]
            if seen > budget:
                return None
        return count + (last != b"\n")


def replace_file(dir_fd: int, name: str, data: bytes, mode: int | None) -> None:
    """Make ``name`` in ``dir_fd`` a new file holding ``data``, in one rename.

    The rename replaces the directory entry itself: a symlink or a second name
    swapped in meanwhile is replaced, never written through. ``mode`` (the old
    file's) keeps its permission bits; a new file gets 0o666 less the umask.
    """
    temporary = f".{secrets.token_hex(8)}.attractor-tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o666 if mode is None else 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if mode is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(mode))
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise
