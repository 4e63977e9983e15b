"""File tools: read_file, write_file, edit_file, list_dir and glob."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attractor.agent.tools.base import Tool, ToolContext, schema, threaded
from attractor.agent.tools.paths import display, read_regular, resolve_inside
from attractor.errors import PathEscapeError, ToolError
from attractor.llm.types import ToolDefinition

DEFAULT_READ_LIMIT = 2000
LISTING_LIMIT = 1000
_PATH = {"type": "string", "description": "path relative to the working directory"}


def _not_regular(raw: str) -> ToolError:
    return ToolError(f"{raw} is not a regular file (a pipe, socket or device); it cannot be used")


def _read_text(path: Path, raw: str) -> str:
    if not path.exists():
        raise ToolError(f"{raw}: no such file; use list_dir, glob or search_file to find it")
    if path.is_dir():
        raise ToolError(f"{raw} is a directory; use list_dir to see its entries")
    data = read_regular(path)
    if data is None:
        raise _not_regular(raw)
    if b"\0" in data[:8192]:
        raise ToolError(f"{raw} looks like a binary file; it cannot be shown as text")
    return data.decode("utf-8", errors="replace")


def read_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Line-numbered text of a file, from ``offset`` (1-based) for ``limit`` lines."""
    path = resolve_inside(ctx.workdir, args["path"])
    offset = int(args.get("offset", 1))
    limit = int(args.get("limit", DEFAULT_READ_LIMIT))
    if offset < 1 or limit < 1:
        raise ToolError("offset and limit must be at least 1")
    lines = _read_text(path, args["path"]).splitlines()
    if not lines:
        return f"{args['path']} is empty"
    if offset > len(lines):
        raise ToolError(f"offset {offset} is past the end: the file has {len(lines)} lines")
    shown = lines[offset - 1 : offset - 1 + limit]
    width = len(str(offset + len(shown) - 1))
    body = "\n".join(f"{n:>{width}} | {text}" for n, text in enumerate(shown, start=offset))
    last = offset + len(shown) - 1
    if last < len(lines):
        body += f"\n[lines {offset}-{last} of {len(lines)}; use offset={last + 1} to read on]"
    return body


def write_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Write ``content`` to a file, creating parent directories."""
    path = resolve_inside(ctx.workdir, args["path"])
    if path.is_dir():
        raise ToolError(f"{args['path']} is a directory")
    if path.exists() and not path.is_file():
        # Opening a FIFO for writing blocks until someone reads it.
        raise _not_regular(args["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    data = str(args["content"]).encode("utf-8")
    path.write_bytes(data)
    return f"wrote {len(data)} bytes to {display(path, ctx.workdir)}"


def edit_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Replace an exact string; it must occur once unless ``replace_all`` is true."""
    path = resolve_inside(ctx.workdir, args["path"])
    old, new = str(args["old_string"]), str(args["new_string"])
    if not old:
        raise ToolError("old_string must not be empty; use write_file to create a file")
    text = _read_text(path, args["path"])
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old_string not found in {args['path']}; read the file and copy the text exactly"
        )
    if count > 1 and not args.get("replace_all", False):
        raise ToolError(
            f"old_string occurs {count} times in {args['path']}; include more surrounding "
            "text to make it unique, or set replace_all to true"
        )
    path.write_text(text.replace(old, new), encoding="utf-8")
    return f"replaced {count} occurrence(s) in {display(path, ctx.workdir)}"


def list_dir(ctx: ToolContext, args: dict[str, Any]) -> str:
    """The entries of a directory, directories marked with a trailing slash."""
    raw = args.get("path", ".")
    path = resolve_inside(ctx.workdir, raw)
    if not path.is_dir():
        raise ToolError(f"{raw} is not a directory")
    entries = sorted(path.iterdir(), key=lambda p: p.name)
    names = [p.name + ("/" if p.is_dir() else "") for p in entries[:LISTING_LIMIT]]
    if not names:
        return f"{raw} is empty"
    more = len(entries) - len(names)
    return "\n".join(names) + (f"\n[{more} more entries not shown]" if more > 0 else "")


def glob_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Files under ``path`` matching a glob pattern such as ``**/*.py``."""
    raw = args.get("path", ".")
    base = resolve_inside(ctx.workdir, raw)
    pattern = str(args["pattern"])
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise ToolError("pattern must be relative and must not contain '..'")
    found = []
    for match in sorted(base.glob(pattern)):
        try:
            resolve_inside(ctx.workdir, str(match))
        except PathEscapeError:
            continue  # a symlink leading outside is not ours to show
        if ".git" not in match.relative_to(base).parts:
            found.append(display(match, ctx.workdir))
    if not found:
        return f"no files match {pattern!r} under {raw}"
    more = len(found) - LISTING_LIMIT
    listing = "\n".join(found[:LISTING_LIMIT])
    return listing + (f"\n[{more} more matches not shown]" if more > 0 else "")


def file_tools() -> list[Tool]:
    """The file tools with their JSON schemas."""
    return [
        Tool(
            ToolDefinition(
                "read_file",
                "Read a text file; lines come numbered as 'N | text'. Use offset (1-based "
                "first line) and limit (number of lines) to read part of a long file.",
                schema(
                    {
                        "path": _PATH,
                        "offset": {"type": "integer", "minimum": 1},
                        "limit": {"type": "integer", "minimum": 1},
                    },
                    ["path"],
                ),
            ),
            threaded(read_file),
        ),
        Tool(
            ToolDefinition(
                "write_file",
                "Create or overwrite a file with the given content (parent folders are created).",
                schema({"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
            ),
            threaded(write_file),
        ),
        Tool(
            ToolDefinition(
                "edit_file",
                "Replace exact text in a file. old_string must match exactly and occur once, "
                "unless replace_all is true.",
                schema(
                    {
                        "path": _PATH,
                        "old_string": {"type": "string"},
                        "new_string": {"type": "string"},
                        "replace_all": {"type": "boolean"},
                    },
                    ["path", "old_string", "new_string"],
                ),
            ),
            threaded(edit_file),
        ),
        Tool(
            ToolDefinition(
                "list_dir",
                "List a directory (default: the working directory); folders end with '/'.",
                schema({"path": _PATH}),
            ),
            threaded(list_dir),
        ),
        Tool(
            ToolDefinition(
                "glob",
                "Find files by name pattern, e.g. '**/*.py', under path (default '.').",
                schema({"pattern": {"type": "string"}, "path": _PATH}, ["pattern"]),
            ),
            threaded(glob_files),
        ),
    ]
