"""search_file: find lines matching a literal string or a regular expression.

The search itself is the step's execution environment's ``grep``
(:mod:`attractor.proc.hostfs.search` for the environments that see the host's files).
"""

from __future__ import annotations

from typing import Any

from attractor.agent.tools.base import Tool, ToolContext, schema, threaded
from attractor.agent.tools.paths import reports_os_errors
from attractor.llm.types import ToolDefinition
from attractor.proc.hostfs.search import MAX_MATCHES

__all__ = ["MAX_MATCHES", "search_file", "search_tool"]


@reports_os_errors
def search_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Matching lines as ``path:line: text``, at most :data:`MAX_MATCHES`."""
    return ctx.files().grep(
        str(args["pattern"]),
        args.get("path", "."),
        regex=bool(args.get("regex", False)),
        ignore_case=bool(args.get("ignore_case", False)),
    )


def search_tool() -> Tool:
    return Tool(
        ToolDefinition(
            "search_file",
            "Search file contents. Finds lines containing pattern (a literal string, or "
            "a regular expression in RE2 syntax when regex is true: no backreferences or "
            "lookaround) in a file or, recursively, a directory (default '.'). Answers "
            f"'path:line: text', at most {MAX_MATCHES} lines.",
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
        read_only=True,
    )
