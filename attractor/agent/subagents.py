"""The spawn_agent tool: a child session for a scoped task, paid from the parent's budget.

The child talks to the parent's model with the parent's tools (but cannot spawn
agents itself), in the parent's working directory or a subdirectory of it, with
its own conversation. It runs to the end before the tool answers, so the
parent's budget is exact: the child may use at most the turns the parent has
left but one (the parent's own next request), and every request it makes is
charged to the parent. It shares the run-wide turn budget. Its transcript goes
under ``subagents/agent-N/`` in the parent's stage directory.
"""

from __future__ import annotations

import stat
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attractor.agent.tools.base import Tool, ToolContext, schema
from attractor.agent.tools.beneath import Beneath
from attractor.agent.transcript import Transcript
from attractor.errors import ToolError
from attractor.llm.types import ToolDefinition

if TYPE_CHECKING:
    from attractor.agent.session import AgentSession

TOOL_NAME = "spawn_agent"


def _child_workdir(parent: AgentSession, raw: str | None) -> tuple[Path, str]:
    """The subagent's directory (confined like every tool path) and how to show it."""
    workdir = parent.config.workdir
    if not raw or raw.strip() in (".", ""):
        return workdir, "."
    with Beneath(workdir) as beneath, beneath.place(raw) as found:
        info = found.value
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise ToolError(f"working_dir {raw} is not a directory inside the working directory")
        return beneath.root.joinpath(*found.parts), found.shown


def _turns(parent: AgentSession, requested: Any) -> int:
    available = parent.config.max_turns - parent.charged_turns - 1
    if available < 1:
        raise ToolError(
            "no turns are left for a subagent: the rest of your budget is kept for your "
            "own next reply"
        )
    if requested is None:
        return available
    if int(requested) < 1:
        raise ToolError("max_turns must be at least 1")
    return min(int(requested), available)


def spawn_tool(parent: AgentSession) -> Tool:
    """``spawn_agent`` bound to ``parent``."""
    spawned = 0

    async def run(ctx: ToolContext, args: dict[str, Any]) -> str:
        nonlocal spawned
        task = str(args["task"]).strip()
        if not task:
            raise ToolError("task must describe what the subagent should do")
        workdir, where = _child_workdir(parent, args.get("working_dir"))
        limit = _turns(parent, args.get("max_turns"))
        spawned += 1
        name = f"agent-{spawned}"
        config = replace(
            parent.config,
            node_id=f"{parent.config.node_id}/{name}",
            prompt=task,
            workdir=workdir,
            max_turns=limit,
            sprint_limit=0,
            report=False,
            choices=(),
            subagent_depth=parent.config.subagent_depth - 1,
        )
        stage = parent.transcript.path.parent / "subagents" / name
        visit, attempt = parent.transcript.visit, parent.transcript.attempt
        child = type(parent)(
            parent.model,
            config,
            tools=parent.base_tools,
            transcript=Transcript(stage, visit=visit, attempt=attempt),
            emit=parent.emit,
            run_budget=parent.run_budget,
        )
        try:
            result = await child.run()
        finally:
            parent.charge_subagent(child.turns_used, child.usage)
        ended = " (its turn limit was reached)" if result.turn_limit_reached else ""
        return (
            f"subagent {name} in {where} finished after {result.turns_used} of {limit} "
            f"turn(s){ended}; its turns count against your budget. Its answer:\n{result.text}"
        )

    return Tool(
        ToolDefinition(
            TOOL_NAME,
            "Hand a scoped task to a subagent: it works with the same tools in the working "
            "directory (or working_dir below it) and answers with its final report. Its "
            "turns come out of your own turn budget; max_turns caps them.",
            schema(
                {
                    "task": {"type": "string", "description": "what the subagent should do"},
                    "working_dir": {"type": "string", "description": "subdirectory to work in"},
                    "max_turns": {"type": "integer", "minimum": 1},
                },
                ["task"],
            ),
        ),
        run,
    )
