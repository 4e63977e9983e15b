"""Walking a directory tree by descriptor, for glob and search_file.

The walk never follows a symlink into a directory, so no link can make it loop or
leave the working directory. A symlink entry is resolved on its own, through
:class:`~attractor.proc.hostfs.beneath.Beneath`: one that leads outside is left out
silently, as if it were not there; one that loops, or a path that cannot be read,
is left out with a note (:class:`Skipped`) so the model knows the answer is partial.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import field

from attractor.errors import PathEscapeError
from attractor.proc.hostfs.beneath import READ_FLAGS, Beneath, show
from attractor.proc.hostfs.reasons import reason
from attractor.valueclass import frozen, mutable

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOTED = 5  # skipped paths named in the note; the rest are counted


@mutable
class Skipped:
    """Paths a walk left out, and why, for a note at the end of the output."""

    paths: list[tuple[str, str]] = field(default_factory=list)

    def add(self, parts: tuple[str, ...], error: OSError) -> None:
        why = "symlink loop" if error.errno == errno.ELOOP else reason(error)
        self.paths.append((why, show(parts)))

    def note(self) -> str | None:
        """E.g. ``[skipped 1 path: symlink loop: a/loop]``, or None if none was."""
        if not self.paths:
            return None
        count = len(self.paths)
        named = "; ".join(f"{why}: {path}" for why, path in self.paths[:_NOTED])
        more = f"; and {count - _NOTED} more" if count > _NOTED else ""
        return f"[skipped {count} path{'s' if count > 1 else ''}: {named}{more}]"


@frozen
class Folder:
    """One directory of a walk: its path below the start, descriptor and sorted entries."""

    parts: tuple[str, ...]
    fd: int
    entries: list[os.DirEntry[str]]


def walk(
    top_fd: int,
    base: tuple[str, ...],
    skipped: Skipped,
    *,
    prune: frozenset[str] = frozenset(),
    depth: int | None = None,
) -> Iterator[Folder]:
    """Directories under ``top_fd`` (``base`` for notes), top-down and sorted by name.

    Directories named in ``prune`` are not entered; nor are those ``depth`` levels down.
    """
    yield from _walk(top_fd, (), base, skipped, prune, depth)


def _walk(
    fd: int,
    parts: tuple[str, ...],
    base: tuple[str, ...],
    skipped: Skipped,
    prune: frozenset[str],
    depth: int | None,
) -> Iterator[Folder]:
    try:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as error:
        skipped.add(base + parts, error)
        return
    yield Folder(parts, fd, entries)
    if depth is not None and len(parts) + 1 >= depth:
        return
    for entry in entries:
        if entry.name in prune or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            sub = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
        except OSError as error:
            # Gone, or swapped for something else, since the listing: nothing to say.
            if error.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                skipped.add((*base, *parts, entry.name), error)
            continue
        try:
            yield from _walk(sub, (*parts, entry.name), base, skipped, prune, depth)
        finally:
            os.close(sub)


def is_symlink(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


@contextlib.contextmanager
def open_file(
    beneath: Beneath,
    folder: Folder,
    entry: os.DirEntry[str],
    parts: tuple[str, ...],
    skipped: Skipped,
) -> Iterator[int | None]:
    """A descriptor of the regular file ``entry`` (``parts`` from the working directory),
    a symlink followed if it stays inside; None for anything else."""
    try:
        fd = _open_entry(beneath, folder, entry, parts)
    except PathEscapeError:
        fd = None  # not ours to show
    except OSError as error:
        if error.errno not in (errno.ENOENT, errno.ENOTDIR):  # dangling, or gone
            skipped.add(parts, error)
        fd = None
    if fd is not None and not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        fd = None
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _open_entry(
    beneath: Beneath, folder: Folder, entry: os.DirEntry[str], parts: tuple[str, ...]
) -> int | None:
    if entry.is_file(follow_symlinks=False):
        try:
            return os.open(entry.name, READ_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder.fd)
        except OSError as error:
            if error.errno != errno.ELOOP:
                raise
            # Swapped for a symlink since the listing: resolve it like one.
    elif not is_symlink(entry):
        return None  # a directory, pipe, socket or device
    with beneath.open(show(parts), parts=parts) as found:
        return os.dup(found.value)
