"""One run from start to finish, read top-down in :func:`drive_job`: set up, drive, finish.

``setup.py`` makes a new run directory, or restores one to resume; the run-wide
collaborators are built once (``wiring.py``); :func:`open_run` opens a run
directory (event log, manifest, first checkpoint) with its :class:`Run` and
services built complete; the graph is walked (``loop.py``; one node step is
``step.py``) inside one cancel scope; :func:`finish_run` writes the last
checkpoint, manifest and event. ``--timeout`` and (with ``handle_signals``)
SIGINT/SIGTERM cancel that scope, and so every node, branch and subprocess;
the run is then saved as ``timed_out``, ``interrupted`` or ``terminated`` so
that it can be resumed.
"""

from __future__ import annotations

import json
import math
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import anyio
from anyio.abc import TaskGroup, TaskStatus

from attractor.dot.graph import Graph
from attractor.dot.schema import format_duration
from attractor.engine.continuation import Continuation
from attractor.engine.eventbus import EventBus
from attractor.engine.executor import RunJob, RunOptions, RunResult
from attractor.engine.loop import WalkEnd, walk
from attractor.engine.progress import Progress
from attractor.engine.record import EngineRecord
from attractor.engine.retry import BackoffConfig
from attractor.engine.setup import RunSetup, restart_setup, resume_setup, start_setup, utc_text
from attractor.engine.state import NodeResult, Run, run_usage, save_checkpoint, stopped_row
from attractor.engine.step_budget import StepBudget, child_steps
from attractor.engine.wiring import RunWide, close_wide, require_backend, run_wide, services_for
from attractor.engine.workspace_hooks import (
    open_workspace,
    put_back_stopped_stage,
    restarted,
    summary,
    with_workspace,
)
from attractor.errors import AttractorError, RunError
from attractor.events import (
    PipelineCompleted,
    PipelineFailed,
    PipelineInterrupted,
    PipelineStarted,
    PipelineTimedOut,
)
from attractor.heap import freeze_once
from attractor.llm.types import Usage
from attractor.proc.ledger import CURRENT as CURRENT_LEDGER
from attractor.proc.ledger import ProcessLedger
from attractor.redact import CURRENT as CURRENT_REDACTOR
from attractor.redact import scrub_files
from attractor.run_status import RESUMABLE, STOP_SIGNALS, RunStatus
from attractor.settings import Settings, redactor_for, step_limit
from attractor.store.checkpoint import RUNNING, Checkpoint
from attractor.store.rundir import (
    PIPELINE_COPY,
    PROCESSES,
    discard_unstarted,
    disk_full,
    read_manifest,
    write_error,
)
from attractor.valueclass import mutable

__all__ = [
    "NodeResult",
    "RunOptions",
    "RunResult",
    "RunStatus",
    "execute",
    "resume_pipeline",
    "run_pipeline",
]


async def execute(job: RunJob, options: RunOptions) -> RunResult:
    """Run ``job`` on the executor of ``options`` (here, unless it says otherwise)."""
    return await options.executor.execute(job, options, drive_job)


async def drive_job(job: RunJob, options: RunOptions) -> RunResult:
    """Run ``job`` in this process (the local executor's ``drive``)."""
    if job.kind == "resume":
        graph = job.graph
        return await _run(_resuming(job.path, options, lambda _path: graph, job.how), options)
    return await _run(_starting(job.graph, job.path, options), options)


async def run_pipeline(graph: Graph, source_path: Path, options: RunOptions) -> RunResult:
    """Run a parsed, transformed and validated ``graph`` in a new run directory, here."""
    return await _run(_starting(graph, source_path, options), options)


async def resume_pipeline(
    run_dir: Path,
    options: RunOptions,
    graph: Graph | None = None,
    how: Continuation | None = None,
) -> RunResult:
    """Continue the run in ``run_dir`` from its checkpoint, here.

    Completed nodes do not run again; the node that was running when the run
    stopped runs again from its start. ``options.context_seed`` (``--set``)
    overrides the restored context values. ``graph`` is the run directory's
    pipeline copy when the caller has already loaded it (so it is parsed once).
    ``how`` continues a run that had ended (see :mod:`attractor.engine.continuation`).
    """
    prepare = prepare_run_graph if graph is None else (lambda _path: graph)
    return await _run(_resuming(run_dir, options, prepare, how), options)


async def _run(set_up: Callable[[], RunSetup], options: RunOptions) -> RunResult:
    """One run here, top-down: set up, drive, finish.

    ``set_up`` makes (or restores) the run directory. The run-wide collaborators
    are built once; each run directory (a ``loop_restart`` opens another) is
    opened with its :class:`Run` built complete, walked inside one cancel scope
    that ``--timeout``, signals and stop requests cancel, and finished. Whatever
    happens, the run is finished and what it opened closed, shielded.
    """
    settings = options.settings
    require_backend(options)  # before anything is written
    freeze_once()  # what the process held so far: out of the collector's walks
    none = options.workspace is not None and options.workspace.mode == "none"
    with _redacting(settings):
        setup = set_up()
        with _tidy_if_stopped(setup):
            workspace = await open_workspace(options.workspace, setup, settings)
            options = with_workspace(options, workspace)
            wide = _run_wide(setup, options)
            if workspace is not None:
                wide = replace(wide, base_workdir=workspace.workdir, workspace=workspace)
            with _process_ledger(setup.run_dir.path) as ledger:
                run = open_run(setup, wide)
                stop, end = Stop(), None
                try:
                    with anyio.CancelScope(deadline=_deadline(settings)) as scope:
                        async with anyio.create_task_group() as watchers:
                            await _watch_stops(watchers, options, scope, stop)
                            try:
                                while True:
                                    try:
                                        end = await walk(run, run.main, setup.start)
                                    except (AttractorError, OSError) as exc:
                                        end = _failed_walk(run, exc, stop)
                                    if end.restart_at is None:
                                        break
                                    setup, run = _restart(run, setup, end, wide, ledger)
                            finally:
                                watchers.cancel_scope.cancel()
                        if stop.error is not None:
                            raise stop.error
                    status = _final_status(end, stop, scope.cancelled_caught)
                    if status in RESUMABLE:
                        await put_back_stopped_stage(run)
                    result = _result(run, setup, status, end, settings.timeout)
                    result.workspace = await summary(workspace, none)
                    result.warnings += workspace.notes if workspace is not None else []
                    return result
                finally:
                    with anyio.CancelScope(shield=True):
                        if not run.finished:  # an error or an outside cancellation came first
                            await put_back_stopped_stage(run)
                            status = stop.status or RunStatus.INTERRUPTED
                            finish_run(run, status, end, settings.timeout, reason=stop.reason)
                        close_wide(wide)


def _run_wide(setup: RunSetup, options: RunOptions) -> RunWide:
    """The collaborators every run directory of the run shares, with its observers."""
    bus = options.bus or EventBus()
    for observer in options.observers:
        bus.add_observer(observer)
    return run_wide(
        options,
        setup.graph,
        options.run_budget or setup.budget,
        bus,
        setup.source_path,
        steps=options.steps or _step_budget(setup, options.settings),
        children=(run_pipeline, resume_pipeline, prepare_run_graph),
    )


def _restart(
    run: Run, setup: RunSetup, end: WalkEnd, wide: RunWide, ledger: ProcessLedger
) -> tuple[RunSetup, Run]:
    """A ``loop_restart``: finish this run directory, go on in a new one."""
    assert end.restart_at is not None
    new = restart_setup(setup, end.restart_at, wide.options.store)
    restarted(wide.workspace, new)
    _opening_checkpoint(new)  # before this directory says the run went on there
    finish_run(run, RunStatus.RESTARTED, end, None, new.run_dir.path.name)
    ledger.path = new.run_dir.path / PROCESSES
    carried = run.carried + run_usage(run)
    following = open_run(new, wide)
    following.carried = carried
    return new, following


def _opening_checkpoint(setup: RunSetup) -> None:
    """A manifest and a checkpoint at the start node in a loop_restart's new directory,
    written before the first directory is marked restarted: a run killed in between
    is one a resume of the new directory goes on with (:func:`open_run` writes both
    again at once)."""
    main = setup.main
    opening = Checkpoint(
        next_node=setup.start,
        node_visits=dict(main.visits),
        context=main.context.snapshot(),
        run_turns_used=setup.budget.used,
        run_usage=Usage().to_json(),  # this directory's own, as open_run's: none yet
    )
    setup.run_dir.write_manifest({**setup.manifest, "status": RUNNING})
    setup.run_dir.save_checkpoint(opening)


@contextmanager
def _tidy_if_stopped(setup: RunSetup) -> Iterator[None]:
    """A run that ends in an exception leaves no half-made directory, and an OSError
    becomes one line; the first directory's lock is released whatever happens."""
    try:
        yield
    except BaseException as exc:
        _stopped_early(setup, exc)
        raise
    finally:
        # finish_run released the lock of every directory it opened; this one
        # covers a run that failed before it started (the backend, the workdir).
        setup.run_dir.unlock()


@contextmanager
def _process_ledger(run_dir: Path) -> Iterator[ProcessLedger]:
    """The ledger of every process group the run starts (proc/ledger.py), current while it runs."""
    ledger = ProcessLedger(run_dir / PROCESSES)
    token = CURRENT_LEDGER.set(ledger)
    try:
        yield ledger
    finally:
        ledger.close()
        CURRENT_LEDGER.reset(token)


def _deadline(settings: Settings) -> float:
    """When ``--timeout`` cancels the run (never without one)."""
    return math.inf if settings.timeout is None else anyio.current_time() + settings.timeout


async def _watch_stops(
    watchers: TaskGroup, options: RunOptions, scope: anyio.CancelScope, stop: Stop
) -> None:
    """Signals (when the run handles them) and outside stop requests cancel ``scope``."""
    if options.handle_signals:
        await watchers.start(watch_signals, scope, stop)
    if options.stop_requests is not None:
        watchers.start_soon(_watch_requests, options.stop_requests, scope, stop)


@mutable
class Stop:
    """Why the run scope was cancelled from outside the traversal."""

    status: RunStatus | None = None
    #: What stopped it, when the status alone does not say (a full disk).
    reason: str = ""
    #: The error the run ends with instead of a result (a full disk).
    error: AttractorError | None = None


def _starting(graph: Graph, source: Path, options: RunOptions) -> Callable[[], RunSetup]:
    """How a new run is set up: a fresh run directory for ``graph``."""
    return lambda: start_setup(graph, source, options.settings, options.context_seed, options.store)


def _resuming(
    run_dir: Path,
    options: RunOptions,
    prepare: Callable[[Path], Graph],
    how: Continuation | None,
) -> Callable[[], RunSetup]:
    """How a resume is set up: the state restored from ``run_dir``'s checkpoint."""

    def set_up() -> RunSetup:
        setup = resume_setup(
            run_dir, options.settings, prepare, options.context_seed, how, store=options.store
        )
        # A command's files are scrubbed when it ends: not when the engine died under it.
        scrub_files(_command_outputs(setup.run_dir.path))
        return setup

    return set_up


def _command_outputs(run_dir: Path) -> Iterator[Path]:
    """The files commands write themselves (tool nodes, agent CLIs), scrubbed when they
    end: not when the engine died under them."""
    # Imported here: a run that resumes is the only one that asks.
    from attractor.handlers.external.runner import STDERR_FILE, STREAM_FILE

    for name in ("stdout.txt", "stderr.txt", STREAM_FILE, STDERR_FILE):
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
    """The checked graph of the pipeline file ``path`` (a child run's, a resume's).

    A run directory's copy of its pipeline names its sub-pipelines relative to
    the file the run started from (its manifest's ``source_file``).
    """
    from attractor.linter.prepare import prepare_checked

    return prepare_checked(path, include_folder=origin_folder(path))[0]


def origin_folder(path: Path) -> Path | None:
    """The folder of the file a run started from, when ``path`` is a run's copy."""
    if path.name != PIPELINE_COPY:
        return None
    try:
        source = read_manifest(path.parent).get("source_file")
    except AttractorError:
        return None
    return Path(source).parent if isinstance(source, str) and source else None


def _stopped_early(setup: RunSetup, exc: BaseException) -> None:
    """Tidy up after a run that ended in an exception; raise it as one line if it is an OSError.

    A new run stopped before its first checkpoint (a full disk, a signal)
    leaves nothing behind rather than a directory nothing can use.
    """
    if not setup.resumed:
        discard_unstarted(setup.run_dir.path)
    if isinstance(exc, OSError) and disk_full(exc):
        raise write_error(setup.run_dir.path, exc, _then(setup)) from None
    if isinstance(exc, OSError):  # one line, not a traceback
        where = f" ({exc.filename})" if exc.filename else ""
        raise RunError(f"the run stopped: {exc.strerror or exc}{where}") from None


def _step_budget(setup: RunSetup, settings: Settings) -> StepBudget:
    """The run's step budget; on resume, the steps recorded before count, its
    sub-pipelines' included (they share the budget)."""
    limit, source = step_limit(settings, len(setup.graph))
    taken = len(setup.node_results)
    if setup.resumed:
        taken += child_steps(setup.graph, setup.run_dir)
    return StepBudget(limit, taken=taken, source=source)


def _failed_walk(run: Run, exc: AttractorError | OSError, stop: Stop) -> WalkEnd:
    """A reportable error ends the run as failed instead of crashing it.

    A full disk is no failure of the pipeline: the run stops as interrupted
    (resumable once there is space) and :class:`DiskFullError` says so.
    """
    if isinstance(exc, AttractorError):
        return WalkEnd("fail", str(exc), run.main.current)
    if disk_full(exc):  # raised once out of the task group (which would wrap it)
        stop.error = write_error(run.run_dir.path, exc, _resume_hint(run.run_dir.path))
        stop.status, stop.reason = RunStatus.INTERRUPTED, str(stop.error)
    return WalkEnd("fail", f"cannot write run files: {exc}", run.main.current)


async def watch_signals(
    scope: anyio.CancelScope, stop: Stop, *, task_status: TaskStatus[None]
) -> None:
    """Cancel ``scope`` at the first stop signal, noting the status it leaves.

    The handlers found in place are put back afterwards: asyncio would leave the
    defaults, which kill the process (SIGTERM, SIGHUP) or raise wherever the loop
    is (SIGINT) while the run is still being closed.
    """
    before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    try:
        with anyio.open_signal_receiver(*STOP_SIGNALS) as received:
            task_status.started()
            async for signum in received:
                stop.status = STOP_SIGNALS[signum]
                scope.cancel()
                return
    finally:
        for signum, handler in before.items():
            if handler is not None:  # None: not set from Python, nothing to put back
                signal.signal(signum, handler)


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
    if setup.resumed or setup.run_dir.has_checkpoint():
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


# Opening and finishing one run directory (setup -> drive -> finish above).


def open_run(setup: RunSetup, wide: RunWide) -> Run:
    """Open the run directory of ``setup``: its store, progress keeper, services and
    :class:`Run`, built complete; then announce the start and write the first checkpoint."""
    options = wide.options
    store = setup.run_dir
    results_written = len(setup.node_results) if setup.resumed else 0
    progress = Progress(store, setup.main, wide.budget, results_written, setup.journal_seq)
    record = EngineRecord(setup.graph, store, setup.node_results)
    log = store.open_events()
    rows = [json.dumps(r.to_json()) + "\n" for r in setup.node_results] if setup.resumed else None
    results = store.open_results(rows)
    run = Run(
        graph=setup.graph,
        run_dir=store,
        services=services_for(wide, record, progress.sync_later),
        registry=wide.registry,
        bus=wide.bus,
        backoff=options.backoff or BackoffConfig(),
        main=setup.main,
        node_results=setup.node_results,
        manifest=setup.manifest,
        results_written=results_written,
        results_file=results,
        progress=progress,
        branches=options.executor.branches,
        usage_before=setup.usage_before,
        spent_at_open=wide.budget.spent,
        steps=wide.steps,
        start=setup.start,
        workspace=wide.workspace,
    )
    wide.bus.add_observer(log)
    run.closers += [
        lambda: wide.bus.remove_observer(log),
        log.close,
        results.close,
        progress.close,
        store.unlock,
    ]
    run.manifest["status"] = RUNNING
    if setup.resumed:
        run.manifest["resumed_at"] = time.time()
    store.write_manifest(run.manifest)
    run.emit(
        PipelineStarted(
            name=setup.graph.name,
            run_id=store.path.name,
            run_dir=str(store.path),
            resumed=setup.resumed,
            continuation=setup.continuation,
        )
    )
    save_checkpoint(run, setup.start)
    return run


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
    main = run.main
    inside = main.entered_at is not None  # else stopped between two nodes
    if stopped and inside and main.current:
        # The node in progress runs again from its start on resume: that entry
        # must not count twice against max_visits.
        main.visits[main.current] -= 1
        main.visits += Counter()  # drops the entry if it fell to zero
    unsaved: OSError | None = None
    # Between two nodes it goes on at the next one (the one before it is done, its
    # files checkpointed); stopped before its first node (a loop_restart's new
    # directory), at the node it was opened to start at.
    here = main.current if inside else main.pending
    next_node = (here or run.start) if stopped else None
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
