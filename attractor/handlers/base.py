"""The handler interface and what the engine hands a handler besides the node.

A handler is any object with ``async execute(node, context, graph, env)``
returning an :class:`~attractor.handlers.outcome.Outcome` (or None, which the
engine accepts only for nodes with ``auto_status=true``). Exceptions become FAIL
outcomes; cancellation always propagates.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from attractor.agent.run_budget import RunTurnBudget
from attractor.dot.graph import Graph, Node
from attractor.events import Event
from attractor.handlers.backend import CodergenBackend
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome
from attractor.settings import Settings

if TYPE_CHECKING:
    from attractor.handlers.interviewer import Interviewer


@dataclass(frozen=True)
class BranchResult:
    """How one parallel branch ended."""

    id: str
    status: str
    notes: str = ""
    failure_reason: str = ""
    last_response: str = ""
    last_node: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "notes": self.notes,
            "failure_reason": self.failure_reason,
            "last_response": self.last_response,
            "last_node": self.last_node,
        }


#: Runs a sub-traversal from a node with a context until a fan-in or a dead end.
BranchRunner = Callable[[str, Context, "str | None"], Awaitable[BranchResult]]


@dataclass
class Services:
    """Run-wide collaborators shared by every handler call of one run."""

    settings: Settings
    backend: CodergenBackend
    interviewer: Interviewer
    run_budget: RunTurnBudget
    emit: Callable[[Event], None]
    base_workdir: Path


@dataclass
class StageEnv:
    """Everything about one node attempt that is not the node, context or graph."""

    logs_root: Path
    stage_dir: Path
    attempt: int
    visit: int
    services: Services
    run_branch: BranchRunner

    @property
    def settings(self) -> Settings:
        return self.services.settings

    def emit(self, event: Event) -> None:
        self.services.emit(event)

    def workdir(self, node: Node, graph: Graph) -> Path:
        """Node ``workdir`` (else graph ``workdir``) relative to the run's base workdir."""
        raw = str(node.get("workdir") or graph.get("workdir") or "").strip()
        base = self.services.base_workdir
        return (base / raw).resolve() if raw else base


class Handler(Protocol):
    """What every node handler implements."""

    async def execute(
        self, node: Node, context: Context, graph: Graph, env: StageEnv
    ) -> Outcome | None: ...
