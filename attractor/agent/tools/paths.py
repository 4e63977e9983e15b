"""Keeping every tool path inside the working directory: names and error messages.

The tools themselves open through :class:`~attractor.agent.tools.beneath.Beneath`,
which walks a path by descriptor.
"""

from __future__ import annotations

import errno
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attractor.agent.tools.base import ToolContext
from attractor.errors import ToolError


def display(path: Path, workdir: Path) -> str:
    """``path`` relative to ``workdir`` for output the model reads."""
    root = workdir.resolve()
    try:
        relative = path.relative_to(root)
    except ValueError:
        return str(path)
    return str(relative) if str(relative) != "." else "."


_OS_ERRORS = {
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop?)",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "is a directory",
    errno.ENAMETOOLONG: "file name too long",
    errno.ENOSPC: "no space left on the device",
}


def reason(error: OSError) -> str:
    """A short lower-case phrase for ``error``."""
    return _OS_ERRORS.get(error.errno or 0, (error.strerror or str(error)).lower())


BlockingTool = Callable[[ToolContext, dict[str, Any]], str]


def reports_os_errors(function: BlockingTool) -> BlockingTool:
    """Turn an OSError of a file tool into a ToolError naming the path it was given."""

    @functools.wraps(function)
    def run(context: ToolContext, args: dict[str, Any]) -> str:
        try:
            return function(context, args)
        except OSError as error:
            hint = "; use list_dir, glob or search_file to find it"
            found = "" if error.errno != errno.ENOENT else hint
            raise ToolError(f"{args.get('path', '.')}: {reason(error)}{found}") from None

    return run
