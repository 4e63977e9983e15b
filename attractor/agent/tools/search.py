"""search_file: find lines matching a literal string or a regular expression."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from attractor.agent.tools.base import Tool, ToolContext, schema, threaded
from attractor.agent.tools.paths import display, read_regular, resolve_inside
from attractor.errors import PathEscapeError, ToolError
from attractor.llm.types import ToolDefinition

MAX_MATCHES = 200
MAX_LINE = 300
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv"})


def _matcher(args: dict[str, Any]) -> Callable[[str], bool]:
    pattern = str(args["pattern"])
    if not pattern:
        raise ToolError("pattern must not be empty")
    flags = re.IGNORECASE if args.get("ignore_case", False) else 0
    if not args.get("regex", False):
        pattern = re.escape(pattern)
    try:
        compiled = re.compile(pattern, flags)
    except re.error as error:
        raise ToolError(f"invalid regular expression {args['pattern']!r}: {error}") from None
    return lambda line: compiled.search(line) is not None


def _files(root: Path, workdir: Path) -> Iterator[Path]:
    """Regular-file candidates under ``root``, in a stable order, never leaving ``workdir``.

    Pipes, sockets and devices are left out: reading a FIFO would block forever.
    """
    if root.is_file():
        yield root
        return
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            try:
                path = resolve_inside(workdir, str(Path(folder) / name))
            except PathEscapeError:
                continue  # a symlink leading outside the working directory
            if path.is_file():
                yield path


def _lines(path: Path) -> list[str]:
    try:
        data = read_regular(path)
    except OSError:
        return []
    if data is None or b"\0" in data[:8192]:
        return []  # not a regular file (swapped since listed), or binary
    return data.decode("utf-8", errors="replace").splitlines()


def search_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Matching lines as ``path:line: text``, at most :data:`MAX_MATCHES`."""
    raw = args.get("path", ".")
    root = resolve_inside(ctx.workdir, raw)
    if not root.exists():
        raise ToolError(f"{raw}: no such file or directory")
    if not (root.is_file() or root.is_dir()):
        raise ToolError(f"{raw} is not a regular file or a directory (a pipe, socket or device)")
    matches = _matcher(args)
    shown: list[str] = []
    total = 0
    for path in _files(root, ctx.workdir):
        for number, line in enumerate(_lines(path), start=1):
            if matches(line):
                total += 1
                if len(shown) < MAX_MATCHES:
                    text = line if len(line) <= MAX_LINE else line[:MAX_LINE] + "..."
                    shown.append(f"{display(path, ctx.workdir)}:{number}: {text}")
    if not shown:
        return f"no matches for {args['pattern']!r} in {raw}"
    if total > len(shown):
        shown.append(
            f"[{total - len(shown)} more matches not shown (total {total}); "
            "narrow the pattern or the path]"
        )
    return "\n".join(shown)


def search_tool() -> Tool:
    return Tool(
        ToolDefinition(
            "search_file",
            "Search file contents. Finds lines containing pattern (a literal string, or "
            "a regular expression when regex is true) in a file or, recursively, a "
            f"directory (default '.'). Answers 'path:line: text', at most {MAX_MATCHES} lines.",
            schema(
                {
                    "pattern": {"type": "string"},
                    "path": {"type": "string", "description": "file or directory to search"},
                    "regex": {"type": "boolean", "description": "treat pattern as a regex"},
                    "ignore_case": {"type": "boolean"},
                },
                ["pattern"],
            ),
        ),
        threaded(search_file),
    )
