"""File tools: read_file, write_file, edit_file, list_dir and glob.

Each goes through the step's execution environment (``ToolContext.files``): the
host's confined file operations (:mod:`attractor.proc.hostfs`) for the local,
sandbox and container environments, whatever another environment provides.
"""

from __future__ import annotations

from typing import Any

from attractor.agent.tools.base import Tool, ToolContext, schema, threaded
from attractor.agent.tools.paths import reports_os_errors
from attractor.llm.types import ToolDefinition
from attractor.proc.hostfs import DEFAULT_READ_LIMIT
from attractor.proc.hostfs.textfiles import MAX_LINE_BYTES, MAX_READ_BYTES

__all__ = [
    "DEFAULT_READ_LIMIT",
    "MAX_LINE_BYTES",
    "MAX_READ_BYTES",
    "edit_file",
    "file_tools",
    "glob_files",
    "list_dir",
    "read_file",
    "write_file",
]

_PATH = {"type": "string", "description": "path relative to the working directory"}


@reports_os_errors
def read_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Line-numbered text of a file, from ``offset`` (1-based) for ``limit`` lines."""
    offset = int(args.get("offset", 1))
    limit = int(args.get("limit", DEFAULT_READ_LIMIT))
    return ctx.files().read_lines(args["path"], offset, limit)


@reports_os_errors
def write_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Write ``content`` to a file, creating parent directories."""
    return ctx.files().write_text(args["path"], str(args["content"]))


@reports_os_errors
def edit_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Replace an exact string; it must occur once unless ``replace_all`` is true."""
    return ctx.files().edit_text(
        args["path"],
        str(args["old_string"]),
        str(args["new_string"]),
        replace_all=bool(args.get("replace_all", False)),
    )


@reports_os_errors
def list_dir(ctx: ToolContext, args: dict[str, Any]) -> str:
    """The entries of a directory, directories marked with a trailing slash."""
    return ctx.files().list_dir(args.get("path", "."))


@reports_os_errors
def glob_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Paths under ``path`` matching a glob pattern such as ``**/*.py``."""
    return ctx.files().glob(str(args["pattern"]), args.get("path", "."))


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
            read_only=True,
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
            read_only=True,
        ),
        Tool(
            ToolDefinition(
                "glob",
                "Find files by name pattern, e.g. '**/*.py', under path (default '.').",
                schema({"pattern": {"type": "string"}, "path": _PATH}, ["pattern"]),
            ),
            threaded(glob_files),
            read_only=True,
        ),
    ]
