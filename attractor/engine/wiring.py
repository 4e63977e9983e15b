"""The collaborators of a run, built once: what every run directory of it shares.

:class:`RunWide` holds what a run's directories share (a ``loop_restart`` opens
another): the event bus, the model backend, the turn and step budgets, the
handler registry, the process ledger, the child runner. :func:`services_for`
makes the :class:`~attractor.handlers.base.Services` of one run directory from
it, complete: its record of the run so far and its progress keeper are passed
in, not attached afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from attractor.agent.run_budget import RunTurnBudget
from attractor.dot.graph import Graph
from attractor.engine.child import EngineChildRunner
from attractor.engine.eventbus import EventBus
from attractor.engine.executor import RunOptions
from attractor.engine.step_budget import StepBudget
from attractor.errors import RunError
from attractor.fileio.confine import confine_path
from attractor.handlers.backend import CodergenBackend
from attractor.handlers.base import ChildRunner, NoRecord, RunRecord, Services, Steering
from attractor.handlers.builtin import default_registry
from attractor.handlers.registry import HandlerRegistry
from attractor.settings import Settings
from attractor.valueclass import frozen

if TYPE_CHECKING:
    from attractor.engine.child import Resume, Start
    from attractor.handlers.interviewer import Interviewer
    from attractor.workspace.workspace import Workspace

#: The graph attribute that may set the run's working directory.
WORKDIR = "workdir"


@frozen
class RunWide:
    """What every run directory of one run shares, built once by the driver."""

    options: RunOptions
    bus: EventBus
    budget: RunTurnBudget
    #: The model backend the launcher built (and closes).
    backend: CodergenBackend
    interviewer: Interviewer
    registry: HandlerRegistry
    steps: StepBudget
    base_workdir: Path
    pipeline_dir: Path | None
    steering: Steering
    run_child: ChildRunner | None
    #: The run's workspace (attractor.workspace), opened before the run; None without.
    workspace: Workspace | None = None

    @property
    def settings(self) -> Settings:
        return self.options.settings


def run_wide(
    options: RunOptions,
    graph: Graph,
    budget: RunTurnBudget,
    bus: EventBus,
    source: Path | None = None,
    *,
    steps: StepBudget | None = None,
    children: tuple[Start, Resume, Callable[[Path], Graph]] | None = None,
) -> RunWide:
    """The run-wide collaborators; ``children`` starts and resumes child runs (else none).

    ``source`` is the pipeline file the run started from: its folder is one of
    the places a path the pipeline names may lead (the run's copy is not).
    """
    backend = require_backend(options)
    steps = steps or StepBudget()
    run_child = None
    if children is not None:
        child_options = replace(options, backend=backend, run_budget=budget, steps=None)
        run_child = EngineChildRunner(child_options, *children, steps=steps)
    return RunWide(
        options=options,
        bus=bus,
        budget=budget,
        backend=backend,
        interviewer=options.interviewer or _console(),
        registry=options.registry or default_registry(),
        steps=steps,
        base_workdir=_base_workdir(options.settings, source),
        pipeline_dir=source.resolve().parent if source is not None else None,
        steering=options.steering or Steering(),
        run_child=run_child,
    )


def services_for(
    wide: RunWide,
    record: RunRecord | None = None,
    sync_later: Callable[[Path], None] | None = None,
) -> Services:
    """The services of one run directory: ``record`` reads its run so far,
    ``sync_later`` hands files to its progress keeper (None: writers fsync)."""
    return Services(
        settings=wide.settings,
        backend=wide.backend,
        interviewer=wide.interviewer,
        run_budget=wide.budget,
        emit=wide.bus.emit,
        base_workdir=wide.base_workdir,
        pipeline_dir=wide.pipeline_dir,
        record=record if record is not None else NoRecord(),
        run_child=wide.run_child,
        steering=wide.steering,
        sync_later=sync_later,
    )


def close_wide(wide: RunWide) -> None:
    """Close what the run opened itself: the event bus (the backend is the launcher's)."""
    wide.bus.close()


def require_backend(options: RunOptions) -> CodergenBackend:
    """The model backend of the run: the launcher builds it (``launch.backend_for``)
    and closes it; the engine builds none.

    Raises:
        RunError: ``options`` carries no backend.
    """
    if options.backend is None:
        raise RunError(
            f"the run was given no model backend (--backend {options.settings.backend}): "
            "start runs with attractor.launch (or attractor.run), or pass RunOptions.backend "
            "(attractor.launch.backend_for builds the one the settings name)"
        )
    return options.backend


def _console() -> Interviewer:
    """The terminal's interviewer, for a library caller that gave none (loaded only then)."""
    from attractor.handlers.interviewer import ConsoleInterviewer

    return ConsoleInterviewer()


def _base_workdir(settings: Settings, source: Path | None) -> Path:
    base = Path(settings.workdir) if settings.workdir else Path.cwd()
    if not base.is_dir():
        raise RunError(f"working directory {base} does not exist ({settings.source('workdir')})")
    if settings.source("workdir") == f"graph attribute {WORKDIR}":
        # The pipeline chose it: it may lead only where the pipeline could read.
        roots = [Path.cwd()] + ([source.parent] if source is not None else [])
        return confine_path(base, roots, attribute=WORKDIR, node=None)
    return base.resolve()
