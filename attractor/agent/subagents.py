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
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from attractor.agent.run_budget import RunTurnBudget
from attractor.agent.session_config import SessionConfig
from attractor.agent.tools import ToolRegistry
from attractor.agent.tools.base import Tool, ToolContext, schema
from attractor.agent.transcript import Transcript
from attractor.errors import ToolError
from attractor.events import Event
from attractor.llm.types import Model, ToolDefinition, Usage
from attractor.proc.hostfs.beneath import Beneath

TOOL_NAME = "spawn_agent"


class Ended(Protocol):
    """How a subagent's session ended (a ``SessionResult``)."""

    @property
    def text(self) -> str: ...
    @property
    def turns_used(self) -> int: ...
    @property
    def turn_limit_reached(self) -> bool: ...


class Child(Protocol):
    """A subagent's session, once it has run."""

    usage: Usage

    @property
    def turns_used(self) -> int: ...

    async def run(self) -> Ended: ...


class NewSession(Protocol):
    """Builds a subagent's session (the ``AgentSession`` class)."""

    def __call__(
        self,
        model: Model,
        config: SessionConfig,
        *,
        tools: ToolRegistry,
        transcript: Transcript,
        emit: Callable[[Event], None],
        run_budget: RunTurnBudget | None = None,
    ) -> Child: ...


class Parent(Protocol):
    """The session a ``spawn_agent`` tool serves, as far as the tool uses it."""

    model: Model
    config: SessionConfig
    base_tools: ToolRegistry
    transcript: Transcript
    emit: Callable[[Event], None]
    run_budget: RunTurnBudget

    @property
    def charged_turns(self) -> int: ...
    def charge_subagent(self, turns: int, usage: Usage) -> None: ...


def _child_workdir(parent: Parent, raw: str | None) -> tuple[Path, str]:
    """The subagent's directory (confined like every tool path) and how to show it."""
    workdir = parent.config.workdir
    if not raw or raw.strip() in (".", ""):
        return workdir, "."
    with Beneath(workdir) as beneath, beneath.place(raw) as found:
        info = found.value
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise ToolError(f"working_dir {raw} is not a directory inside the working directory")
        return beneath.root.joinpath(*found.parts), found.shown


def _turns(parent: Parent, requested: Any) -> int:
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


def spawn_tool(parent: Parent, new_session: NewSession) -> Tool:
    """``spawn_agent`` bound to ``parent``; ``new_session`` builds each subagent's session."""
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
        child = new_session(
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
