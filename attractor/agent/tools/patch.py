"""The apply_patch tool: file changes in the v4a patch format.

The patch is applied by the step's execution environment
(:mod:`attractor.proc.hostfs.patch` for the environments that see the host's
files): all or nothing as far as the files allow, beneath the working directory.
"""

from __future__ import annotations

from typing import Any

from attractor.agent.tools.base import Tool, ToolContext, schema, threaded
from attractor.llm.types import ToolDefinition


def apply_patch(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Apply a v4a patch; answer one line per file: A added, M updated, D deleted."""
    return ctx.files().apply_patch(str(args["patch"]))


PATCH_HELP = (
    "Edit files with a patch. The patch starts with '*** Begin Patch' and ends with "
    "'*** End Patch'. Inside: '*** Add File: PATH' followed by the new lines each "
    "prefixed with '+'; '*** Delete File: PATH'; or '*** Update File: PATH' (optionally "
    "'*** Move to: NEW_PATH'), then hunks, each starting with '@@' (optionally followed "
    "by a line near the change, such as a function signature), then lines prefixed with "
    "' ' (unchanged context, about 3 lines before and after), '-' (remove) or '+' (add). "
    "Paths are relative to the working directory. If any part does not apply, no file "
    "is changed."
)


def patch_tool() -> Tool:
    return Tool(
        ToolDefinition(
            "apply_patch",
            PATCH_HELP,
            schema(
                {"patch": {"type": "string", "description": "the patch text in v4a format"}},
                ["patch"],
            ),
        ),
        threaded(apply_patch),
    )
