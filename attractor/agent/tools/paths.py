"""Keeping every tool path inside the working directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attractor.errors import PathEscapeError, ToolError


def resolve_inside(workdir: Path, raw: str) -> Path:
    """The absolute path ``raw`` names, refused unless it stays inside ``workdir``.

    ``raw`` may be relative (to ``workdir``) or absolute. Symlinks are resolved
    before the check, so a link pointing outside is refused like ``..`` is.

    Raises:
        PathEscapeError: the path resolves outside ``workdir``.
        ToolError: the path is empty or contains a NUL byte.
    """
    if not raw.strip():
        raise ToolError("path must not be empty; use '.' for the working directory")
    if "\0" in raw:
        raise ToolError("path must not contain a NUL byte")
    root = workdir.resolve()
    candidate = Path(raw).expanduser()
    if not candidate.is_absolute():
        candidate = root / candidate
    # strict=False: a file that does not exist yet (write_file) is still checked.
    resolved = candidate.resolve(strict=False)
    if resolved != root and root not in resolved.parents:
        raise PathEscapeError(raw, str(root))
    return resolved


def display(path: Path, workdir: Path) -> str:
    """``path`` relative to ``workdir`` for output the model reads."""
    root = workdir.resolve()
    try:
        relative = path.relative_to(root)
    except ValueError:
        return str(path)
    return str(relative) if str(relative) != "." else "."


def read_regular(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is a regular file, else None (a pipe, socket or device).

    Opening a FIFO for reading blocks until a writer appears, which would hang the
    tool thread for good; O_NONBLOCK makes that open return at once, and the check
    on the opened descriptor (not on the name) leaves no window for a swap.

    Raises:
        OSError: the file cannot be opened or read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read()
