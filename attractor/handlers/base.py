"""The handler interface and what the engine hands a handler besides the node.

A handler is any object with ``async execute(node, context, graph, env)``
returning an :class:`~attractor.handlers.outcome.Outcome` (or None, which the
engine accepts only for nodes with ``auto_status=true``). Exceptions become FAIL
outcomes; cancellation always propagates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from attractor.agent.run_budget import RunTurnBudget
from attractor.dot.graph import Graph, Node
from attractor.events import Event
from attractor.fileio.confine import confine_path
from attractor.handlers.backend import CodergenBackend, StageRequest
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome
from attractor.proc.environment import LocalEnvironment
from attractor.run_status import RunStatus
from attractor.settings import Settings
from attractor.valueclass import frozen, mutable

if TYPE_CHECKING:
    from attractor.agent.checkout import Checkout
    from attractor.handlers.interviewer import Interviewer


@frozen
class BranchResult:
    """How one parallel branch ended."""

    id: str
    status: str
    notes: str = ""
    failure_reason: str = ""
    last_response: str = ""
    last_node: str = ""
    #: The branch's last workspace checkpoint (its own worktree's), "" without a workspace.
    commit: str = ""

    def to_json(self) -> dict[str, Any]:
        data = {
            "id": self.id,
            "status": self.status,
            "notes": self.notes,
            "failure_reason": self.failure_reason,
            "last_response": self.last_response,
            "last_node": self.last_node,
        }
        if self.commit:
            data["commit"] = self.commit
        return data


class StageRecord(Protocol):
    """One finished node execution as the run remembers it (a summary row)."""

    @property
    def node(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def attempts(self) -> int: ...
    @property
    def duration(self) -> float: ...
    @property
    def note(self) -> str: ...
    @property
    def usage(self) -> Mapping[str, int] | None: ...


class RunRecord(Protocol):
    """What a stage may read about the run so far (for context preambles)."""

    def stages(self) -> Sequence[StageRecord]:
        """Finished node executions, oldest first (parallel branches included)."""
        ...

    def response(self, node_id: str, limit: int) -> str:
        """The start of the last response a node wrote, at most ``limit`` characters."""
        ...

    def tally(self) -> tuple[int, int, int]:
        """Stages finished so far (start nodes and skipped ones aside): all, failed, partial."""
        ...

    @property
    def run_id(self) -> str: ...


class NoRecord:
    """The record of a run that has done nothing yet (handlers called outside a run)."""

    run_id = ""

    def stages(self) -> Sequence[StageRecord]:
        return ()

    def response(self, node_id: str, limit: int) -> str:
        return ""

    def tally(self) -> tuple[int, int, int]:
        return (0, 0, 0)


class Steering:
    """Messages for the agents of a run, queued by a supervisor, taken before a turn."""

    def __init__(self) -> None:
        self._pending: list[str] = []

    def push(self, text: str) -> None:
        # A supervisor steers at each node the child enters; until an agent takes
        # the message, entering another node (start, a conditional) adds nothing.
        if text not in self._pending:
            self._pending.append(text)

    def take(self) -> list[str]:
        """Every message queued since the last call (each goes to one agent only)."""
        taken, self._pending = self._pending, []
        return taken


@frozen
class ChildRun:
    """A child pipeline a supervisor node asks the engine to run (or resume)."""

    dotfile: Path
    run_dir: Path
    workdir: Path
    #: Sees every event of the child run, as it happens.
    observe: Callable[[Event], None]
    steering: Steering
    #: Context values the child starts with (a new child; a resumed one has its own).
    context: Mapping[str, Any] = field(default_factory=dict)
    #: The child counts its steps against the parent's step budget (a sub-pipeline).
    shares_steps: bool = False


@frozen
class ChildResult:
    """How a child run ended."""

    status: RunStatus
    failure_reason: str
    run_dir: Path
    #: The child had already finished in an earlier process: nothing ran now.
    already_finished: bool = False
    #: The child run's context when it ended (from its last checkpoint).
    context: Mapping[str, Any] = field(default_factory=dict)


class ChildRunner(Protocol):
    """Runs a child pipeline in its own run directory, resuming it when it exists."""

    async def __call__(self, child: ChildRun) -> ChildResult: ...


class BranchRunner(Protocol):
    """Runs a sub-traversal from a node with a context until a fan-in or a dead end.

    ``progress`` names the branch's progress file: where the runner keeps the
    branch's state after each node, and continues from when it finds one.
    """

    async def __call__(
        self, start: str, context: Context, stop_at: str | None, progress: Path | None = None
    ) -> BranchResult: ...


@mutable
class Services:
    """Run-wide collaborators shared by every handler call of one run."""

    settings: Settings
    backend: CodergenBackend
    interviewer: Interviewer
    run_budget: RunTurnBudget
    emit: Callable[[Event], None]
    base_workdir: Path
    #: The folder of the pipeline file (not of the run's copy), None for DOT text.
    pipeline_dir: Path | None = None
    #: The run so far, for the preamble of stages that do not continue a thread.
    record: RunRecord = field(default_factory=NoRecord)
    #: Runs child pipelines (the manager loop); None outside the engine.
    run_child: ChildRunner | None = None
    #: Messages a supervisor queued for this run's agents.
    steering: Steering = field(default_factory=Steering)
    #: Takes a file just written without fsync that must survive a machine crash once
    #: a later node acts: the engine syncs it before the next node with side effects
    #: starts (or drops it once the main traversal records the step it belongs to).
    #: None: the writer fsyncs such files itself.
    sync_later: Callable[[Path], None] | None = None


@mutable
class StageEnv:
    """Everything about one node attempt that is not the node, context or graph."""

    logs_root: Path
    stage_dir: Path
    attempt: int
    visit: int
    services: Services
    run_branch: BranchRunner
    #: The parallel branch this attempt runs in (its first node), None on the main path.
    branch: str | None = None
    #: The stage's work tree, when nothing has run in it since it was checked out.
    checkout: Checkout | None = None

    @property
    def settings(self) -> Settings:
        return self.services.settings

    def emit(self, event: Event) -> None:
        self.services.emit(event)

    def request(
        self, node: Node, prompt: str, context: Context, graph: Graph, **extra: Any
    ) -> StageRequest:
        """What the codergen backend gets for this attempt (``extra``: history, steering);
        a simulated stage runs no command and gets no environment."""
        from attractor.handlers.boundary import runs_commands

        workdir = self.workdir(node, graph)
        commands = runs_commands(node, self.settings)
        return StageRequest(
            node=node,
            prompt=prompt,
            context=context,
            graph=graph,
            stage_dir=self.stage_dir,
            workdir=workdir,
            attempt=self.attempt,
            visit=self.visit,
            settings=self.settings,
            emit=self.emit,
            run_budget=self.services.run_budget,
            environment=self.environment(node, graph, workdir) if commands else None,
            interviewer=self.services.interviewer,
            checkout=self.checkout,
            **extra,
        )

    def workdir(self, node: Node, graph: Graph) -> Path:
        """Node ``workdir`` (else graph ``workdir``) relative to the run's base workdir.

        Raises:
            PipelinePathError: it resolves outside :meth:`read_roots`.
        """
        raw = str(node.get("workdir") or "").strip()
        if not raw and self.settings.source("workdir") != "graph attribute workdir":
            raw = str(graph.get("workdir") or "").strip()  # not already the base itself
        base = self.services.base_workdir
        if not raw:
            return base
        owner = node.id if node.has("workdir") else None
        return confine_path(base / raw, self.read_roots(), attribute="workdir", node=owner)

    def environment(
        self, node: Node, graph: Graph, workdir: Path | None = None
    ) -> LocalEnvironment:
        """Where this step's commands run (see :mod:`attractor.handlers.boundary`);
        ``workdir``: :meth:`workdir`, when the caller has it already."""
        from attractor.handlers.boundary import environment_for

        return environment_for(
            node,
            self.settings,
            self.workdir(node, graph) if workdir is None else workdir,
            base=self.services.base_workdir,
            run_dir=self.logs_root,
            stage_dir=self.stage_dir,
        )

    def read_roots(self) -> tuple[Path, ...]:
        """Where a path the pipeline names may lead: the workdir and the pipeline's folder."""
        services = self.services
        return tuple(p for p in (services.base_workdir, services.pipeline_dir) if p is not None)


class Handler(Protocol):
    """What every node handler implements."""

    async def execute(
        self, node: Node, context: Context, graph: Graph, env: StageEnv
    ) -> Outcome | None: ...
