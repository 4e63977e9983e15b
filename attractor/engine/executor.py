"""The executor seam: a job to run, how to run it, how it ended, and where it runs.

A :class:`RunJob` (a new run, or a resume) runs with :class:`RunOptions` and
ends in a :class:`RunResult`.

An :class:`Executor` is asked twice. :meth:`Executor.execute` runs a whole
:class:`RunJob` (a new run, or a resume) and returns its result; the local
executor calls the engine's own driver in this process. :meth:`Executor.branches`
gives the branch runner a parallel node calls once per branch; the local
executor keeps the in-process sub-traversal. The Ray executor
(:mod:`attractor.ray_exec`, the ``attractor[ray]`` extra) sends both to a cluster.
Which one a run gets is chosen at the composition root
(``launch.executor_for``): nothing here imports the Ray executor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from attractor.agent.run_budget import RunTurnBudget
from attractor.dot.graph import Graph
from attractor.engine.eventbus import EventBus
from attractor.engine.retry import BackoffConfig
from attractor.engine.step_budget import StepBudget
from attractor.events import Event
from attractor.handlers.backend import CodergenBackend
from attractor.handlers.base import BranchRunner, Steering
from attractor.handlers.registry import HandlerRegistry
from attractor.run_status import RunStatus
from attractor.settings import Settings
from attractor.store.base import StoreFactory
from attractor.store.rundir import RunDir
from attractor.valueclass import frozen, mutable

if TYPE_CHECKING:  # a run with no human gate never loads the interviewers
    from attractor.engine.continuation import Continuation
    from attractor.engine.state import NodeResult, Run
    from attractor.handlers.interviewer import Interviewer
    from attractor.workspace.preflight import WorkspacePlan


@frozen
class RunJob:
    """One run to execute: ``path`` is the pipeline file (run) or the run directory (resume)."""

    kind: Literal["run", "resume"]
    path: Path
    graph: Graph
    #: How to continue a run that had ended (resume only; see continuation.py).
    how: Continuation | None = None


#: The engine's own driver of a job, in this process.
Drive = Callable[["RunJob", "RunOptions"], Awaitable["RunResult"]]


class Executor(Protocol):
    """Where runs and parallel branches execute."""

    name: str

    async def execute(self, job: RunJob, options: RunOptions, drive: Drive) -> RunResult:
        """Run ``job`` to its end; ``drive`` runs it here, in this process."""
        ...

    def branches(self, run: Run, local: BranchRunner) -> BranchRunner:
        """The branch runner for the parallel nodes of ``run``; ``local`` runs them here."""
        ...


class LocalExecutor:
    """Everything in this process: the default."""

    name = "local"

    async def execute(self, job: RunJob, options: RunOptions, drive: Drive) -> RunResult:
        return await drive(job, options)

    def branches(self, run: Run, local: BranchRunner) -> BranchRunner:
        return local


_EXIT_CODES = {
    RunStatus.SUCCESS: 0,
    RunStatus.FAIL: 1,
    RunStatus.TIMED_OUT: 124,
    RunStatus.HANGUP: 129,
    RunStatus.INTERRUPTED: 130,
    RunStatus.TERMINATED: 143,
}


@mutable
class RunOptions:
    """How to run: resolved settings plus the collaborators of the run."""

    settings: Settings
    #: Who answers human gates; None means the console (stdin).
    interviewer: Interviewer | None = None
    #: Context values from ``--set KEY=VALUE``.
    context_seed: dict[str, Any] = field(default_factory=dict)
    #: The model backend (the launcher builds and closes it: ``launch.backend_for``);
    #: the engine refuses a run without one.
    backend: CodergenBackend | None = None
    registry: HandlerRegistry | None = None
    observers: list[Callable[[Event], None]] = field(default_factory=list)
    #: SIGINT -> interrupted (exit 130), SIGTERM -> terminated (exit 143).
    handle_signals: bool = False
    #: Delay between retry attempts (None: the standard preset, 200ms doubling, jittered).
    backoff: BackoffConfig | None = None
    #: Pass a bus to subscribe to the async event stream (``bus.subscribe()``) before the run.
    bus: EventBus | None = None
    #: Messages for the run's agents from outside (a supervisor node of a parent run).
    steering: Steering | None = None
    #: The run-wide turn budget to draw from instead of a new one (a child run
    #: shares its parent's).
    run_budget: RunTurnBudget | None = None
    #: The step budget to count against instead of a new one (a sub-pipeline
    #: shares its parent's).
    steps: StepBudget | None = None
    #: Where the run and its parallel branches execute (see executor.py).
    executor: Executor = field(default_factory=lambda: LocalExecutor())
    #: Opens the store each run directory is kept in, through the store's
    #: interface (store/base.py); by default the run directory's own files.
    store: StoreFactory = RunDir
    #: Returns when someone outside asks the run to stop, with the status to
    #: stop as (a Ray worker watches the run directory's stop file).
    stop_requests: Callable[[], Awaitable[RunStatus]] | None = None
    #: The run's workspace as the launcher planned it (None: none, the files are
    #: not checkpointed; see attractor.workspace).
    workspace: WorkspacePlan | None = None


@mutable
class RunResult:
    """How a run ended, for the summary table and the exit code."""

    status: RunStatus
    run_dir: Path
    failure_reason: str
    current_node: str | None
    node_results: list[NodeResult]
    usage: dict[str, Any]
    timeout: float | None
    warnings: list[str] = field(default_factory=list)
    #: What the run did to its files: branch, commits, files (see workspace_hooks.summary).
    workspace: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        return _EXIT_CODES[self.status]
