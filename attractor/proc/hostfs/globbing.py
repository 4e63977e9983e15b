"""glob: find paths by a name pattern such as ``**/*.py``.

Matching follows pathlib's rules: ``*``, ``?`` and ``[...]`` within one
component, ``**`` for any number of directories, case-sensitive, dotfiles
included. The walk goes by descriptor (:mod:`attractor.proc.hostfs.tree`) and does
not enter symlinked directories, except one named literally at the start of the
pattern or in ``path``.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import stat
from pathlib import Path, PurePosixPath

from attractor.errors import PathEscapeError, ToolError
from attractor.proc.hostfs.beneath import Beneath, show
from attractor.proc.hostfs.tree import Skipped, is_symlink, walk

LISTING_LIMIT = 1000
_MAGIC = frozenset("*?[")
_PRUNE = frozenset({".git"})


def matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """Whether the components ``path`` match the glob components ``pattern``."""

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(pattern):
            return j == len(path)
        if pattern[i] == "**":
            return match(i + 1, j) or (j < len(path) and match(i, j + 1))
        return j < len(path) and fnmatch.fnmatchcase(path[j], pattern[i]) and match(i + 1, j + 1)

    return match(0, 0)


def _split(pattern: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The literal leading components (at most all but one) and the pattern after them."""
    parts = PurePosixPath(pattern).parts
    if not parts:
        raise ToolError("pattern must not be empty; use '*' for every entry of a folder")
    if PurePosixPath(pattern).is_absolute() or ".." in parts:
        raise ToolError("pattern must be relative and must not contain '..'")
    literal = 0
    while literal < len(parts) - 1 and not _MAGIC & set(parts[literal]):
        literal += 1
    return parts[:literal], parts[literal:]


def glob_files(workdir: Path, pattern: str, raw: str = ".") -> str:
    """Paths under ``raw`` (relative to ``workdir``) matching a glob pattern such as
    ``**/*.py``, one a line, as the model reads them."""
    prefix, rest = _split(pattern)
    skipped = Skipped()
    found: list[tuple[str, ...]] = []
    with Beneath(workdir) as beneath:
        try:
            with beneath.open(raw, parts=beneath.parts(raw) + prefix) as top:
                if stat.S_ISDIR(os.fstat(top.value).st_mode):
                    found = _search(beneath, top.value, top.parts, rest, skipped)
        except (FileNotFoundError, NotADirectoryError):
            pass  # nothing there to match
    if not found:
        found_nothing = f"no files match {pattern!r} under {raw}"
        note = skipped.note()
        return found_nothing + (f"\n{note}" if note else "")
    listing = [show(parts) for parts in sorted(found)]
    more = len(listing) - LISTING_LIMIT
    lines = listing[:LISTING_LIMIT] + ([f"[{more} more matches not shown]"] if more > 0 else [])
    note = skipped.note()
    return "\n".join([*lines, note] if note else lines)


def _search(
    beneath: Beneath,
    top_fd: int,
    base: tuple[str, ...],
    rest: tuple[str, ...],
    skipped: Skipped,
) -> list[tuple[str, ...]]:
    depth = None if "**" in rest else len(rest)
    found = []
    for folder in walk(top_fd, base, skipped, prune=_PRUNE, depth=depth):
        for entry in folder.entries:
            relative = (*folder.parts, entry.name)
            if entry.name in _PRUNE or not matches(rest, relative):
                continue
            parts = (*base, *relative)
            if rest[-1] == "**" and not entry.is_dir(follow_symlinks=False):
                continue  # as pathlib: a trailing ** names directories
            if is_symlink(entry) and not _stays_inside(beneath, parts, skipped):
                continue
            found.append(parts)
    return found


def _stays_inside(beneath: Beneath, parts: tuple[str, ...], skipped: Skipped) -> bool:
    """Whether a symlink resolves inside the working directory (a loop is noted)."""
    try:
        with beneath.place(show(parts), parts=parts):
            return True
    except PathEscapeError:
        return False  # a symlink leading outside is not ours to show
    except OSError as error:
        skipped.add(parts, error)
        return False
