"""Reads that cannot hang or explode: regular files only, of bounded size.

Every file attractor reads on a user's behalf (pipeline, config file, answers
file, checkpoint, manifest, results) goes through :func:`read_bounded`: it must
be a regular file (a FIFO or ``/dev/zero`` would block or never end) no larger
than a limit no real file comes near. Problems are
:class:`~attractor.errors.InputFileError`, which callers turn into their own
errors.

Files of a run directory that grow (``journal.jsonl``, ``events.jsonl``,
``results.jsonl``) are streamed by :func:`read_lines`, one line in memory at a
time, with a cap per line and in total; stage files are read in part by
:func:`read_head` and :func:`read_tail`. All of them go through
:func:`open_regular`: O_NONBLOCK, then fstat, so nothing but a regular file is
ever read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from attractor.errors import InputFileError

MiB = 1024 * 1024
#: Pipeline, config and answers files: hand-written text, kilobytes in practice.
TEXT_LIMIT = 16 * MiB
#: checkpoint.json, manifest.json, results.jsonl: grow with the run, still far below this.
STATE_LIMIT = 256 * MiB
#: One line of a JSONL run file (an event, a journal record, a results row).
LINE_LIMIT = 64 * MiB
#: events.jsonl as a whole: read as a stream, one line at a time.
EVENTS_LIMIT = 4096 * MiB
_READ_CHUNK = MiB
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


# -- bounded reads ------------------------------------------------------------------


def read_bounded(path: str | Path, limit: int, what: str, *, follow: bool = True) -> str:
    """The UTF-8 text of regular file ``path``, at most ``limit`` bytes.

    Newlines are translated as :meth:`Path.read_text` does, and a byte-order mark
    at its start (some Windows editors write one) is dropped. ``what`` names the
    file in messages (``"pipeline file"``). The file is opened with O_NONBLOCK,
    so a FIFO does not block the open, and refused unless fstat says it is a
    regular file; the size is checked before and while reading (``/proc`` files
    report 0).

    ``follow=False`` for a file in a folder a step can write (its status.json):
    a link left in its place is refused, not read through.

    Raises:
        InputFileError: with ``kind`` os, not_regular, too_large or not_utf8.
    """
    shown = str(path)
    data = _read_regular(shown, limit, what, follow)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputFileError(
            shown, "cannot read: not UTF-8 text", f"save the {what} as UTF-8", kind="not_utf8"
        ) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def require_regular(path: str | Path, what: str, *, verb: str = "") -> None:
    """Refuse ``path`` if it exists and is not a regular file (a missing file is fine,
    a symbolic link to a missing file is not).

    ``verb`` starts the reason (``"cannot read: "``) when the caller is about to read.

    Raises:
        InputFileError: ``kind`` not_regular, or os when stat fails other than ENOENT.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):  # writing through it would create a file elsewhere
            raise InputFileError(
                str(path),
                f"{verb}a symbolic link to nothing ({os.readlink(path)}), not a regular file",
                f"pass a regular {what}",
                kind="not_regular",
            ) from None
        return
    except OSError as exc:
        raise os_error(str(path), exc) from None
    if not stat.S_ISREG(mode):
        raise _not_regular(str(path), mode, what, verb)


def _read_regular(path: str, limit: int, what: str, follow: bool = True) -> bytes:
    fd, size = open_regular(path, what, follow=follow)
    try:
        if size > limit:
            raise too_large(path, limit, what, size)
        return _read_at_most(fd, path, limit, what)
    except OSError as exc:
        raise os_error(path, exc) from None
    finally:
        os.close(fd)


def open_regular(path: str | Path, what: str, *, follow: bool = True) -> tuple[int, int]:
    """A read-only descriptor of regular file ``path`` and its size; the caller closes it.

    Opened with O_NONBLOCK (a FIFO cannot block the open) after a stat that refuses
    a device, and checked again with fstat on what was opened. ``follow=False``
    refuses a symbolic link as the last component.

    Raises:
        InputFileError: ``kind`` os or not_regular.
    """
    shown = str(path)
    require_regular(shown, what, verb="cannot read: ")  # refuse a device before opening it
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    if not follow:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(shown, flags)
    except OSError as exc:
        raise os_error(shown, exc) from None
    try:
        info = os.fstat(fd)  # what was opened, in case the path changed since the stat
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(shown, info.st_mode, what, "cannot read: ")
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_head(path: str | Path, limit: int, what: str, *, follow: bool = True) -> bytes:
    """At most the first ``limit`` bytes of regular file ``path`` (a longer file is cut).

    ``follow=False`` for a file in a folder a step can write (a stage directory):
    a link it left there is refused, not read through.

    Raises:
        InputFileError: ``kind`` os or not_regular.
    """
    fd, _ = open_regular(path, what, follow=follow)
    try:
        return read_upto(fd, 0, limit)
    except OSError as exc:
        raise os_error(str(path), exc) from None
    finally:
        os.close(fd)


def read_tail(
    path: str | Path, limit: int, what: str, *, follow: bool = True
) -> tuple[bytes, bool]:
    """The last ``limit`` bytes of regular file ``path``, and whether more came before
    (``follow`` as for :func:`read_head`).

    Raises:
        InputFileError: ``kind`` os or not_regular.
    """
    fd, size = open_regular(path, what, follow=follow)
    try:
        start = max(0, size - limit)
        return read_upto(fd, start, limit), start > 0
    except OSError as exc:
        raise os_error(str(path), exc) from None
    finally:
        os.close(fd)


def read_upto(fd: int, offset: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < limit and (chunk := os.pread(fd, min(_READ_CHUNK, limit - total), offset)):
        chunks.append(chunk)
        total += len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def read_lines(
    path: str | Path,
    what: str,
    *,
    offset: int = 0,
    line_limit: int = LINE_LIMIT,
    total_limit: int = STATE_LIMIT,
) -> Iterator[tuple[int, bytes]]:
    """Stream the whole lines of regular file ``path`` from byte ``offset``.

    Yields ``(end, line)``: the byte offset just after the line's newline, and
    the line without it. A last line without its newline (a write cut short, or
    one still being written) is not yielded. Only one chunk and one line are in
    memory at a time. An ``offset`` past the end yields nothing.

    Raises:
        InputFileError: ``kind`` os or not_regular; too_large when a line is
            longer than ``line_limit`` or more than ``total_limit`` bytes follow
            ``offset``.
    """
    shown = str(path)
    fd, size = open_regular(shown, what)
    try:
        yield from _lines(fd, shown, what, min(offset, size), line_limit, total_limit)
    except OSError as exc:
        raise os_error(shown, exc) from None
    finally:
        os.close(fd)


def _lines(
    fd: int, path: str, what: str, offset: int, line_limit: int, total_limit: int
) -> Iterator[tuple[int, bytes]]:
    read_at = end = offset
    parts: list[bytes] = []  # the start of a line that the chunks read so far did not end
    waiting = 0
    while chunk := os.pread(fd, _READ_CHUNK, read_at):
        read_at += len(chunk)
        if read_at - offset > total_limit:
            raise too_large(path, total_limit, what, None)
        begin = 0
        while (newline := chunk.find(b"\n", begin)) != -1:
            line = chunk[begin:newline]
            if parts:
                line = b"".join([*parts, line])
                parts, waiting = [], 0
            if len(line) > line_limit:
                raise _long_line(path, line_limit, what)
            end += len(line) + 1
            yield end, line
            begin = newline + 1
        if begin < len(chunk):
            parts.append(chunk[begin:])
            waiting += len(chunk) - begin
            if waiting > line_limit:
                raise _long_line(path, line_limit, what)


def _long_line(path: str, limit: int, what: str) -> InputFileError:
    return InputFileError(
        path,
        f"cannot read: a line longer than the {format_size(limit)} limit for {_a(what)}",
        "the file is damaged",
        kind="too_large",
        limit=limit,
    )


def _read_at_most(fd: int, path: str, limit: int, what: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := os.read(fd, min(_READ_CHUNK, limit + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise too_large(path, limit, what, None)
    return b"".join(chunks)


def os_error(path: str, exc: OSError) -> InputFileError:
    reason = exc.strerror or type(exc).__name__
    hint = "check the path" if exc.errno == errno.ENOENT else "check the path and its permissions"
    return InputFileError(path, f"cannot read: {reason}", hint, kind="os", errno=exc.errno)


def _not_regular(path: str, mode: int, what: str, verb: str) -> InputFileError:
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return InputFileError(
        path,
        f"{verb}{kind}, not a regular file",
        f"pass a regular {what}",
        kind="not_regular",
    )


def too_large(path: str, limit: int, what: str, size: int | None) -> InputFileError:
    found = "larger than" if size is None else f"{format_size(size)}, over"
    return InputFileError(
        path,
        f"cannot read: {found} the {format_size(limit)} limit for {_a(what)}",
        "check that this is the right file",
        kind="too_large",
        limit=limit,
    )


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in ("a", "e", "i", "o", "u") else f"a {noun}"


def format_size(size: int) -> str:
    """``16 MiB``, ``16.5 MiB`` or ``512 bytes``."""
    if size < MiB:
        return f"{size} bytes"
    mib = size / MiB
    return f"{mib:.0f} MiB" if size % MiB == 0 else f"{mib:.1f} MiB"
