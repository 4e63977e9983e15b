"""git refs read from the repository's files, where that is sure: a git process spared.

git keeps a ref as a file of its own under the common git directory
(``refs/heads/NAME``, a "loose" ref) or as a line of ``packed-refs``; ``HEAD``
lives in each worktree's git directory. These functions read those files and
answer only what the files settle. A repository that keeps its refs otherwise
(the ``reftable`` format of git 2.45 on) or a file they cannot read or make
sense of gives ``None``: the caller asks git, as it would have without them.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

#: An object name: SHA-1 (40 hex digits) or SHA-256 (64).
_OBJECT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def read_plain(path: Path) -> str:
    """The text of the regular file ``path``, never through a link or from a FIFO (a
    step may write the git directory's refs and logs: it cannot make this wait).

    Raises:
        OSError: missing (FileNotFoundError), a link, or not a regular file.
        UnicodeDecodeError: not UTF-8.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        parts = []
        while chunk := os.read(fd, 1 << 20):
            parts.append(chunk)
    finally:
        os.close(fd)
    return b"".join(parts).decode("utf-8")


def _readable(common_dir: Path) -> bool:
    """Whether ``common_dir`` keeps its refs as files (and this can see them)."""
    return (common_dir / "refs").is_dir() and not (common_dir / "reftable").exists()


def _packed(common_dir: Path) -> list[tuple[str, str]] | None:
    """``(name, object)`` of each line of ``packed-refs`` ([] without one; None: unreadable)."""
    try:
        text = read_plain(common_dir / "packed-refs")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError):
        return None
    found = []
    for line in text.splitlines():
        if not line or line.startswith(("#", "^")):
            continue  # the header, and the commit a tag above points to
        value, _, name = line.partition(" ")
        found.append((name, value))
    return found


def _has_file(folder: Path) -> bool:
    """Whether ``folder`` holds a file at any depth (git leaves empty folders behind)."""
    return any(files for _, _, files in os.walk(folder))


def any_ref(common_dir: Path, prefixes: Iterable[str]) -> bool | None:
    """Whether a ref is named by one of ``prefixes`` or lies under it, as
    ``git for-each-ref --count=1 PREFIX...`` would find one (None: ask git)."""
    if not _readable(common_dir):
        return None
    prefixes = tuple(prefixes)
    for prefix in prefixes:
        loose = common_dir / prefix
        if loose.is_file() or (loose.is_dir() and _has_file(loose)):
            return True
    packed = _packed(common_dir)
    if packed is None:
        return None
    return any(name == p or name.startswith(p + "/") for name, _ in packed for p in prefixes)


def read_ref(common_dir: Path, name: str) -> str | None:
    """The object ref ``name`` (``refs/heads/...``) points to: its loose file, else its
    line of ``packed-refs`` (None: ask git; a ref that does not exist is None too)."""
    try:
        text = read_plain(common_dir / name).strip()
    except FileNotFoundError:
        if not _readable(common_dir):
            return None
        value = dict(_packed(common_dir) or ()).get(name, "")
        return value if _OBJECT.fullmatch(value) else None
    except (OSError, UnicodeDecodeError):
        return None
    return text if _OBJECT.fullmatch(text) else None


def resolve_head(git_dir: Path, common_dir: Path) -> str | None:
    """The commit ``HEAD`` of the worktree whose git directory is ``git_dir`` names
    (None: ask git; an unborn branch is None too)."""
    if not _readable(common_dir):
        return None
    try:
        text = read_plain(git_dir / "HEAD").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if _OBJECT.fullmatch(text):  # detached
        return text
    if not text.startswith("ref: refs/"):
        return None
    return read_ref(common_dir, text.removeprefix("ref: "))
