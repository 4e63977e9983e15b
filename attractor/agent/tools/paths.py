"""Keeping every tool path inside the working directory: names and error messages.

The operations themselves open through :class:`~attractor.proc.hostfs.beneath.Beneath`,
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
from attractor.proc.hostfs.reasons import reason


def display(path: Path, workdir: Path) -> str:
    """``path`` relative to ``workdir`` for output the model reads."""
    root = workdir.resolve()
    try:
        relative = path.relative_to(root)
    except ValueError:
        return str(path)
    return str(relative) if str(relative) != "." else "."


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
