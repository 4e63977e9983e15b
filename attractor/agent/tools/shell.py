"""The shell tool: one command in its own process group, with a timeout."""

from __future__ import annotations

from typing import Any

from attractor.agent.tools.base import Tool, ToolContext, schema
from attractor.errors import ToolError
from attractor.llm.types import ToolDefinition

DEFAULT_TIMEOUT = 10.0


def _timeout(ctx: ToolContext, args: dict[str, Any], default: float) -> tuple[float, str]:
    """The timeout to use and a note when the requested one was lowered to the cap."""
    if "timeout" not in args:
        return min(default, ctx.shell_timeout_cap), ""
    requested = float(args["timeout"])
    if requested <= 0:
        raise ToolError("timeout must be a positive number of seconds")
    if requested > ctx.shell_timeout_cap:
        note = f"[timeout lowered from {requested:g}s to the cap of {ctx.shell_timeout_cap:g}s]"
        return ctx.shell_timeout_cap, note
    return requested, ""


async def run_shell(
    ctx: ToolContext, args: dict[str, Any], default_timeout: float = DEFAULT_TIMEOUT
) -> str:
    """Run ``command`` in the working directory; report output and exit code."""
    command = str(args["command"])
    if not command.strip():
        raise ToolError("command must not be empty")
    timeout, note = _timeout(ctx, args, default_timeout)
    environment = ctx.commands()
    result = await environment.run(
        command, cwd=ctx.workdir, timeout=timeout, kill_grace=ctx.kill_grace
    )
    parts = [note] if note else []
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
    if result.timed_out:
        parts.append(
            f"[command timed out after {timeout:g}s and was killed with its child "
            "processes; the output above is partial. Pass a larger timeout (seconds) "
            f"if it needs longer, up to {ctx.shell_timeout_cap:g}s.]"
        )
    else:
        parts.append(f"[exit code {result.returncode}]")
        note = environment.note(result)
        if note:
            parts.append(note)
    return "\n".join(parts)


def shell_tool(default_timeout: float = DEFAULT_TIMEOUT) -> Tool:
    """The shell tool; commands without a timeout get ``default_timeout`` seconds."""

    async def run(ctx: ToolContext, args: dict[str, Any]) -> str:
        return await run_shell(ctx, args, default_timeout)

    return Tool(
        ToolDefinition(
            "shell",
            "Run a shell command in the working directory and return its output and exit "
            f"code. The default timeout is {default_timeout:g} seconds; pass timeout "
            "(seconds) for longer commands.",
            schema(
                {
                    "command": {"type": "string"},
                    "timeout": {"type": "number", "description": "seconds before it is killed"},
                },
                ["command"],
            ),
        ),
        run,
    )
