"""The executor seam: where a whole run, and each branch of a parallel node, executes.

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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from attractor.dot.graph import Graph
from attractor.handlers.base import BranchRunner

if TYPE_CHECKING:
    from attractor.engine.continuation import Continuation
    from attractor.engine.run import RunOptions, RunResult
    from attractor.engine.state import Run


@dataclass(frozen=True)
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
