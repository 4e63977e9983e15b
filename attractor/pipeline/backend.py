"""The contract between the codergen handler and whatever answers its prompt.

The engine ships a deterministic ``simulate`` backend; the coding agent
(:mod:`attractor.agent`) implements the same interface for scripted and real
models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from attractor.pipeline.context import Context
from attractor.pipeline.events import Event
from attractor.pipeline.graph import Graph, Node
from attractor.pipeline.outcome import Outcome
from attractor.settings import Settings


class RunTurnBudget:
    """Model requests left for the whole run (``--max-total-turns``).

    Shared by every agent of the run, across nodes, loops and parallel branches.
    All agents run on one event loop, so :meth:`take` needs no lock.

    Agents that may still need their final turn are counted in :attr:`active`
    (:meth:`register` / :meth:`unregister`), so that parallel agents can keep one
    request each in reserve for it.
    """

    def __init__(self, limit: int | None, used: int = 0) -> None:
        self.limit = limit
        self.used = used
        #: Set once an agent was cut short because the run budget ran out.
        self.exhausted = False
        #: Agents running now that have not yet taken their final request.
        self.active = 0

    @property
    def remaining(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.used)

    def take(self) -> bool:
        """Reserve one model request; False when the run budget is used up."""
        if self.limit is not None and self.used >= self.limit:
            return False
        self.used += 1
        return True

    def register(self) -> None:
        """Count one more running agent that may still need a final request."""
        self.active += 1

    def unregister(self) -> None:
        """The agent has taken its final request, or ended."""
        self.active = max(0, self.active - 1)


@dataclass
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


class CodergenBackend(Protocol):
    """Answers a codergen node: text (the engine wraps it in SUCCESS) or an Outcome.

    A backend may write more files into ``request.stage_dir`` (transcript.jsonl,
    reflections.md) and extra ``status.json`` fields through the Outcome's
    ``context_updates`` or its own writes; the handler writes prompt.md,
    response.md and status.json.
    """

    async def run(self, request: StageRequest) -> str | Outcome: ...

    async def aclose(self) -> None: ...
