"""The contract between the codergen handler and whatever answers its prompt.

The engine ships a deterministic ``simulate`` backend; the coding agent
(:mod:`attractor.agent`) implements the same interface for scripted and real
models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from attractor.agent.run_budget import RunTurnBudget
from attractor.dot.graph import Graph, Node
from attractor.events import Event
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome
from attractor.llm.types import Message
from attractor.proc.environment import ExecutionEnvironment
from attractor.settings import Settings
from attractor.valueclass import mutable

if TYPE_CHECKING:  # a run with no human gate never loads the interviewers
    from attractor.agent.checkout import Checkout
    from attractor.handlers.interviewer import Interviewer


@mutable
class StageRequest:
    """Everything a codergen backend gets for one node attempt."""

    node: Node
    prompt: str
    context: Context
    graph: Graph
    stage_dir: Path
    workdir: Path
    attempt: int
    visit: int
    settings: Settings
    emit: Callable[[Event], None]
    run_budget: RunTurnBudget
    #: Messages a supervisor queued for this run's agents, taken before each turn.
    steering: Callable[[], list[str]] | None = None
    #: The earlier conversation to continue (a ``full``-fidelity thread), else empty.
    history: tuple[Message, ...] = ()
    #: Set by a backend that holds a conversation: how it ended (without system
    #: prompt), so the handler can keep the thread for the stages after it.
    conversation: tuple[Message, ...] = field(default_factory=tuple)
    #: Where the agent's shell tool and hooks run commands (None: locally, filtered).
    environment: ExecutionEnvironment | None = None
    #: Whom to ask when a backend needs a person's yes or no (ACP ``acp_permissions=ask``).
    interviewer: Interviewer | None = None
    #: The stage's work tree, when nothing has run in it since the engine checked it out.
    checkout: Checkout | None = None


class CodergenBackend(Protocol):
    """Answers a codergen node: text (the engine wraps it in SUCCESS) or an Outcome.

    A backend may write more files into ``request.stage_dir`` (transcript.jsonl,
    reflections.md) and extra ``status.json`` fields through the Outcome's
    ``context_updates`` or its own writes; the handler writes prompt.md,
    response.md and status.json.

    What a backend's model requests spend goes into ``request.run_budget``
    (``spend()``, as each answer comes in): that is the run's total of every
    attempt, which the summary, manifest and budgets read. ``details["usage"]``
    of the Outcome is the attempt's own share, for its status.json and summary row.
    """

    async def run(self, request: StageRequest) -> str | Outcome: ...

    async def aclose(self) -> None: ...


def backend_name(node: Node, settings: Settings) -> str:
    """The backend that answers ``node``: its ``backend`` attribute, else the graph's,
    else the run's (see :mod:`attractor.handlers.external.router`); ``simulate`` given
    explicitly for the run (flag, variable or config) simulates every node."""
    run = settings.backend
    if run == "simulate" and settings.source("backend") != "default":
        return run
    chosen = node.raw("backend") or node.graph.raw("backend") or run
    chosen = chosen.strip()
    if chosen == "llm" and run.startswith("scripted:"):
        return run
    return chosen
