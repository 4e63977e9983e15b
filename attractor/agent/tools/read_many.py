"""read_many_files: several files in one call (the Gemini profile's batch read)."""

from __future__ import annotations

from typing import Any

from attractor.agent.tools.base import Tool, ToolContext, schema, threaded
from attractor.agent.tools.files import read_file
from attractor.errors import ToolError
from attractor.llm.types import ToolDefinition

MAX_FILES = 20
PER_FILE_LINES = 500


def read_many_files(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Each file under a ``=== path ===`` header; a file that fails shows its error."""
    paths = args["paths"]
    if not paths or not all(isinstance(p, str) for p in paths):
        raise ToolError("paths must be a non-empty list of file paths")
    if len(paths) > MAX_FILES:
        raise ToolError(f"at most {MAX_FILES} files per call; split the list")
    parts = []
    for path in paths:
        try:
            body = read_file(ctx, {"path": path, "limit": PER_FILE_LINES})
        except ToolError as error:
            body = f"[error: {error}]"
        parts.append(f"=== {path} ===\n{body}")
    return "\n\n".join(parts)


def read_many_tool() -> Tool:
    return Tool(
        ToolDefinition(
            "read_many_files",
            f"Read up to {MAX_FILES} text files at once; each comes line-numbered under a "
            f"'=== path ===' header, at most {PER_FILE_LINES} lines per file (use read_file "
            "with offset for the rest).",
            schema(
                {"paths": {"type": "array", "items": {"type": "string"}}},
                ["paths"],
            ),
        ),
        threaded(read_many_files),
        read_only=True,
    )
