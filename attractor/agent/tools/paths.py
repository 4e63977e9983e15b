"""Keeping every tool path inside the working directory."""

from __future__ import annotations

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
