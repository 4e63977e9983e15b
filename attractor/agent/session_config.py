"""What one agent session needs to know besides its model and tools."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from attractor.agent.hooks import ToolHooks
from attractor.agent.project_context import ProjectContext
from attractor.llm.types import Message
from attractor.proc.environment import ExecutionEnvironment
from attractor.valueclass import frozen


@frozen(kw_only=True)
class SessionConfig:
    """What one session needs to know besides its model and tools."""

    node_id: str
    prompt: str
    workdir: Path
    max_turns: int
    sprint_limit: int = 0
    reasoning_effort: str | None = None
    shell_timeout_cap: float = 600.0
    kill_grace: float = 2.0
    #: ``tool_hooks.pre`` / ``tool_hooks.post`` commands run around each tool call.
    tool_hooks: ToolHooks = ToolHooks()
    #: Offer ``report_outcome`` so the model can set the stage's outcome.
    report: bool = True
    #: The stage's outgoing edge labels the model may choose from.
    choices: tuple[str, ...] = ()
    #: An earlier conversation this session continues (a ``full``-fidelity thread):
    #: user, assistant and tool messages, placed before this session's prompt.
    history: tuple[Message, ...] = ()
    #: Messages from a supervisor of the run, taken before every request and sent
    #: like :meth:`AgentSession.steer` messages, marked as the supervisor's.
    steering: Callable[[], list[str]] | None = None
    #: The tool profile's base instructions for the system prompt.
    instructions: str = ""
    #: Environment and project instructions for the system prompt.
    context: ProjectContext | None = None
    #: Tokens the model's context holds; old tool outputs are compacted near it (0: never).
    context_window: int = 0
    #: How many levels of subagents may still be spawned (0: no spawn_agent tool).
    subagent_depth: int = 0
    #: Where the shell tool and hooks run commands (None: locally, environment filtered).
    environment: ExecutionEnvironment | None = None
