"""The run's public seam for an executor that drives a run or a branch elsewhere.

An :class:`~attractor.engine.executor.Executor` that sends a whole job, or the
branches of a parallel node, to another process or machine (the Ray executor,
:mod:`attractor.ray_exec`) uses this module and nothing else of the engine: it
drives a job there with :func:`drive_job` (the driver of ``run.py``), stops it
with :func:`watch_signals` and :class:`Stop`, and walks one branch with
:func:`open_branch`. An import contract (pyproject.toml) holds it to that.
"""

from __future__ import annotations

from pathlib import Path

from attractor.agent.run_budget import RunTurnBudget
from attractor.dot.graph import Graph
from attractor.engine.eventbus import EventBus
from attractor.engine.executor import Drive, Executor, RunJob
from attractor.engine.loop import BranchRunnerImpl
from attractor.engine.retry import BackoffConfig
from attractor.engine.run import (
    RunOptions,
    RunResult,
    Stop,
    drive_job,
    prepare_run_graph,
    resume_pipeline,
    run_pipeline,
    watch_signals,
)
from attractor.engine.state import NodeResult, Run, Walk
from attractor.engine.wiring import run_wide, services_for
from attractor.handlers.backend import CodergenBackend
from attractor.handlers.base import BranchRunner
from attractor.handlers.context import Context
from attractor.valueclass import mutable

__all__ = [
    "Branch",
    "Drive",
    "EventBus",
    "Executor",
    "NodeResult",
    "Run",
    "RunJob",
    "RunOptions",
    "RunResult",
    "Stop",
    "drive_job",
    "open_branch",
    "prepare_run_graph",
    "watch_signals",
]


@mutable
class Branch:
    """One parallel branch of a run, walked in this process by :attr:`runner`."""

    run: Run
    #: Walks the branch: its progress reaches the disk, its summary rows stay in
    #: :attr:`rows` (with those of an earlier, cut-short walk of it).
    runner: BranchRunner
    #: The model backend the branch built; the caller closes it when the branch ends.
    backend: CodergenBackend

    @property
    def rows(self) -> list[NodeResult]:
        return self.run.node_results


def open_branch(
    run_dir: Path,
    graph: Graph,
    options: RunOptions,
    budget: RunTurnBudget,
    bus: EventBus,
    context: Context,
    first_index: int,
) -> Branch:
    """A branch of the run in ``run_dir`` that runs as a task of its own.

    ``first_index`` numbers its stages after those of the run so far; ``budget``
    is the run's budget as this process shares it.
    """
    children = (run_pipeline, resume_pipeline, prepare_run_graph)
    wide = run_wide(options, graph, budget, bus, children=children)
    services = services_for(wide)
    run = Run(
        graph=graph,
        run_dir=options.store(run_dir),
        services=services,
        registry=wide.registry,
        bus=bus,
        backoff=options.backoff or BackoffConfig(),
        main=Walk(context),
        stage_index=first_index,
        # This task may be a retry, or a branch of a resumed run: a node may find
        # the files of an attempt cut short, which are moved aside, not overwritten.
        manifest={"resumed_at": "branch"},
        branches=options.executor.branches,
    )
    runner = BranchRunnerImpl(run, durable=True, keep_rows=True)
    return Branch(run, runner, wide.backend)
