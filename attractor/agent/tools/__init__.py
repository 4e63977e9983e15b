"""The tools the coding agent may call, and the registry that runs them."""

from __future__ import annotations

from attractor.agent.tools.base import Tool, ToolContext, ToolRegistry, ToolResult
from attractor.agent.tools.files import file_tools
from attractor.agent.tools.search import search_tool
from attractor.agent.tools.shell import shell_tool

__all__ = ["Tool", "ToolContext", "ToolRegistry", "ToolResult", "default_registry"]


def default_registry() -> ToolRegistry:
    """Every built-in tool; ``run_command`` is accepted as another name for ``shell``."""
    return ToolRegistry(
        [*file_tools(), search_tool(), shell_tool()], aliases={"run_command": "shell"}
    )
