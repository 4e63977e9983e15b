"""One run from start to finish, read top-down: set up, drive, finish.

:func:`run_pipeline` and :func:`resume_pipeline` build a :class:`RunSetup`
(``setup.py``: a new run directory, or a checkpoint to continue), then
:func:`_drive` opens the run (event log, manifest, first checkpoint), walks the
graph (``loop.py``; one node step is ``step.py``) inside one cancel scope, and
:func:`finish_run` writes the last checkpoint, manifest and event. ``--timeout``
and (with ``handle_signals``) SIGINT/SIGTERM cancel that scope, and so every
node, branch and subprocess; the run is then saved as ``timed_out``,
``interrupted`` or ``terminated`` so that it can be resumed.
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus

from attractor.agent.run_budget import RunTurnBudget
from attractor.dot.graph import Graph
from attractor.dot.schema import format_duration
from attractor.engine.checkpoint import RUNNING
from attractor.engine.child import EngineChildRunner
from attractor.engine.continuation import Continuation
from attractor.engine.eventbus import EventBus
from attractor.engine.executor import Executor, LocalExecutor, RunJob
from attractor.engine.loop import WalkEnd, walk
from attractor.engine.progress import Progress
from attractor.engine.record import EngineRecord
from attractor.engine.retry import BackoffConfig
from attractor.engine.rundir import (
    PROCESSES,
    EventLog,
    discard_unstarted,
    disk_full,
    write_error,
)
from attractor.engine.setup import (
    RunSetup,
    restart_setup,
    resume_setup,
    start_setup,
    utc_text,
)
from attractor.engine.state import NodeResult, Run, run_usage, save_checkpoint, stopped_row
from attractor.engine.step_budget import StepBudget
from attractor.engine.workspace_hooks import (
    open_workspace,
    put_back_stopped_stage,
    restarted,
    summary,
    with_workspace_paths,
)
from attractor.errors import AttractorError, RunError
from attractor.events import (
    Event,
    PipelineCompleted,
    PipelineFailed,
    PipelineInterrupted,
    PipelineStarted,
    PipelineTimedOut,
)
from attractor.fileio import AppendFile, atomic_write_text, confine_path
from attractor.handlers.backend import CodergenBackend
from attractor.handlers.base import Services, Steering
from attractor.handlers.builtin import default_registry
from attractor.handlers.external.runner import STDERR_FILE, STREAM_FILE
from attractor.handlers.interviewer import ConsoleInterviewer, Interviewer
from attractor.handlers.registry import HandlerRegistry
from attractor.proc.ledger import CURRENT as CURRENT_LEDGER
from attractor.proc.ledger import ProcessLedger
from attractor.redact import CURRENT as CURRENT_REDACTOR
from attractor.redact import scrub_files
from attractor.run_status import RESUMABLE, RunStatus
from attractor.settings import Settings, redactor_for, step_limit
from attractor.workspace.preflight import WorkspacePlan
from attractor.workspace.workspace import Workspace

__all__ = [
    "NodeResult",
    "RunOptions",
    "RunResult",
    "RunStatus",
    "execute",
    "resume_pipeline",
    "run_pipeline",
]

_EXIT_CODES = {
    RunStatus.SUCCESS: 0,
    RunStatus.FAIL: 1,
    RunStatus.TIMED_OUT: 124,
    RunStatus.HANGUP: 129,
    RunStatus.INTERRUPTED: 130,
    RunStatus.TERMINATED: 143,
}
#: The signals that stop a run, and the status each one leaves (all resumable).
_STOP_SIGNALS: dict[signal.Signals, RunStatus] = {
    signal.SIGINT: RunStatus.INTERRUPTED,
    signal.SIGTERM: RunStatus.TERMINATED,
    signal.SIGHUP: RunStatus.HANGUP,  # the terminal or SSH session went away
}


@dataclass
class RunOptions:
    """How to run: resolved settings plus the collaborators of the run."""

    settings: Settings
    #: Who answers human gates; None means the console (stdin).
    interviewer: Interviewer | None = None
    #: Context values from ``--set KEY=VALUE``.
    context_seed: dict[str, Any] = field(default_factory=dict)
    #: The model backend (the launcher builds it: ``launch.backend_for``); None simulates.
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
    #: Where the run and its parallel branches execute (see executor.py).
    executor: Executor = field(default_factory=LocalExecutor)
    #: Returns when someone outside asks the run to stop, with the status to
    #: stop as (a Ray worker watches the run directory's stop file).
    stop_requests: Callable[[], Awaitable[RunStatus]] | None = None
    #: The run's workspace as the launcher planned it (None: none, the files are
    #: not checkpointed; see attractor.workspace).
    workspace: WorkspacePlan | None = None


@dataclass
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


async def execute(job: RunJob, options: RunOptions) -> RunResult:
    """Run ``job`` on the executor of ``options`` (here, unless it says otherwise)."""
    return await options.executor.execute(job, options, drive_job)


async def drive_job(job: RunJob, options: RunOptions) -> RunResult:
    """Run ``job`` in this process."""
    if job.kind == "resume":
        return await resume_pipeline(job.path, options, job.graph, job.how)
    return await run_pipeline(job.graph, job.path, options)


async def run_pipeline(graph: Graph, source_path: Path, options: RunOptions) -> RunResult:
    """Run a parsed, transformed and validated ``graph`` in a new run directory."""
    with _redacting(options.settings):
        setup = start_setup(graph, source_path, options.settings, options.context_seed)
        return await _drive(setup, options)


async def resume_pipeline(
    run_dir: Path,
    options: RunOptions,
    graph: Graph | None = None,
    how: Continuation | None = None,
) -> RunResult:
    """Continue the run in ``run_dir`` from its checkpoint.

    Completed nodes do not run again; the node that was running when the run
    stopped runs again from its start. ``options.context_seed`` (``--set``)
    overrides the restored context values. ``graph`` is the run directory's
    pipeline copy when the caller has already loaded it (so it is parsed once).
    ``how`` continues a run that had ended (see :mod:`attractor.engine.continuation`).
    """
    prepare = prepare_run_graph if graph is None else (lambda _path: graph)
    with _redacting(options.settings):
        setup = resume_setup(run_dir, options.settings, prepare, options.context_seed, how)
        # A command's files are scrubbed when it ends: not when the engine died under it.
        scrub_files(_command_outputs(setup.run_dir.path))
        return await _drive(setup, options)


#: The files commands write themselves (tool nodes, agent CLIs), scrubbed when they end.
_COMMAND_OUTPUTS = ("stdout.txt", "stderr.txt", STREAM_FILE, STDERR_FILE)


def _command_outputs(run_dir: Path) -> Iterator[Path]:
    for name in _COMMAND_OUTPUTS:
        yield from run_dir.rglob(name)


@contextmanager
def _redacting(settings: Settings) -> Iterator[None]:
    """Every file and event of the run is written without its secrets (attractor.redact)."""
    token = CURRENT_REDACTOR.set(redactor_for(settings))
    try:
        yield
    finally:
        CURRENT_REDACTOR.reset(token)


def prepare_run_graph(path: Path) -> Graph:
    """The checked graph of the pipeline file ``path`` (a child run's, a resume's)."""
    from attractor.linter.prepare import prepare_checked

    return prepare_checked(path)[0]


@dataclass
class Stop:
    """Why the run scope was cancelled from outside the traversal."""

    status: RunStatus | None = None
    #: What stopped it, when the status alone does not say (a full disk).
    reason: str = ""
    #: The error the run ends with instead of a result (a full disk).
    error: AttractorError | None = None


async def _drive(setup: RunSetup, options: RunOptions) -> RunResult:
    try:
        return await _drive_locked(setup, options)
    except BaseException as exc:
        # A new run stopped before its first checkpoint (a full disk, a signal)
        # leaves nothing behind rather than a directory nothing can use.
        if not setup.resumed:
            discard_unstarted(setup.run_dir.path)
        if isinstance(exc, OSError) and disk_full(exc):
            raise write_error(setup.run_dir.path, exc, _then(setup)) from None
        if isinstance(exc, OSError):  # one line, not a traceback
            where = f" ({exc.filename})" if exc.filename else ""
            raise RunError(f"the run stopped: {exc.strerror or exc}{where}") from None
        raise
    finally:
        # finish_run released the lock of every directory it opened; this one
        # covers a run that failed before it started (the backend, the workdir).
        setup.run_dir.unlock()


async def _drive_locked(setup: RunSetup, options: RunOptions) -> RunResult:
    bus = options.bus or EventBus()
    for observer in options.observers:
        bus.add_observer(observer)
    budget = options.run_budget or setup.budget
    workspace = await open_workspace(options.workspace, setup)
    options = replace(options, settings=with_workspace_paths(options.settings, workspace))
    services, owned = make_services(options, setup.graph, budget, bus, setup.source_path)
    if workspace is not None:
        services.base_workdir = workspace.workdir
    backend = services.backend
    registry = options.registry or default_registry()
    stop = Stop()
    end: WalkEnd | None = None
    steps = _step_budget(setup, options.settings)
    ledger = ProcessLedger(setup.run_dir.path / PROCESSES)
    ledger_token = CURRENT_LEDGER.set(ledger)
    run = open_run(setup, services, registry, bus, options, steps, workspace)
    services.record = EngineRecord(lambda: run)
    services.sync_later = lambda path: _sync_later(run, path)
    try:
        with anyio.CancelScope() as scope:
            if options.settings.timeout is not None:
                scope.deadline = anyio.current_time() + options.settings.timeout
            async with anyio.create_task_group() as signals:
                if options.handle_signals:
                    await signals.start(watch_signals, scope, stop)
                if options.stop_requests is not None:
                    signals.start_soon(_watch_requests, options.stop_requests, scope, stop)
                try:
                    while True:
                        end = await _guarded_walk(run, setup.start, stop)
                        if end.restart_at is None:
                            break
                        setup = restart_setup(setup, end.restart_at)
                        restarted(workspace, setup)
                        finish_run(run, RunStatus.RESTARTED, end, None, setup.run_dir.path.name)
                        ledger.path = setup.run_dir.path / PROCESSES
                        carried = run.carried + run_usage(run)
                        run = open_run(setup, services, registry, bus, options, steps, workspace)
                        run.carried = carried
                finally:
                    signals.cancel_scope.cancel()
            if stop.error is not None:
                raise stop.error
        status = _final_status(end, stop, scope.cancelled_caught)
        if status in RESUMABLE:
            await put_back_stopped_stage(run)
        result = _result(run, setup, status, end, options.settings.timeout)
        none = options.workspace is not None and options.workspace.mode == "none"
        result.workspace = await summary(workspace, none)
        if workspace is not None:
            result.warnings += workspace.notes
        return result
    finally:
        with anyio.CancelScope(shield=True):
            if not run.finished:  # an error or an outside cancellation got here first
                await put_back_stopped_stage(run)
                status = stop.status or RunStatus.INTERRUPTED
                finish_run(run, status, end, options.settings.timeout, reason=stop.reason)
            if owned:
                await backend.aclose()
            bus.close()
            ledger.close()
            CURRENT_LEDGER.reset(ledger_token)


def _step_budget(setup: RunSetup, settings: Settings) -> StepBudget:
    """The run's step budget; on resume, the steps recorded before count."""
    limit, source = step_limit(settings, len(setup.graph))
    return StepBudget(limit, taken=len(setup.node_results), source=source)


def make_services(
    options: RunOptions,
    graph: Graph,
    budget: RunTurnBudget,
    bus: EventBus,
    source: Path | None = None,
) -> tuple[Services, bool]:
    """The run-wide collaborators, and whether the run owns (and so closes) the backend.

    ``source`` is the pipeline file the run started from: its folder is one of
    the places a path the pipeline names may lead (the run's copy is not).
    """
    backend, owned = _backend(options)
    services = Services(
        settings=options.settings,
        backend=backend,
        interviewer=options.interviewer or ConsoleInterviewer(),
        run_budget=budget,
        emit=bus.emit,
        base_workdir=_base_workdir(options.settings, source),
        pipeline_dir=source.resolve().parent if source is not None else None,
        steering=options.steering or Steering(),
    )
    child_options = replace(options, backend=backend, run_budget=budget)
    services.run_child = EngineChildRunner(
        child_options, run_pipeline, resume_pipeline, prepare_run_graph
    )
    return services, owned


def _sync_later(run: Run, path: Path) -> None:
    if run.progress is not None:
        run.progress.sync_later(path)


async def _guarded_walk(run: Run, start: str, stop: Stop) -> WalkEnd:
    """Walk the graph; a reportable error ends the run as failed instead of crashing.

    A full disk is no failure of the pipeline: the run stops as interrupted
    (resumable once there is space) and :class:`DiskFullError` says so.
    """
    try:
        return await walk(run, run.main, start)
    except AttractorError as exc:
        return WalkEnd("fail", str(exc), run.main.current)
    except OSError as exc:
        if disk_full(exc):  # raised once out of the task group (which would wrap it)
            stop.error = write_error(run.run_dir.path, exc, _resume_hint(run.run_dir.path))
            stop.status, stop.reason = RunStatus.INTERRUPTED, str(stop.error)
        return WalkEnd("fail", f"cannot write run files: {exc}", run.main.current)


async def watch_signals(
    scope: anyio.CancelScope, stop: Stop, *, task_status: TaskStatus[None]
) -> None:
    """Cancel ``scope`` at the first stop signal, noting the status it leaves."""
    with anyio.open_signal_receiver(*_STOP_SIGNALS) as received:
        task_status.started()
        async for signum in received:
            stop.status = _STOP_SIGNALS[signum]
            scope.cancel()
            return


async def _watch_requests(
    requests: Callable[[], Awaitable[RunStatus]], scope: anyio.CancelScope, stop: Stop
) -> None:
    stop.status = await requests()
    scope.cancel()


def _final_status(end: WalkEnd | None, stop: Stop, cancelled: bool) -> RunStatus:
    if end is not None and end.restart_at is None:
        return RunStatus.SUCCESS if end.status == "success" else RunStatus.FAIL
    if stop.status is not None:
        return stop.status
    return RunStatus.TIMED_OUT if cancelled else RunStatus.FAIL


def _then(setup: RunSetup) -> str:
    """How to go on after a write error: resume, or start again if nothing can be resumed."""
    path = setup.run_dir.path
    if setup.resumed or setup.run_dir.checkpoint_path.exists():
        return _resume_hint(path)
    return "run the pipeline again"


def _resume_hint(path: Path) -> str:
    return f"resume it: attractor resume {path}"


def _result(
    run: Run, setup: RunSetup, status: RunStatus, end: WalkEnd | None, timeout: float | None
) -> RunResult:
    stopped = stopped_row(run, status) if status in RESUMABLE else None
    unsaved = finish_run(run, status, end, timeout)
    if unsaved is not None:  # the last checkpoint on disk still says where to go on
        raise write_error(run.run_dir.path, unsaved, _resume_hint(run.run_dir.path))
    return RunResult(
        status=status,
        run_dir=run.run_dir.path,
        failure_reason=run.failure_reason,
        current_node=run.main.current,
        node_results=[*run.node_results, *([stopped] if stopped else [])],
        usage=(run.carried + run_usage(run)).to_json(),
        timeout=timeout,
        warnings=setup.warnings + run.bus.errors,
    )


def _backend(options: RunOptions) -> tuple[CodergenBackend, bool]:
    """The codergen backend and whether this run owns (and so closes) it.

    The launcher builds the backend a run uses (``launch.backend_for``); a run
    given none simulates, when its settings say so.
    """
    if options.backend is not None:
        return options.backend, False
    if options.settings.backend != "simulate":
        raise RunError(
            f"no backend was built for --backend {options.settings.backend}: "
            "start runs with attractor.launch, or pass RunOptions.backend"
        )
    from attractor.handlers.simulate import SimulateBackend

    return SimulateBackend(), True


#: The graph attribute that may set the run's working directory.
WORKDIR = "workdir"


def _base_workdir(settings: Settings, source: Path | None) -> Path:
    base = Path(settings.workdir) if settings.workdir else Path.cwd()
    if not base.is_dir():
        raise RunError(f"working directory {base} does not exist ({settings.source('workdir')})")
    if settings.source("workdir") == f"graph attribute {WORKDIR}":
        # The pipeline chose it: it may lead only where the pipeline could read.
        roots = [Path.cwd()] + ([source.parent] if source is not None else [])
        return confine_path(base, roots, attribute=WORKDIR, node=None)
    return base.resolve()


# Opening and finishing one run directory (setup -> drive -> finish above).


def open_run(
    setup: RunSetup,
    services: Services,
    registry: HandlerRegistry,
    bus: EventBus,
    options: RunOptions,
    steps: StepBudget | None = None,
    workspace: Workspace | None = None,
) -> Run:
    """Attach the event log, announce the start and write the first checkpoint."""
    run = Run(
        graph=setup.graph,
        run_dir=setup.run_dir,
        services=services,
        registry=registry,
        bus=bus,
        backoff=options.backoff or BackoffConfig(),
        main=setup.main,
        node_results=setup.node_results,
        manifest=setup.manifest,
        executor=options.executor,
        usage_before=setup.usage_before,
        spent_at_open=services.run_budget.spent,
        steps=steps or StepBudget(),
        start=setup.start,
        workspace=workspace,
    )
    log = EventLog(setup.run_dir.events_path)
    bus.add_observer(log)
    results = _open_results(setup)
    run.results_file = results
    run.results_written = len(setup.node_results) if setup.resumed else 0
    progress = run.progress = Progress(run, setup.journal_seq)
    run.closers += [
        lambda: bus.remove_observer(log),
        log.close,
        results.close,
        progress.close,
        setup.run_dir.unlock,
    ]
    run.manifest["status"] = RUNNING
    if setup.resumed:
        run.manifest["resumed_at"] = time.time()
    setup.run_dir.write_manifest(run.manifest)
    run.emit(
        PipelineStarted(
            name=setup.graph.name,
            run_id=setup.run_dir.path.name,
            run_dir=str(setup.run_dir.path),
            resumed=setup.resumed,
            continuation=setup.continuation,
        )
    )
    save_checkpoint(run, setup.start)
    return run


def _open_results(setup: RunSetup) -> AppendFile:
    """results.jsonl, cut back to the rows the checkpoint covers when resuming."""
    path = setup.run_dir.results_path
    if setup.resumed:  # atomically: a full disk must not leave the rows cut away
        rows = [json.dumps(r.to_json()) + "\n" for r in setup.node_results]
        atomic_write_text(path, "".join(rows))
    return AppendFile(path)


def finish_run(
    run: Run,
    status: RunStatus,
    end: WalkEnd | None,
    timeout: float | None,
    restarted_into: str | None = None,
    *,
    reason: str = "",
) -> OSError | None:
    """Final checkpoint, manifest and event; closes the event log. Runs once.

    Returns the error that kept the final checkpoint or manifest from being
    written (a full disk), else None: the checkpoint written before it still
    holds, so the run can be resumed from there.
    """
    if run.finished:
        return None
    run.finished = True
    duration = time.monotonic() - run.started
    run.failure_reason = reason or _failure_reason(run, status, end, timeout)
    stopped = status in RESUMABLE
    if stopped and run.main.current:
        # The node in progress runs again from its start on resume: that entry
        # must not count twice against max_visits.
        run.main.visits[run.main.current] -= 1
        run.main.visits += Counter()  # drops the entry if it fell to zero
    unsaved: OSError | None = None
    # Stopped before its first node (a loop_restart's new directory): it continues
    # at the node it was opened to start at.
    next_node = (run.main.current or run.start) if stopped else None
    try:
        save_checkpoint(run, next_node, status, run.failure_reason)
        _update_manifest(run, status, duration, restarted_into)
    except OSError as exc:
        unsaved = exc
    finally:
        run.emit(_final_event(run, status, duration, timeout))
        for close in run.closers:
            close()
    return unsaved


def _failure_reason(run: Run, status: RunStatus, end: WalkEnd | None, timeout: float | None) -> str:
    node = run.main.current or run.start or "?"
    if status == RunStatus.TIMED_OUT:
        after = _timeout_text(run.services.settings) or format_duration(timeout or 0)
        return f"pipeline timed out after {after} while running {node}"
    if status in (RunStatus.INTERRUPTED, RunStatus.TERMINATED):
        return f"pipeline {status} while running {node}"
    if status == RunStatus.HANGUP:
        return f"pipeline stopped by SIGHUP (terminal closed) while running {node}"
    if status == RunStatus.FAIL:
        return end.reason if end is not None and end.reason else "pipeline failed"
    return ""


def _timeout_text(settings: Settings) -> str | None:
    """``--timeout`` as the user wrote it (``90s`` stays ``90s``), None when unset."""
    return settings.text("timeout") if settings.timeout is not None else None


def _update_manifest(
    run: Run, status: RunStatus, duration: float, restarted_into: str | None
) -> None:
    manifest = run.manifest
    finished = time.time()
    manifest.update(
        status=status,
        finished_at=finished,
        finished_at_utc=utc_text(finished),
        duration=round(duration, 3),
        active_seconds=round(float(manifest.get("active_seconds_before", 0.0)) + duration, 3),
        usage=run_usage(run).to_json(),
        failure_reason=run.failure_reason,
        current_node=run.main.current,
    )
    if restarted_into:
        manifest["restarted_into"] = restarted_into
    run.run_dir.write_manifest(manifest)


def _final_event(
    run: Run, status: RunStatus, duration: float, timeout: float | None
) -> PipelineCompleted | PipelineFailed | PipelineTimedOut | PipelineInterrupted:
    if status in (RunStatus.SUCCESS, RunStatus.RESTARTED):
        return PipelineCompleted(duration=duration, artifact_count=len(run.main.completed))
    if status == RunStatus.TIMED_OUT:
        return PipelineTimedOut(timeout=timeout or 0.0, node=run.main.current, duration=duration)
    if status in (RunStatus.INTERRUPTED, RunStatus.TERMINATED, RunStatus.HANGUP):
        signal = {RunStatus.INTERRUPTED: "SIGINT", RunStatus.TERMINATED: "SIGTERM"}.get(
            status, "SIGHUP"
        )
        return PipelineInterrupted(signal=signal, node=run.main.current, duration=duration)
    return PipelineFailed(error=run.failure_reason, duration=duration)
