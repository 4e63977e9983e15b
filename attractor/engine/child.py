"""Child runs: the engine's side of a supervisor node's ``run_child`` service.

A child pipeline runs in this process, on this event loop, inside the parent
node's task group: the parent's ``--timeout`` and Ctrl-C cancel it like any
other work, and it stops the way a run stops (its checkpoint marked, its
processes killed, resumable). It shares the parent's settings, codergen backend,
human-gate interviewer and run-wide turn budget; it has its own run directory,
events and process ledger, and no signal handlers or overall deadline of its
own. A child directory that already holds a checkpoint is resumed, or, when
that run had finished, reported without running anything.

A sub-pipeline (``type=subgraph``) is a child that also counts its steps
against the parent's step budget and starts with the context its node hands
it; either kind reports the context its run ended with.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from attractor.dot.graph import Graph
from attractor.engine.step_budget import StepBudget
from attractor.handlers.base import ChildResult, ChildRun
from attractor.run_status import RESUMABLE, RunStatus
from attractor.valueclass import mutable

if TYPE_CHECKING:
    from attractor.engine.executor import RunOptions, RunResult

    Start = Callable[[Graph, Path, RunOptions], Awaitable[RunResult]]
    Resume = Callable[[Path, RunOptions], Awaitable[RunResult]]


@mutable
class EngineChildRunner:
    """Runs or resumes child pipelines with the parent run's options."""

    parent: RunOptions
    start: Start
    resume: Resume
    prepare: Callable[[Path], Graph]
    #: The parent's step budget, for children that share it.
    steps: StepBudget | None = None

    async def __call__(self, child: ChildRun) -> ChildResult:
        options = self._options(child)
        store = options.store(child.run_dir)
        if store.has_checkpoint():
            previous = store.load_checkpoint()
            if previous.status not in RESUMABLE:
                reason = f"it had already finished ({previous.status}) in an earlier run"
                return ChildResult(
                    previous.status,
                    reason,
                    child.run_dir,
                    already_finished=True,
                    context=previous.context,
                )
            # A resumed child has its own context; the parent's would overwrite it.
            result = await self.resume(child.run_dir, replace(options, context_seed={}))
        else:
            # Read and parsed off the event loop: a large file must not stall the run.
            graph = await anyio.to_thread.run_sync(self.prepare, child.dotfile)
            refused = _looser(graph, options, child)
            if refused is not None:
                return ChildResult(RunStatus.FAIL, refused, child.run_dir)
            result = await self.start(graph, child.dotfile, options)
        ended = options.store(result.run_dir)
        context = ended.load_checkpoint().context if ended.has_checkpoint() else {}
        return ChildResult(result.status, result.failure_reason, result.run_dir, context=context)

    def _options(self, child: ChildRun) -> RunOptions:
        settings = replace(
            self.parent.settings,
            logs_dir=str(child.run_dir),
            workdir=str(child.workdir),
            timeout=None,  # the parent's deadline covers it
        )
        return replace(
            self.parent,
            settings=settings,
            context_seed=dict(child.context),
            observers=[child.observe],
            handle_signals=False,
            bus=None,
            steering=child.steering,
            steps=self.steps if child.shares_steps else None,
        )


def _looser(graph: Graph, options: RunOptions, child: ChildRun) -> str | None:
    """Why the child pipeline may not run: a node of it loosens the parent run's
    boundary (its file lies where a step may have written it)."""
    from attractor.handlers.boundary import looser_than_the_run, runs_commands

    settings = options.settings
    for node in graph.nodes():
        if runs_commands(node, settings):
            what = looser_than_the_run(node, settings, child.workdir)
            if what is not None:
                return (
                    f"{child.dotfile}: node {node.id} sets {what}, looser than the run's "
                    "boundary; a child pipeline's steps run within it (a step may have "
                    "written the file): set it for the run instead (--sandbox, --network, "
                    "--writable)"
                )
    return None
